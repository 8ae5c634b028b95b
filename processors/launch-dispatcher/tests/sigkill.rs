//! The crash test: the dispatcher runs as its own OS process against the
//! real broker and the real voice simulator, and is killed with SIGKILL
//! again and again while 1,200 launches flow through it, so kills land
//! between the `dispatching` commit and the outcome commit. The simulator
//! also fails some creates (5xx) and answers some too late (accepted, then
//! timed out), and one tenant is in shadow mode.
//!
//! Afterwards: every launch ends `accepted`, `failed` or `shadow` (one
//! final `call-launch` each, as a `read_committed` reader sees them); the
//! simulator's counters show exactly one call per dialed launch id, the one
//! the `accepted` event names; failed and shadowed launches placed none.

mod support;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use callstream_platform::Topics;
use callstream_schemas::LaunchStatus;
use callstream_sim_voice::Behaviour;
use rand::Rng;
use support::broker::*;

const LAUNCHES: u128 = 1_200;
const SHADOW_TENANT: &str = "shadowco";

struct Dispatcher {
    child: Child,
}

impl Dispatcher {
    fn start(topics: &Topics, app: &str, sim: &Sim, callbacks: &str) -> Result<Self> {
        let log = std::env::temp_dir().join(format!("{app}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        let child = Command::new(env!("CARGO_BIN_EXE_launch_dispatcher"))
            .arg("0")
            .env(
                "KAFKA_BOOTSTRAP_SERVERS",
                callstream_e2e::bootstrap_servers(),
            )
            .env("CALLSTREAM_LOG_FORMAT", "text")
            .env("CALLSTREAM_TOPIC_PREFIX", &topics.prefix)
            .env("CALLSTREAM_TOPIC_PARTITIONS", PARTITIONS.to_string())
            .env("CALLSTREAM_DISPATCH_APP_ID", app)
            .env("TWILIO_API_BASE_URL", &sim.url)
            .env(
                "TWILIO_ACCOUNT_SID",
                callstream_sim_voice::config::DEFAULT_ACCOUNT_SID,
            )
            .env(
                "TWILIO_AUTH_TOKEN",
                callstream_sim_voice::config::DEFAULT_AUTH_TOKEN,
            )
            .env("TWILIO_FROM_NUMBER", "+15550001000")
            .env("CALLSTREAM_DISPATCH_CALLBACK_BASE_URL", callbacks)
            .env("CALLSTREAM_DISPATCH_REQUEST_TIMEOUT_MS", "1000")
            .env("CALLSTREAM_DISPATCH_CONNECT_TIMEOUT_MS", "500")
            .env("CALLSTREAM_DISPATCH_SEND_DEADLINE_MS", "2000")
            .env("CALLSTREAM_DISPATCH_SETTLE_MS", "500")
            .env("CALLSTREAM_DISPATCH_RETRY_BASE_MS", "100")
            .env("CALLSTREAM_DISPATCH_RETRY_MAX_MS", "800")
            .env("CALLSTREAM_DISPATCH_MAX_ATTEMPTS", "8")
            .env("CALLSTREAM_DISPATCH_CALLS_PER_SECOND", "2000")
            .env("CALLSTREAM_RUNTIME_TRANSACTION_TIMEOUT_MS", "10000")
            .env("CALLSTREAM_RUNTIME_SESSION_TIMEOUT_MS", "6000")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting launch_dispatcher")?;
        Ok(Self { child })
    }

    /// SIGKILL: no commit, no abort, no goodbye to the group.
    fn kill(mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_between_dispatch_and_outcome_never_places_a_second_call() -> Result<()> {
    let topics = topics("ld-kill").await?;
    let app = topics.name("dispatcher");
    let sim = sim(Behaviour {
        create_error_share: 0.05,
        create_slow_share: 0.03,
        create_slow_ms: 1_500,
        ..fast()
    })
    .await?;
    let callbacks = callback_sink().await?;
    let producer = callstream_e2e::producer()?;
    let run = run_id();
    let commands: Vec<_> = (0..LAUNCHES)
        .map(|n| {
            let mut cmd = command(run, n);
            if n % 10 == 0 {
                cmd.tenant_id = SHADOW_TENANT.into();
            }
            cmd
        })
        .collect();
    // Shadow mode on for one tenant, through the control topic.
    set_shadow_for(&producer, &topics, SHADOW_TENANT, true).await?;

    let sender = {
        let (producer, topics, commands) = (producer.clone(), topics.clone(), commands.clone());
        tokio::spawn(async move {
            for chunk in commands.chunks(60) {
                for cmd in chunk {
                    send_command(&producer, &topics, cmd).await?;
                }
                tokio::time::sleep(Duration::from_millis(1_000)).await;
            }
            anyhow::Ok(())
        })
    };

    let mut dispatcher = Dispatcher::start(&topics, &app, &sim, &callbacks)?;
    let mut kills = 0;
    while !sender.is_finished() || kills < 3 {
        let wait = rand::rng().random_range(2_000..4_000);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        dispatcher.kill()?;
        kills += 1;
        dispatcher = Dispatcher::start(&topics, &app, &sim, &callbacks)?;
    }
    sender.await??;

    let mut reader = LaunchReader::new(&topics)?;
    let started = Instant::now();
    reader
        .until(Duration::from_secs(240), |o| o.finished() == commands.len())
        .await?;
    let settled_in = started.elapsed();
    // Catch anything extra that a duplicate would add.
    reader.poll(Duration::from_secs(3)).await?;
    dispatcher.kill()?;
    let outcomes = &reader.outcomes;

    let placed = sim_calls(&sim);
    let stats = sim.state.store().stats();
    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    let (mut after_crash, mut after_timeout) = (0, 0);
    for cmd in &commands {
        let id = cmd.launch_id.to_string();
        let all = &outcomes.by_launch[&cmd.launch_id];
        let finals: Vec<_> = all
            .iter()
            .filter(|l| l.status != LaunchStatus::Ambiguous)
            .collect();
        assert_eq!(finals.len(), 1, "{id}: {all:?}");
        let last = finals[0];
        *by_status.entry(last.status.to_string()).or_default() += 1;
        let calls = placed.get(&id).cloned().unwrap_or_default();
        match last.status {
            LaunchStatus::Accepted => {
                assert_eq!(calls.len(), 1, "{id} placed {calls:?}");
                assert_eq!(
                    last.provider_call_id.as_deref(),
                    Some(calls[0].as_str()),
                    "{id}"
                );
                assert_eq!(stats.calls_by_launch.get(&id), Some(&1), "{id}");
            }
            LaunchStatus::Failed | LaunchStatus::Shadow => {
                assert!(
                    calls.is_empty(),
                    "{id} {} but placed {calls:?}",
                    last.status
                )
            }
            other => panic!("{id} ended {other}"),
        }
        assert_eq!(
            last.status == LaunchStatus::Shadow,
            cmd.tenant_id == SHADOW_TENANT,
            "{id}"
        );
        for ambiguous in all.iter().filter(|l| l.status == LaunchStatus::Ambiguous) {
            match ambiguous.reason.as_deref() {
                Some("no_result") => after_crash += 1,
                Some("timeout") => after_timeout += 1,
                other => println!("ambiguous for {other:?}: {:?}", ambiguous.reason_detail),
            }
        }
    }
    assert!(
        stats.calls_by_launch.values().all(|&n| n == 1),
        "a launch id has two calls"
    );
    println!(
        "{kills} kills; finals {by_status:?}; reconciled after a crash {after_crash}, after a timeout {after_timeout}; \
         creates failed {} delayed {}; settled {settled_in:?} after the last kill",
        stats.creates_failed, stats.creates_delayed
    );
    assert!(kills >= 3);
    assert!(
        after_crash > 0,
        "no kill landed between dispatch and outcome"
    );
    assert!(after_timeout > 0, "no create timed out");
    assert!(
        by_status.get("failed").copied().unwrap_or(0) < 5,
        "{by_status:?}"
    );
    Ok(())
}

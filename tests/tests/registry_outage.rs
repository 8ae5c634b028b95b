//! The stack's schema registry stopped mid-run and started again (it stops a server of the
//! stack, so `cargo xtask test` runs it alone at the end):
//! - a writer that registered at start goes on writing the Confluent framing (cached ids);
//! - a processor goes on reading records of ids it knows, and holds (never dead-letters) a
//!   record whose schema it must fetch, until the registry answers again;
//! - a writer starting while the registry is down waits, then registers and succeeds.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _, Result};
use callstream_completion_detector::testkit::accepted_launch;
use callstream_completion_detector::{processor, spec, APP_ID};
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{produce, producer, repo_root, stack_registry_url, unique_name};
use callstream_platform::{topics, KafkaSettings, Topics};
use callstream_schema_registry::{install, RegistryClient, SchemaFetcher};
use callstream_schemas::{wire, CompletionMissing, Event, EventKind};
use rdkafka::consumer::StreamConsumer;
use rdkafka::message::Message;
use uuid::Uuid;

#[path = "next_launch/mod.rs"]
mod next_launch;

const PARTITIONS: i32 = 3;
const BEFORE: usize = 10;
const NEXT_VERSION: usize = 10;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

fn registry_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8085))
}

fn answers() -> bool {
    TcpStream::connect_timeout(&registry_addr(), Duration::from_millis(300)).is_ok()
}

/// Stops the stack's registry (SIGTERM to the pid xtask recorded) and waits until its port
/// is closed.
fn stop_registry() -> Result<()> {
    let pid_file = repo_root().join(".stack/registry/registry.pid");
    let pid = std::fs::read_to_string(&pid_file)
        .with_context(|| format!("{} (is the stack's registry ours?)", pid_file.display()))?;
    let status = std::process::Command::new("kill")
        .args(["-TERM", pid.trim()])
        .status()?;
    anyhow::ensure!(status.success(), "kill -TERM {} failed", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(60);
    while answers() {
        if Instant::now() > deadline {
            bail!("the registry still answers 60 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// Starts it again the way every developer does: `cargo xtask up`.
fn start_registry() -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["xtask", "up"])
        .current_dir(repo_root())
        .status()
        .context("running cargo xtask up")?;
    anyhow::ensure!(status.success(), "cargo xtask up failed ({status})");
    Ok(())
}

async fn read_missing(
    consumer: &StreamConsumer,
    reported: &mut HashMap<Uuid, usize>,
    wanted: impl Fn(&HashMap<Uuid, usize>) -> bool,
    limit: Duration,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    while !wanted(reported) && Instant::now() < deadline {
        if let Ok(message) = tokio::time::timeout(Duration::from_secs(1), consumer.recv()).await {
            let missing = CompletionMissing::decode(message?.payload().unwrap_or_default())?;
            *reported.entry(missing.launch_id).or_default() += 1;
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "stops the stack's schema registry: cargo xtask test runs it alone at the end"]
async fn the_registry_stops_and_nothing_is_lost_or_dead_lettered() -> Result<()> {
    let t = Topics {
        partitions: PARTITIONS,
        ..Topics::with_prefix(format!("{}-", unique_name("regout")))
    };
    callstream_platform::admin::ensure_topics(&KafkaSettings::from_env("regout-test"), &t.specs())
        .await?;
    let registry = RegistryClient::new(&stack_registry_url())?;
    // The writer of this process registers at start and caches the ids.
    let ids = install(&registry, &t, Duration::from_secs(60)).await?;
    let launch_id = ids
        .iter()
        .find(|(k, _)| *k == EventKind::CallLaunch)
        .map(|(_, id)| *id)
        .context("CallLaunch's id")?;
    // A newer writer's version, registered but never seen by this process.
    let launches_topic = t.name(topics::CALL_LAUNCHES);
    let next_json = next_launch::schema();
    let next = registry
        .register(&format!("{launches_topic}-value"), &next_json)
        .await?;

    // Today's detector, with the registry's gate.
    let app = format!("{}{APP_ID}", t.prefix);
    let config = next_launch::detector_config(&t);
    let fetcher = Arc::new(SchemaFetcher::new(registry.clone())?);
    let mut metrics = None;
    let running = Running::start(processor(config), spec(&t, &app), |c| {
        c.value_gate = Some(fetcher);
        metrics = Some(c.metrics.clone());
    });
    let metrics = metrics.context("the runtime's metrics")?;
    let consumer = reader(&t.name(topics::COMPLETION_MISSING), PARTITIONS)?;
    let producer = producer()?;

    stop_registry()?;
    println!("registry stopped");
    // A writer starting now waits for the registry.
    let other = Topics {
        partitions: PARTITIONS,
        ..Topics::with_prefix(format!("{}-", unique_name("regout-late")))
    };
    let late_writer = {
        let registry = registry.clone();
        tokio::spawn(async move { install(&registry, &other, Duration::from_secs(300)).await })
    };

    // Launches of today's schema: written with the cached id, read at once.
    let mut before = Vec::new();
    for i in 0..BEFORE {
        let id = Uuid::new_v4();
        let launch = accepted_launch(
            "t1",
            &format!("before-{i}"),
            id,
            &format!("CA{}", id.simple()),
            now_ms() - 60_000,
        );
        let bytes = launch.encode()?;
        assert_eq!(
            wire::schema_id(&bytes),
            Some(launch_id),
            "written with the cached id"
        );
        produce(&producer, &launches_topic, &format!("before-{i}"), &bytes).await?;
        before.push(id);
    }
    let mut reported = HashMap::new();
    read_missing(
        &consumer,
        &mut reported,
        |r| before.iter().all(|id| r.contains_key(id)),
        Duration::from_secs(90),
    )
    .await?;
    for id in &before {
        assert_eq!(
            reported.get(id),
            Some(&1),
            "launch {id} of today's schema, read while the registry is down"
        );
    }

    // Launches of the next version: the detector cannot read them before it has the schema.
    let next_schema = apache_avro::Schema::parse_str(&next_json)?;
    let mut held = Vec::new();
    for i in 0..NEXT_VERSION {
        let id = Uuid::new_v4();
        let launch = accepted_launch(
            "t1",
            &format!("next-{i}"),
            id,
            &format!("CA{}", id.simple()),
            now_ms() - 60_000,
        );
        let bytes = next_launch::framed(&launch, None, next, &next_schema)?;
        produce(&producer, &launches_topic, &format!("next-{i}"), &bytes).await?;
        held.push(id);
    }
    read_missing(&consumer, &mut reported, |_| false, Duration::from_secs(10)).await?;
    assert!(
        held.iter().all(|id| !reported.contains_key(id)),
        "records of an unknown schema are held while the registry is down"
    );
    assert_eq!(metrics.dead_letters.get(), 0, "and never dead-lettered");
    assert!(
        !late_writer.is_finished(),
        "the late writer waits for the registry"
    );

    start_registry()?;
    println!("registry started again");
    let late = late_writer
        .await?
        .context("the late writer registered once the registry was back")?;
    assert_eq!(late.len(), ids.len());
    read_missing(
        &consumer,
        &mut reported,
        |r| held.iter().all(|id| r.contains_key(id)),
        Duration::from_secs(120),
    )
    .await?;
    read_missing(&consumer, &mut reported, |_| false, Duration::from_secs(3)).await?;
    running.stop()?;
    for id in before.iter().chain(&held) {
        assert_eq!(
            reported.get(id),
            Some(&1),
            "launch {id}: one completion-missing"
        );
    }
    assert_eq!(metrics.dead_letters.get(), 0, "no dead letter");
    println!(
        "registry outage: {BEFORE} launches read with cached ids while it was down, {NEXT_VERSION} of a new schema held and read after it came back, a writer started during it registered after, 0 dead letters"
    );
    Ok(())
}

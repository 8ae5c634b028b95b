//! The partition hooks on the real broker: `on_assign` comes once a
//! partition's state is restored and before any of its records, and
//! `on_revoke` once it has moved to another instance of the group.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Result};
use callstream_e2e::runtime::Running;
use callstream_e2e::{create_topic, produce, producer, unique_name};
use callstream_runtime::{Context, ProcessError, Processor, ProcessorSpec, Record};

const PARTITIONS: i32 = 2;

/// What one instance's processor saw, in order: `assign p`, `revoke p`, `record p`.
type Log = Arc<Mutex<Vec<String>>>;

struct Hooked(Log);

impl Hooked {
    fn note(&self, what: String) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(what);
    }
}

impl Processor for Hooked {
    fn process(&mut self, ctx: &mut Context<'_>, _record: &Record) -> Result<(), ProcessError> {
        self.note(format!("record {}", ctx.partition()));
        Ok(())
    }

    fn on_assign(&mut self, partition: i32) {
        self.note(format!("assign {partition}"));
    }

    fn on_revoke(&mut self, partition: i32) {
        self.note(format!("revoke {partition}"));
    }
}

fn snapshot(log: &Log) -> Vec<String> {
    log.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Waits until `done` holds for the log, failing with the log after `timeout`.
async fn wait_for(log: &Log, timeout: Duration, done: impl Fn(&[String]) -> bool) -> Result<()> {
    let started = Instant::now();
    while !done(&snapshot(log)) {
        if started.elapsed() > timeout {
            bail!("timed out; the processor saw {:?}", snapshot(log));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Every record of a partition comes while it is assigned: after an
/// `assign`, and not after the `revoke` that follows it.
fn records_only_while_assigned(log: &[String]) -> bool {
    let mut assigned = std::collections::BTreeSet::new();
    log.iter().all(|entry| match entry.split_once(' ') {
        Some(("assign", p)) => assigned.insert(p.to_string()),
        Some(("revoke", p)) => assigned.remove(p),
        Some(("record", p)) => assigned.contains(p),
        _ => false,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_are_assigned_before_their_records_and_revoked_when_they_move() -> Result<()> {
    let app = unique_name("rt-hooks");
    let input = format!("{app}-in");
    create_topic(&input, PARTITIONS).await?;
    let producer = producer()?;
    for key in ["a", "b", "c", "d"] {
        produce(&producer, &input, key, b"1").await?;
    }
    let spec = ProcessorSpec::new(&app, format!("{app}-dlq")).input(&input);

    let first: Log = Arc::default();
    let one = Running::start(Hooked(first.clone()), spec.clone(), |_| {});
    let everything_assigned = |log: &[String]| {
        (0..PARTITIONS).all(|p| log.contains(&format!("assign {p}")))
            && log.iter().filter(|e| e.starts_with("record")).count() == 4
    };
    wait_for(&first, Duration::from_secs(60), everything_assigned).await?;

    // A second instance joins: one partition moves to it.
    let second: Log = Arc::default();
    let two = Running::start(Hooked(second.clone()), spec, |config| {
        config.instance_id = "1".into();
    });
    wait_for(&second, Duration::from_secs(60), |log| {
        log.iter().any(|e| e.starts_with("assign"))
    })
    .await?;
    let moved = snapshot(&second)
        .iter()
        .find_map(|e| e.strip_prefix("assign ").map(str::to_string));
    let moved = moved.unwrap_or_default();
    wait_for(&first, Duration::from_secs(30), |log| {
        log.contains(&format!("revoke {moved}"))
    })
    .await?;

    for key in ["e", "f", "g", "h"] {
        produce(&producer, &input, key, b"2").await?;
    }
    wait_for(&first, Duration::from_secs(30), |_| {
        let records = |log: &Log| {
            snapshot(log)
                .iter()
                .filter(|e| e.starts_with("record"))
                .count()
        };
        records(&first) + records(&second) >= 8
    })
    .await?;
    one.stop()?;
    two.stop()?;
    for log in [&first, &second] {
        let log = snapshot(log);
        ensure!(records_only_while_assigned(&log), "{log:?}");
    }
    Ok(())
}

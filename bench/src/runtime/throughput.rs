//! Throughput: preload N input records, then run the counting processor from
//! offset 0 and time it until all N outputs are visible to a `read_committed`
//! reader.
//!
//! The clock starts when the processor handles its first record (so group
//! join and the empty-store restore are left out, and reported apart as
//! `startup`) and stops when the reader has seen the N-th output: the commit
//! tail is inside the measurement, and a record counts only once a
//! `read_committed` consumer can see its output. The reader runs during the
//! measurement on the same machine; it costs about a microsecond of CPU per
//! record (measured with it, in `cpu`).

use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callstream_platform::KafkaSettings;
use rdkafka::consumer::BaseConsumer;
use tracing::{info, warn};

use crate::cpu::Usage;
use crate::kafka::{committed_reader, create_topics, preload, TopicKind};
use crate::runtime::instance::{Instance, Mode, Names};

/// What one throughput measurement found.
#[derive(Debug, Clone)]
pub struct Throughput {
    pub records: u64,
    /// First record handled to last output visible.
    pub seconds: f64,
    /// Processor start to first record handled (topic checks, producer
    /// init, group join, restore of the empty store).
    pub startup_seconds: f64,
    /// Outputs the reader saw, waiting a little past N for duplicates.
    pub outputs: u64,
    pub commits: u64,
    pub mean_commit_ms: Option<f64>,
    /// CPU used during the measurement.
    pub cpu: Usage,
}

impl Throughput {
    pub fn records_per_s(&self) -> f64 {
        self.records as f64 / self.seconds
    }
}

/// The workload shape.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub records: u64,
    /// Distinct keys; record `i` has key `i mod keys`.
    pub keys: u64,
    pub partitions: i32,
    /// How long to wait for the outputs before giving up.
    pub timeout: Duration,
}

/// How long to keep reading after the N-th output, to see duplicates.
const DRAIN: Duration = Duration::from_millis(500);
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Runs one measurement on fresh topics named by `names`.
pub fn measure(
    settings: &KafkaSettings,
    names: &Names,
    mode: Mode,
    load: Load,
) -> Result<Throughput> {
    create_topics(
        settings,
        &[&names.input, &names.output],
        TopicKind::Events,
        load.partitions,
    )?;
    info!(topic = %names.input, records = load.records, keys = load.keys, "preloading");
    let took = preload(settings, &names.input, load.records, |i, key, value| {
        // Writing into a Vec cannot fail.
        let _ = write!(key, "k{}", i % load.keys);
        let _ = write!(value, "{i}");
    })?;
    info!(
        seconds = took.as_secs_f64(),
        records_per_s = load.records as f64 / took.as_secs_f64(),
        "preloaded"
    );
    let reader = committed_reader(settings, &names.output, load.partitions, 100)?;

    let cpu_before = Usage::now();
    let started = Instant::now();
    let mut instance = Instance::start(settings, names, mode)?;
    let mut first: Option<Instant> = None;
    let mut seen: u64 = 0;
    let mut last_progress = Instant::now();
    let end = loop {
        instance.check()?;
        if first.is_none() && instance.metrics.records_in.get() > 0 {
            first = Some(Instant::now());
        }
        seen += read_some(&reader, Duration::from_millis(10));
        if seen >= load.records {
            break Instant::now();
        }
        if started.elapsed() > load.timeout {
            bail!(
                "only {seen} of {} outputs visible after {:?} (processor handled {})",
                load.records,
                load.timeout,
                instance.metrics.records_in.get()
            );
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            info!(
                handled = instance.metrics.records_in.get(),
                visible = seen,
                commits = instance.metrics.commits.get(),
                "running"
            );
        }
    };
    let cpu = Usage::now().since(&cpu_before);
    let drain_until = Instant::now() + DRAIN;
    while Instant::now() < drain_until {
        seen += read_some(&reader, Duration::from_millis(50));
    }
    let commits = instance.metrics.commits.get();
    let mean_commit_ms = instance.mean_commit_ms();
    instance.stop()?;
    let first = first.unwrap_or(started);
    let result = Throughput {
        records: load.records,
        seconds: end.duration_since(first).as_secs_f64(),
        startup_seconds: first.duration_since(started).as_secs_f64(),
        outputs: seen,
        commits,
        mean_commit_ms,
        cpu,
    };
    if result.outputs != result.records {
        warn!(outputs = result.outputs, records = result.records, ?mode.guarantee,
            "the reader saw a different number of outputs than inputs");
    }
    Ok(result)
}

/// Reads what is there (waiting at most `wait` for the first record) and
/// returns how many records it read.
fn read_some(reader: &BaseConsumer, wait: Duration) -> u64 {
    let mut read = 0;
    let mut timeout = wait;
    // Bounded, so the caller's clock checks still run under a flood.
    for _ in 0..10_000 {
        match reader.poll(timeout) {
            Some(Ok(_)) => read += 1,
            Some(Err(error)) => {
                warn!(%error, "reader error");
                break;
            }
            None => break,
        }
        timeout = Duration::ZERO;
    }
    read
}

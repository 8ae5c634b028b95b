//! Throughput: preload N input records, then run the counting processor from
//! offset 0 and time it until all N outputs are visible to a `read_committed`
//! reader.
//!
//! The clock starts when the processor handles its first record (so group
//! join and the empty-store restore are left out, and reported apart as
//! `startup`). By default (`--until visible`) it stops when a
//! `read_committed` reader has seen the N-th output: the commit tail is
//! inside the measurement and a record counts only once a downstream
//! consumer can see its output. That reader runs beside the processor on the
//! same two cores (about a sixth of the benchmark process's CPU, by
//! profile); `--until committed` stops the clock at the processor's own
//! commit of the N-th input instead and reads the outputs afterwards.
//! Either way every output must be visible in the end, and the count seen
//! (`outputs_visible`) shows duplicates.

use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callstream_platform::KafkaSettings;
use callstream_schemas::Event as _;
use rdkafka::consumer::BaseConsumer;
use tracing::{info, warn};

use crate::avro::call_event;
use crate::instance::{start_instance, Mode, Names, Payload};
use callstream_bench::cpu::Usage;
use callstream_bench::kafka::{committed_reader, create_topics, preload_placed, Placed, TopicKind};
use callstream_bench::processor::RunningProcessor;

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
    pub until: Until,
}

/// When the clock stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Until {
    /// When a `read_committed` reader, running during the measurement, has
    /// seen the N-th output (end to end; the reader's CPU counts against it).
    Visible,
    /// When the processor's commit of the N-th input has returned, by its
    /// own metrics; the outputs are read and counted afterwards, untimed.
    Committed,
}

/// How long to keep reading after the N-th output, to see duplicates.
const DRAIN: Duration = Duration::from_millis(500);
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Runs one measurement on fresh topics named by `names`, with records of `payload`.
pub fn measure(
    settings: &KafkaSettings,
    names: &Names,
    mode: Mode,
    load: Load,
    payload: &Payload,
) -> Result<Throughput> {
    create_topics(
        settings,
        &[&names.input, &names.output],
        TopicKind::Events,
        load.partitions,
    )?;
    info!(topic = %names.input, records = load.records, keys = load.keys, "preloading");
    let run = uuid::Uuid::new_v4().as_u64_pair().0;
    let took = preload_placed(settings, &names.input, load.records, |i, key, value| {
        // Writing into a Vec cannot fail.
        let _ = write!(key, "k{}", i % load.keys);
        match payload {
            Payload::Text => {
                let _ = write!(value, "{i}");
            }
            Payload::Avro { .. } => {
                let key = std::str::from_utf8(key).unwrap_or_default();
                value.extend_from_slice(&call_event(run, i, key, i.to_string()).encode()?);
            }
        }
        Ok(Placed::default())
    })?;
    info!(
        seconds = took.as_secs_f64(),
        records_per_s = load.records as f64 / took.as_secs_f64(),
        "preloaded"
    );
    let reader = committed_reader(settings, &names.output, load.partitions, 100)?;

    let cpu_before = Usage::now();
    let started = Instant::now();
    let mut instance = start_instance(settings, names, mode, payload)?;
    let timed = match load.until {
        Until::Visible => until_visible(&mut instance, &reader, load, started)?,
        Until::Committed => {
            // The processor's own metrics, with nothing else running beside it.
            let span = instance.until_committed(load.records, load.timeout)?;
            Timed {
                first: span.first,
                end: span.end,
                seen: 0,
            }
        }
    };
    let cpu = Usage::now().since(&cpu_before);
    // Untimed: every output must be visible (in `committed` mode the reader
    // starts only now), then a little longer, to see duplicates.
    let mut seen = timed.seen;
    let verify_until = Instant::now() + load.timeout;
    while seen < load.records && Instant::now() < verify_until {
        instance.ensure_running()?;
        seen += read_some(&reader, Duration::from_millis(50));
    }
    let drain_until = Instant::now() + DRAIN;
    while Instant::now() < drain_until {
        seen += read_some(&reader, Duration::from_millis(50));
    }
    let (first, end) = (timed.first, timed.end);
    let commits = instance.metrics().commits.get();
    let mean_commit_ms = instance.mean_commit_ms();
    instance.stop()?;
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

/// When the clock started and stopped, and how many outputs were read meanwhile.
struct Timed {
    first: Instant,
    end: Instant,
    seen: u64,
}

/// Reads the outputs while the processor runs; stops the clock at the N-th.
fn until_visible(
    instance: &mut RunningProcessor,
    reader: &BaseConsumer,
    load: Load,
    started: Instant,
) -> Result<Timed> {
    let mut first: Option<Instant> = None;
    let mut seen: u64 = 0;
    let mut last_progress = Instant::now();
    loop {
        instance.ensure_running()?;
        if first.is_none() && instance.metrics().records_in.get() > 0 {
            first = Some(Instant::now());
        }
        seen += read_some(reader, Duration::from_millis(10));
        if seen >= load.records {
            let end = Instant::now();
            let first = first.unwrap_or(started);
            return Ok(Timed { first, end, seen });
        }
        if started.elapsed() > load.timeout {
            bail!(
                "only {seen} of {} outputs visible after {:?} (processor handled {})",
                load.records,
                load.timeout,
                instance.metrics().records_in.get()
            );
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            info!(
                handled = instance.metrics().records_in.get(),
                visible = seen,
                commits = instance.metrics().commits.get(),
                "running"
            );
        }
    }
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

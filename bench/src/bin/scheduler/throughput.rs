//! Exactly-once throughput: N plan requests preloaded on `schedule-requests`
//! (keyed by tenant, as the contact processor writes them), then the
//! scheduler from offset 0, timed from its first record until the N-th
//! decision is visible on `schedule-events` to a `read_committed` reader.
//!
//! Each request costs the scheduler: an Avro decode, a job lookup, the
//! control view, the lead's window, the allocation, the grid chunk and
//! job record written to their stores, a durable timer, and an Avro
//! `allocated` event; each transaction adds changelog writes and offsets.
//! Afterwards (untimed) the run checks that nothing was refused (no record
//! on `exceptions`) and that no decision came twice.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use callstream_bench::cpu::Usage;
use callstream_bench::kafka::{committed_reader, preload};
use callstream_platform::{topics, KafkaSettings};
use callstream_schemas::Event;
use rdkafka::consumer::{BaseConsumer, Consumer};
use tracing::{info, warn};
use uuid::Uuid;

use crate::stack::{start_instance, Names, Workload};

#[derive(Debug, Clone)]
pub struct Throughput {
    pub requests: u64,
    /// First request handled to the last decision visible.
    pub seconds: f64,
    /// Instance start to its first request handled (topic checks, producer
    /// init, group join, control table, empty restore).
    pub startup_seconds: f64,
    pub commits: u64,
    pub mean_commit_ms: Option<f64>,
    pub cpu: Usage,
}

impl Throughput {
    pub fn per_s(&self) -> f64 {
        self.requests as f64 / self.seconds
    }
}

const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// How long to keep reading after the N-th decision, to see duplicates.
const DRAIN: Duration = Duration::from_millis(500);

pub fn measure(
    settings: &KafkaSettings,
    names: &Names,
    workload: &Workload,
    requests: u64,
    timeout: Duration,
) -> Result<Throughput> {
    names.create(settings, workload)?;
    let input = names.name(topics::SCHEDULE_REQUESTS);
    let base = workload.base();
    let mut encode_error = None;
    info!(topic = %input, requests, "preloading plan requests");
    let took = preload(settings, &input, requests, |i, key, value| {
        let request = workload.request(i, Uuid::from_u64_pair(1, i), base);
        key.extend_from_slice(request.tenant_id.as_bytes());
        match request.encode() {
            Ok(bytes) => value.extend_from_slice(&bytes),
            Err(error) => {
                encode_error.get_or_insert(error);
            }
        }
    })?;
    if let Some(error) = encode_error {
        return Err(error).context("encoding a plan request");
    }
    info!(seconds = took.as_secs_f64(), "preloaded");

    let partitions = names.topics.partitions;
    let decisions = names.name(topics::SCHEDULE_EVENTS);
    let reader = committed_reader(settings, &decisions, partitions, 100)?;
    let cpu_before = Usage::now();
    let started = Instant::now();
    let mut instance = start_instance(settings, names)?;
    let mut first: Option<Instant> = None;
    let mut seen: u64 = 0;
    let mut last_progress = Instant::now();
    let end = loop {
        instance.ensure_healthy()?;
        if first.is_none() && instance.metrics().records_in.get() > 0 {
            first = Some(Instant::now());
        }
        seen += read_some(&reader, Duration::from_millis(10));
        if seen >= requests {
            break Instant::now();
        }
        if started.elapsed() > timeout {
            bail!(
                "only {seen} of {requests} decisions visible after {timeout:?} \
                 (the scheduler handled {})",
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
    };
    let cpu = Usage::now().since(&cpu_before);
    let drain_until = Instant::now() + DRAIN;
    while Instant::now() < drain_until {
        seen += read_some(&reader, Duration::from_millis(50));
    }
    let commits = instance.metrics().commits.get();
    let mean_commit_ms = instance.mean_commit_ms();
    instance.stop()?;
    if seen != requests {
        warn!(
            seen,
            requests, "a different number of decisions than requests"
        );
    }
    let refused = records_in(settings, &names.name(topics::EXCEPTIONS), partitions)?;
    if refused > 0 {
        bail!(
            "{refused} requests were refused (exceptions written): the grids ran out of \
             slots; raise --tenants or --launches-per-slot"
        );
    }
    let first = first.unwrap_or(started);
    Ok(Throughput {
        requests,
        seconds: end.duration_since(first).as_secs_f64(),
        startup_seconds: first.duration_since(started).as_secs_f64(),
        commits,
        mean_commit_ms,
        cpu,
    })
}

/// Offsets written to `topic` so far. A partition no transaction wrote to
/// has none (commit markers go only to the partitions a transaction touched).
fn records_in(settings: &KafkaSettings, topic: &str, partitions: i32) -> Result<i64> {
    let consumer: BaseConsumer = settings
        .base_config()
        .create()
        .context("creating a watermark reader")?;
    let mut total = 0;
    for partition in 0..partitions {
        let (low, high) = consumer
            .fetch_watermarks(topic, partition, Duration::from_secs(10))
            .with_context(|| format!("reading the watermarks of {topic}/{partition}"))?;
        total += high - low;
    }
    Ok(total)
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

//! Exactly-once throughput: `contacts` accepted launches on `call-launches`
//! and a `completed` callback for each on `call-events` (matched by the
//! provider's call id), preloaded with record timestamps equal to their
//! event times, then the detector from offset 0, timed from its first
//! input to the commit of its last.
//!
//! Event time starts at the wall clock and advances 1 ms a contact; each
//! completion comes `completion_delay` after its launch, well inside W, so
//! every window closes on time and nothing is reported missing (the check
//! afterwards warns if something was). Each launch opens a window (state
//! write, its timer, a delivery-bucket count); each completion closes it
//! (state write, the timer moved to the closed-launch retention).

use std::time::Duration;

use anyhow::Result;
use callstream_bench::cpu::Usage;
use callstream_bench::kafka::{preload_placed, Placed};
use callstream_platform::{topics, KafkaSettings};
use rdkafka::consumer::{BaseConsumer, Consumer};
use tracing::{info, warn};
use uuid::Uuid;

use crate::records;
use crate::stack::{detector_config, start_instance, Names};

#[derive(Debug, Clone)]
pub struct Throughput {
    /// Launches plus completions.
    pub events: u64,
    pub seconds: f64,
    pub startup_seconds: f64,
    pub commits: u64,
    pub mean_commit_ms: Option<f64>,
    pub cpu: Usage,
}

impl Throughput {
    pub fn per_s(&self) -> f64 {
        self.events as f64 / self.seconds
    }
}

/// Launch ids of this phase: `(THROUGHPUT_IDS, n)`.
const THROUGHPUT_IDS: u64 = 0x7470;

pub fn measure(
    settings: &KafkaSettings,
    names: &Names,
    contacts: u64,
    completion_delay_ms: i64,
    window: (i64, i64),
    timeout: Duration,
) -> Result<Throughput> {
    names.create(settings, false)?;
    let t0 = callstream_bench::kafka::now_micros() / 1000;
    let at = |n: u64| t0 + i64::try_from(n).unwrap_or(i64::MAX);
    let contact = |n: u64| format!("c{n}");
    let id = |n: u64| Uuid::from_u64_pair(THROUGHPUT_IDS, n);
    info!(contacts, "preloading launches and completions");
    let took = preload_placed(
        settings,
        &names.name(topics::CALL_LAUNCHES),
        contacts,
        |n, key, value| {
            let name = contact(n);
            key.extend_from_slice(name.as_bytes());
            value.extend(records::launch(n, &name, id(n), at(n))?);
            Ok(Placed {
                partition: None,
                timestamp_ms: Some(at(n)),
            })
        },
    )?;
    let took = took
        + preload_placed(
            settings,
            &names.name(topics::CALL_EVENTS),
            contacts,
            |n, key, value| {
                let name = contact(n);
                let done = at(n) + completion_delay_ms;
                key.extend_from_slice(name.as_bytes());
                value.extend(records::completion(n, &name, id(n), done)?);
                Ok(Placed {
                    partition: None,
                    timestamp_ms: Some(done),
                })
            },
        )?;
    info!(seconds = took.as_secs_f64(), "preloaded");

    let events = contacts * 2;
    let cpu_before = Usage::now();
    let started = std::time::Instant::now();
    let config = detector_config(names, window.0, window.1);
    let mut instance = start_instance(settings, names, config)?;
    let span = instance.until_committed(events, timeout)?;
    let cpu = Usage::now().since(&cpu_before);
    let commits = instance.metrics().commits.get();
    let mean_commit_ms = instance.mean_commit_ms();
    instance.stop()?;
    let missing_offsets = offsets_in(
        settings,
        &names.name(topics::COMPLETION_MISSING),
        names.topics.partitions,
    )?;
    if missing_offsets > 0 {
        warn!(
            missing_offsets,
            "completion-missing was written to although every completion was sent on time"
        );
    }
    Ok(Throughput {
        events,
        seconds: span.end.duration_since(span.first).as_secs_f64(),
        startup_seconds: span.first.duration_since(started).as_secs_f64(),
        commits,
        mean_commit_ms,
        cpu,
    })
}

/// Offsets written to `topic`, records and commit markers (a partition no
/// transaction wrote to has none: markers go only where a transaction wrote).
fn offsets_in(settings: &KafkaSettings, topic: &str, partitions: i32) -> Result<i64> {
    use anyhow::Context as _;
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

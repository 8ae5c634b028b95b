//! Restore: the counts store's changelog is filled with `keys` distinct keys
//! in the runtime's own format (key = store key, value = the count as 8
//! big-endian bytes, each key in the partition its input key hashes to, by
//! the same `murmur2_random` partitioner), then a fresh instance of the app
//! starts and rebuilds the store before it handles anything.
//!
//! The rate is keys over the runtime's own restore time (its
//! `restore_seconds` metric, the seconds of the "restore finished" log line:
//! watermarks, reading every changelog partition to its end, building the
//! store). Start-up before it (topic checks, `init_transactions`, group join)
//! is reported apart, as `start_to_restored_seconds`.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callstream_platform::KafkaSettings;
use tracing::info;

use crate::instance::{start_instance, Mode, Names, Payload};
use callstream_bench::kafka::{create_topics, preload, TopicKind};
use callstream_bench::processor::sample;

#[derive(Debug, Clone, Copy)]
pub struct Restore {
    pub keys: u64,
    /// Changelog records read (the counts store, plus the internal timer
    /// store's, empty here).
    pub records: u64,
    /// The runtime's restore time, summed over restores (one per assignment).
    pub seconds: f64,
    /// Instance start to the last restored record.
    pub start_to_restored_seconds: f64,
}

impl Restore {
    pub fn keys_per_s(&self) -> f64 {
        self.keys as f64 / self.seconds
    }
}

/// After the last restore, how long nothing more may arrive before the
/// restore counts as finished (an assignment can come in more than one step).
const SETTLE: Duration = Duration::from_millis(500);

pub fn measure(
    settings: &KafkaSettings,
    names: &Names,
    mode: Mode,
    keys: u64,
    partitions: i32,
    timeout: Duration,
) -> Result<Restore> {
    create_topics(settings, &[&names.input], TopicKind::Events, partitions)?;
    let changelog = names.counts_changelog();
    create_topics(settings, &[&changelog], TopicKind::Table, partitions)?;
    info!(%changelog, keys, "filling the changelog");
    let fill = preload(settings, &changelog, keys, |i, key, value| {
        key.extend_from_slice(format!("k{i}").as_bytes());
        value.extend_from_slice(&(i % 100 + 1).to_be_bytes());
    })?;
    info!(
        seconds = fill.as_secs_f64(),
        "changelog filled; starting a fresh instance"
    );
    let started = Instant::now();
    let mut instance = start_instance(settings, names, mode, &Payload::Text)?;
    let metrics = instance.metrics().clone();
    let mut restored_at: Option<Instant> = None;
    let mut last = 0;
    let mut last_change = Instant::now();
    loop {
        instance.ensure_running()?;
        let records = metrics.restored_records.get();
        if records != last {
            last = records;
            last_change = Instant::now();
        }
        if records >= keys {
            let at = *restored_at.get_or_insert_with(Instant::now);
            let text = metrics.encode();
            let restores = sample(&text, "restore_seconds_count").unwrap_or(0.0);
            if restores >= 1.0 && last_change.elapsed() >= SETTLE {
                let result = Restore {
                    keys,
                    records,
                    seconds: sample(&text, "restore_seconds_sum").unwrap_or(f64::NAN),
                    start_to_restored_seconds: at.duration_since(started).as_secs_f64(),
                };
                info!(?result, restores, "restored");
                instance.stop()?;
                return Ok(result);
            }
        }
        if started.elapsed() > timeout {
            bail!("restored {records} of {keys} keys in {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

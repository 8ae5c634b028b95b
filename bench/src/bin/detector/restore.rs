//! Restore: the changelogs of a fresh app are filled with `windows` open
//! windows, one contact each, as the detector writes them (the contact's
//! join state from `ContactWindows::encode`, and its two contact timers in
//! the runtime's timer store, in the contact's partition), then a fresh
//! instance starts and rebuilds its state before it handles anything.
//!
//! The rate is windows over the runtime's own restore time (its
//! `restore_seconds` metric: watermarks, reading every changelog partition
//! to its end, building the stores and the timer index). Start-up before
//! it (topic checks, `init_transactions`, group join) is reported apart.
//! Launches are spread over the ten minutes before now, as in a live
//! detector's state, so their deadlines (W plus grace after acceptance,
//! 12 to 22 minutes ahead with the defaults) do not fire meanwhile.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callstream_bench::kafka::{preload_placed, Placed};
use callstream_completion_detector::CONTACTS_STORE;
use callstream_platform::KafkaSettings;
use callstream_runtime::partitioner::partition_for_key;
use callstream_runtime::spec::TIMER_STORE;
use tracing::{info, warn};
use uuid::Uuid;

use crate::records::{self, timer_key, timer_value};
use crate::stack::{detector_config, start_instance, Names};

#[derive(Debug, Clone, Copy)]
pub struct Restore {
    pub windows: u64,
    /// Changelog records read (contacts, timers).
    pub records: u64,
    /// The runtime's restore time, summed over restores (one per assignment).
    pub seconds: f64,
    /// Instance start to the last restored record.
    pub start_to_restored_seconds: f64,
    /// Timers the restored instance holds (one per window when the format is right).
    pub open_timers: i64,
}

impl Restore {
    pub fn windows_per_s(&self) -> f64 {
        self.windows as f64 / self.seconds
    }
}

/// After the last restore, how long nothing more may arrive before the
/// restore counts as finished (an assignment can come in more than one step).
const SETTLE: Duration = Duration::from_millis(500);
const RESTORE_IDS: u64 = 0x5245;

pub fn measure(
    settings: &KafkaSettings,
    names: &Names,
    windows: u64,
    window: (i64, i64),
    timeout: Duration,
) -> Result<Restore> {
    names.create(settings, true)?;
    let partitions = names.topics.partitions;
    let now = callstream_bench::kafka::now_micros() / 1000;
    // A deterministic scatter over the last ten minutes.
    let at = |n: u64| now - i64::try_from(n.wrapping_mul(7_919) % 600_000).unwrap_or(0);
    let deadline = |n: u64| at(n) + window.0 + window.1;
    let contact = |n: u64| format!("r{n}");
    info!(windows, "filling the contacts and timer changelogs");
    let took = preload_placed(
        settings,
        &names.changelog(CONTACTS_STORE),
        windows,
        |n, key, value| {
            key.extend_from_slice(contact(n).as_bytes());
            let id = Uuid::from_u64_pair(RESTORE_IDS, n);
            value.extend(records::open_window(n, id, at(n), window.0, window.1));
            Ok(Placed {
                partition: Some(partition_for_key(key.as_slice(), partitions)),
                timestamp_ms: None,
            })
        },
    )?;
    // One timer per window, on whichever clock passes its deadline first.
    let took = took
        + preload_placed(
            settings,
            &names.changelog(TIMER_STORE),
            windows,
            |i, key, value| {
                let name = contact(i);
                key.extend(timer_key(name.as_bytes()));
                value.extend_from_slice(&timer_value(deadline(i)));
                Ok(Placed {
                    partition: Some(partition_for_key(name.as_bytes(), partitions)),
                    timestamp_ms: None,
                })
            },
        )?;
    info!(
        seconds = took.as_secs_f64(),
        "changelogs filled; starting a fresh instance"
    );

    let expected = windows * 2;
    let started = Instant::now();
    let mut instance = start_instance(settings, names, detector_config(names, window.0, window.1))?;
    let metrics = instance.metrics().clone();
    let mut restored_at: Option<Instant> = None;
    let mut last = 0;
    let mut last_change = Instant::now();
    loop {
        instance.ensure_healthy()?;
        let records = metrics.restored_records.get();
        if records != last {
            last = records;
            last_change = Instant::now();
        }
        if records >= expected {
            let at = *restored_at.get_or_insert_with(Instant::now);
            let restores = instance.sample("restore_seconds_count").unwrap_or(0.0);
            if restores >= 1.0 && last_change.elapsed() >= SETTLE {
                let result = Restore {
                    windows,
                    records,
                    seconds: instance.sample("restore_seconds_sum").unwrap_or(f64::NAN),
                    start_to_restored_seconds: at.duration_since(started).as_secs_f64(),
                    open_timers: metrics.open_timers.get(),
                };
                info!(?result, restores, "restored");
                instance.stop()?;
                if result.open_timers != i64::try_from(windows).unwrap_or(i64::MAX) {
                    warn!(
                        open_timers = result.open_timers,
                        windows, "the restored instance does not hold one timer per window"
                    );
                }
                return Ok(result);
            }
        }
        if started.elapsed() > timeout {
            bail!("restored {records} of {expected} changelog records in {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

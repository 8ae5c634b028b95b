//! Restore: a fresh instance of an app whose counts store holds `keys`
//! distinct keys (the exactly-once throughput run leaves exactly that in its
//! changelog, in the runtime's own format) rebuilds the store before it
//! handles anything.
//!
//! The rate is keys over the runtime's own restore time (its
//! `restore_seconds` metric, the seconds of the "restore finished" log line:
//! watermarks, reading every changelog partition to its end, installing the
//! store). Start-up before it (topic checks, `init_transactions`, group join)
//! is reported apart, as `start_to_restored_seconds`.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callstream_platform::KafkaSettings;
use tracing::info;

use crate::runtime::instance::{Instance, Mode, Names};

#[derive(Debug, Clone, Copy)]
pub struct Restore {
    pub keys: u64,
    /// Changelog records read (the counts store, plus the stream-time
    /// entries of the internal timer store).
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
    timeout: Duration,
) -> Result<Restore> {
    let started = Instant::now();
    let mut instance = Instance::start(settings, names, mode)?;
    let metrics = instance.metrics.clone();
    let mut restored_at: Option<Instant> = None;
    let mut last = 0;
    let mut last_change = Instant::now();
    loop {
        instance.check()?;
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

/// The value of the runtime sample `callstream_runtime_<name>` in the
/// Prometheus text exposition (as a scraper would read it: the histogram's
/// sum and count are not readable otherwise outside tests).
fn sample(text: &str, name: &str) -> Option<f64> {
    let full = format!("callstream_runtime_{name}");
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(&full)?;
        // `name{labels} value` or `name value`; not a longer name with this prefix.
        let rest = match rest.strip_prefix('{') {
            Some(labelled) => &labelled[labelled.find('}')? + 1..],
            None => rest,
        };
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_read_by_exact_name() {
        let text = "# HELP x\n\
            callstream_runtime_restore_seconds_sum{app=\"a\"} 1.5\n\
            callstream_runtime_restore_seconds_count{app=\"a\"} 2\n\
            callstream_runtime_restored_records_total 7\n";
        let cases = [
            ("restore_seconds_sum", Some(1.5)),
            ("restore_seconds_count", Some(2.0)),
            ("restored_records_total", Some(7.0)),
            ("restore_seconds", None),
            ("missing", None),
        ];
        for (name, expected) in cases {
            assert_eq!(sample(text, name), expected, "{name}");
        }
    }

    #[test]
    fn runtime_metrics_expose_the_restore_histogram() {
        let metrics = callstream_runtime::RuntimeMetrics::new("app");
        metrics.restore_seconds.observe(0.25);
        metrics.restore_seconds.observe(0.5);
        let text = metrics.encode();
        assert_eq!(sample(&text, "restore_seconds_sum"), Some(0.75));
        assert_eq!(sample(&text, "restore_seconds_count"), Some(2.0));
    }
}

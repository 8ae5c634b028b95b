//! Samples each processor's consumer lag for the watch's `consumer_lag` alert: every
//! interval, for each group, the records its committed offsets are behind the high
//! watermarks, sent as a [`Signal::Lag`] to `notifier-signals` (keyed `*`, the
//! deployment's). It runs beside the notifier's runtime, in its process.
//!
//! A sample is a reading, not a fact: it is produced without a transaction, and a sample
//! lost or repeated changes nothing but the reading (the watch needs the lag to last 5
//! minutes before it raises).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use callstream_platform::topics::{self, Topics};
use callstream_platform::KafkaSettings;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use crate::watch::Signal;

/// The processors whose lag is watched by default (app ids, without the topic prefix).
/// The projections keep their offsets in Postgres, not in a group, and are watched by
/// their own metrics.
pub const DEFAULT_GROUPS: &[&str] = &[
    "contact",
    "scheduler",
    "launch-dispatcher",
    "completion-detector",
    "crm-dispatcher",
    "recovery",
    "notifier",
];

/// Starts the sampler on a thread of its own; it stops when `shutdown` is set.
pub fn spawn(
    kafka: KafkaSettings,
    topics: &Topics,
    groups: Vec<String>,
    interval: Duration,
    shutdown: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    let names: Vec<String> = topics::ALL
        .iter()
        .map(|(logical, _)| topics.name(logical))
        .collect();
    let groups: Vec<String> = groups.iter().map(|g| topics.name(g)).collect();
    let signals = topics.name(topics::NOTIFIER_SIGNALS);
    std::thread::Builder::new()
        .name("lag-sampler".into())
        .spawn(move || run(&kafka, &names, &groups, &signals, interval, &shutdown))
}

fn run(
    kafka: &KafkaSettings,
    topics: &[String],
    groups: &[String],
    signals: &str,
    interval: Duration,
    shutdown: &AtomicBool,
) {
    let producer: BaseProducer = match kafka.producer_config().create() {
        Ok(p) => p,
        Err(error) => {
            tracing::error!(%error, "lag sampler: no producer; consumer lag is not watched");
            return;
        }
    };
    let clock = callstream_platform::clock::process_clock();
    while !shutdown.load(Ordering::Relaxed) {
        for group in groups {
            match callstream_platform::admin::consumer_lag(kafka, group, topics) {
                Ok(Some(lag)) => {
                    let signal = Signal::Lag {
                        group: group.clone(),
                        lag,
                        at_ms: clock.now_ms(),
                    };
                    // A tagged enum of strings and numbers always serialises.
                    let value = serde_json::to_vec(&signal).unwrap_or_default();
                    let key = signal.tenant().to_owned();
                    if let Err((error, _)) =
                        producer.send(BaseRecord::to(signals).key(&key).payload(&value))
                    {
                        tracing::warn!(%group, %error, "lag sampler: sample not sent");
                    }
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(%group, %error, "lag sampler: lag not read"),
            }
        }
        let _ = producer.flush(Duration::from_secs(5));
        // Sleep in short steps so a shutdown is seen soon.
        let mut slept = Duration::ZERO;
        while slept < interval && !shutdown.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            slept += Duration::from_millis(200);
        }
    }
}

//! Reads every topic of the run from offset 0 with a `read_committed`
//! consumer on its own thread and folds each record into the [`Tally`].
//!
//! It is an observer: it joins no consumer group (partitions are assigned
//! explicitly) and commits nothing, so it changes nothing the pipeline sees.
//! Besides the tally it keeps the lag (records between its position and the
//! end of each partition), so the orchestrator knows when the tally has
//! caught up with what was committed.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use callstream_platform::KafkaSettings;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::{ClientContext, Message, Offset, Statistics, TopicPartitionList};

use super::tally::Tally;

/// The running reader.
pub struct Reader {
    pub tally: Arc<Mutex<Tally>>,
    lag: Arc<AtomicI64>,
    last_record_ms: Arc<AtomicI64>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    started: Instant,
}

/// Keeps the lag from librdkafka's statistics (no broker round trips): per
/// partition, the last stable offset (the end of what is committed) minus
/// the position handed to us; a partition not fetched yet counts as behind.
struct LagContext {
    lag: Arc<AtomicI64>,
}

impl ClientContext for LagContext {
    fn stats(&self, statistics: Statistics) {
        let lag = statistics
            .topics
            .values()
            .flat_map(|t| t.partitions.values())
            .filter(|p| p.partition >= 0)
            .map(|p| {
                if p.ls_offset < 0 {
                    return 1;
                }
                let at = if p.app_offset >= 0 {
                    p.app_offset
                } else {
                    p.lo_offset.max(0)
                };
                (p.ls_offset - at).max(0)
            })
            .sum();
        self.lag.store(lag, Ordering::SeqCst);
    }
}

impl ConsumerContext for LagContext {}

impl Reader {
    /// Starts reading `topics` (every partition, from the beginning);
    /// `dead_letters` is counted, not decoded.
    pub fn start(kafka: &KafkaSettings, topics: &[String], dead_letters: &str) -> Result<Self> {
        let lag = Arc::new(AtomicI64::new(i64::MAX));
        let consumer: BaseConsumer<LagContext> = kafka
            .consumer_config(&format!("callstream-demo-reader-{}", uuid::Uuid::new_v4()))
            .set("fetch.wait.max.ms", "100")
            .set("statistics.interval.ms", "1000")
            .create_with_context(LagContext { lag: lag.clone() })
            .context("creating the demo's topic reader")?;
        let metadata = consumer
            .fetch_metadata(None, Duration::from_secs(10))
            .context("reading topic metadata")?;
        let mut assignment = TopicPartitionList::new();
        for topic in metadata.topics() {
            if topics.iter().any(|t| t == topic.name()) {
                for p in topic.partitions() {
                    assignment.add_partition_offset(topic.name(), p.id(), Offset::Beginning)?;
                }
            }
        }
        consumer
            .assign(&assignment)
            .context("assigning the run's partitions")?;
        let tally = Arc::new(Mutex::new(Tally::default()));
        let last_record_ms = Arc::new(AtomicI64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let handle = {
            let (tally, last, stop) = (tally.clone(), last_record_ms.clone(), stop.clone());
            let dead_letters = dead_letters.to_owned();
            std::thread::Builder::new()
                .name("demo-reader".into())
                .spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        // Wait for one record, then take what is already fetched.
                        let mut wait = Duration::from_millis(100);
                        while let Some(Ok(message)) = consumer.poll(wait) {
                            wait = Duration::ZERO;
                            let dead = message.topic() == dead_letters;
                            if let Ok(mut t) = tally.lock() {
                                t.add(message.payload().unwrap_or_default(), dead);
                            }
                            let now =
                                i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
                            last.store(now, Ordering::SeqCst);
                            if stop.load(Ordering::SeqCst) {
                                break;
                            }
                        }
                    }
                })
                .context("starting the reader thread")?
        };
        Ok(Self {
            tally,
            lag,
            last_record_ms,
            stop,
            handle: Some(handle),
            started,
        })
    }

    /// Records committed but not read yet (as of the last measurement).
    pub fn lag(&self) -> i64 {
        self.lag.load(Ordering::SeqCst)
    }

    /// How long since the last record arrived.
    pub fn idle(&self) -> Duration {
        let last = u64::try_from(self.last_record_ms.load(Ordering::SeqCst)).unwrap_or(0);
        self.started
            .elapsed()
            .saturating_sub(Duration::from_millis(last))
    }

    /// Waits until the reader has caught up (lag 0 and idle for `quiet`), at most `limit`.
    pub async fn drain(&self, quiet: Duration, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.lag() == 0 && self.idle() >= quiet {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    }

    /// Stops the thread.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop();
    }
}

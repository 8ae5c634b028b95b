//! The live load of the latency phase, from a producer with the services'
//! own settings (`acks=all`, idempotent, `linger.ms=2`): warm-up launches
//! until the detector reports one, then the paced busy stream and the quiet
//! groups (see `latency`), each record stamped with its event time.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use callstream_bench::kafka::now_micros;
use callstream_platform::{topics, KafkaSettings};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use tracing::info;
use uuid::Uuid;

use crate::latency::{Load, BUSY_DONE, BUSY_MISSING, QUIET, WARM_UP};
use crate::records::{self, Keys};

/// What went out during the measurement.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sent {
    pub busy_launches: u64,
    pub busy_missing: u64,
    pub completions: u64,
    pub quiet: u64,
}

impl Sent {
    /// Launches plus completions.
    pub fn events(&self) -> u64 {
        self.busy_launches + self.completions + self.quiet
    }
}

/// A completion to send when it is due.
struct Due {
    at: Instant,
    n: u64,
    contact: String,
    id: Uuid,
}

pub struct Driver {
    producer: ThreadedProducer<DefaultProducerContext>,
    launches: String,
    events: String,
    partitions: i32,
    load: Load,
    ready: Arc<AtomicBool>,
}

impl Driver {
    pub fn new(
        settings: &KafkaSettings,
        names: &crate::stack::Names,
        load: Load,
        ready: Arc<AtomicBool>,
    ) -> Result<Self> {
        let producer = settings
            .producer_config()
            .create()
            .context("creating the paced producer")?;
        Ok(Self {
            producer,
            launches: names.name(topics::CALL_LAUNCHES),
            events: names.name(topics::CALL_EVENTS),
            partitions: names.topics.partitions,
            load,
            ready,
        })
    }

    fn is_quiet(&self, partition: i32) -> bool {
        partition >= self.partitions - self.load.quiet_partitions
    }

    pub fn run(self) -> Result<Sent> {
        let sent = self.drive()?;
        // Dropping a producer purges what it has not delivered yet.
        self.producer
            .flush(Duration::from_secs(30))
            .context("delivering the last records")?;
        Ok(sent)
    }

    fn drive(&self) -> Result<Sent> {
        let mut busy_keys = Keys::new("b", self.partitions);
        let mut quiet_keys = Keys::new("q", self.partitions);
        let warm_up_until = Instant::now() + Duration::from_secs(60);
        let mut n: u64 = 0;
        while !self.ready.load(Ordering::SeqCst) {
            if Instant::now() > warm_up_until {
                bail!("the detector reported nothing within a minute");
            }
            // Accepted a minute ago: reported missing as soon as it is handled.
            let contact = busy_keys.next(|p| !self.is_quiet(p));
            let at = now_ms() - 60_000;
            self.launch(n, &contact, Uuid::from_u64_pair(WARM_UP, n), at, now_ms())?;
            n += 1;
            std::thread::sleep(Duration::from_millis(200));
        }
        info!(
            rate = self.load.busy_launches_per_s,
            seconds = self.load.duration.as_secs_f64(),
            "detector ready; measuring"
        );
        let load = self.load;
        let cycle = Duration::from_millis(
            u64::try_from(load.window_ms + load.grace_ms + 1_000).unwrap_or(u64::MAX),
        );
        let delay = Duration::from_millis(u64::try_from(load.completion_delay_ms).unwrap_or(0));
        let mut sent = Sent::default();
        let mut pending: VecDeque<Due> = VecDeque::new();
        let started = Instant::now();
        let mut next_quiet = started;
        while started.elapsed() < load.duration || !pending.is_empty() {
            let now = Instant::now();
            let measuring = now.duration_since(started) < load.duration;
            let due = (now.duration_since(started).as_secs_f64() * load.busy_launches_per_s as f64)
                as u64;
            while measuring && sent.busy_launches < due {
                let b = sent.busy_launches;
                let contact = busy_keys.next(|p| !self.is_quiet(p));
                let missing = b % load.missing_every == 0;
                let kind = if missing { BUSY_MISSING } else { BUSY_DONE };
                let id = Uuid::from_u64_pair(kind, b);
                let at = now_ms();
                self.launch(b, &contact, id, at, at)?;
                sent.busy_launches += 1;
                if missing {
                    sent.busy_missing += 1;
                } else {
                    pending.push_back(Due {
                        at: now + delay,
                        n: b,
                        contact,
                        id,
                    });
                }
            }
            while pending.front().is_some_and(|d| d.at <= now) {
                if let Some(done) = pending.pop_front() {
                    let at = now_ms();
                    let value = records::completion(done.n, &done.contact, done.id, at)?;
                    self.send(&self.events, &done.contact, &value, at)?;
                    sent.completions += 1;
                }
            }
            if measuring && now >= next_quiet {
                // One group per quiet partition, all at once; then silence
                // there until a second past their deadline.
                for partition in self.partitions - load.quiet_partitions..self.partitions {
                    for _ in 0..load.quiet_group {
                        let contact = quiet_keys.next(|p| p == partition);
                        let id = Uuid::from_u64_pair(QUIET, sent.quiet);
                        let at = now_ms();
                        self.launch(sent.quiet, &contact, id, at, at)?;
                        sent.quiet += 1;
                    }
                }
                next_quiet += cycle;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(sent)
    }

    /// Sends an accepted launch that happened at `at_ms`, stamped `stamp_ms`.
    fn launch(&self, n: u64, contact: &str, id: Uuid, at_ms: i64, stamp_ms: i64) -> Result<()> {
        let value = records::launch(n, contact, id, at_ms)?;
        self.send(&self.launches, contact, &value, stamp_ms)
    }

    fn send(&self, topic: &str, key: &str, value: &[u8], timestamp_ms: i64) -> Result<()> {
        let mut record = BaseRecord::to(topic)
            .key(key)
            .payload(value)
            .timestamp(timestamp_ms);
        loop {
            match self.producer.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err((error, _)) => {
                    return Err(error).with_context(|| format!("sending to {topic}"))
                }
            }
        }
    }
}

fn now_ms() -> i64 {
    now_micros() / 1000
}

//! The Kafka side: one shared idempotent producer (`acks=all`,
//! `murmur2_random`, from the platform's settings), a produce that resolves
//! only on the broker's delivery report or a bounded deadline, and the
//! broker check behind `/readyz`.
//!
//! Guarantees: `publish` returns `Ok` only for a record the broker has
//! acknowledged. On any failure nothing is promised; the caller answers 503
//! and the sender retries with the same event id (a record that the broker
//! took after we gave up is therefore at worst a duplicate downstream
//! dedupe drops, never a loss). Nothing here blocks the async executor:
//! enqueueing is non-blocking and metadata calls run on the blocking pool.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use callstream_platform::KafkaSettings;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};

/// Why a record is not known to be durable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    /// librdkafka's queue is full (the broker has been away for a while).
    #[error("producer queue full")]
    QueueFull,
    /// No delivery report within the produce timeout.
    #[error("no delivery report within {0:?}")]
    Timeout(Duration),
    /// The broker or client refused or lost the record.
    #[error("delivery failed: {0}")]
    Failed(String),
}

impl PublishError {
    /// A short, stable reason for the client and the metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::QueueFull => "producer queue full",
            Self::Timeout(_) => "no delivery report in time",
            Self::Failed(_) => "broker refused or lost the record",
        }
    }
}

/// Where the broker put a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    pub partition: i32,
    pub offset: i64,
}

/// One record to produce.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    pub topic: &'a str,
    pub key: &'a str,
    pub payload: &'a [u8],
    /// `(name, value)` pairs for the record headers.
    pub headers: &'a [(&'a str, &'a [u8])],
}

/// The shared producer. Rebuilt in place if librdkafka reports a fatal
/// error (an idempotent producer cannot continue after one), so the gateway
/// recovers without a restart.
pub struct Publisher {
    settings: KafkaSettings,
    tuning: ProducerTuning,
    producer: RwLock<Arc<FutureProducer>>,
}

/// How the gateway's producer differs from the platform's (which keeps
/// `acks=all`, idempotence and `murmur2_random`).
#[derive(Debug, Clone, Copy)]
pub struct ProducerTuning {
    /// No delivery report within this: 503.
    pub produce_timeout: Duration,
    /// librdkafka's `linger.ms`.
    pub linger: Duration,
}

fn build(settings: &KafkaSettings, tuning: ProducerTuning) -> Result<FutureProducer, KafkaError> {
    let ms = |d: Duration, min: u128| d.as_millis().clamp(min, u128::from(u32::MAX)).to_string();
    let timeout_ms = ms(tuning.produce_timeout, 100);
    let mut config = settings.producer_config();
    // librdkafka gives up on a record when our caller does, so a record
    // answered 503 rarely lands later anyway.
    config
        .set("message.timeout.ms", &timeout_ms)
        .set("request.timeout.ms", &timeout_ms)
        .set("linger.ms", ms(tuning.linger, 0))
        // A webhook's record is ~250 bytes of ids and its batches hold a few
        // records: lz4 saves nothing there, yet every batch paid for a
        // compression context (most of librdkafka's CPU per request) and
        // the broker for decompressing it to validate.
        .set("compression.type", "none");
    config.create()
}

impl Publisher {
    pub fn new(settings: KafkaSettings, tuning: ProducerTuning) -> Result<Self, KafkaError> {
        let producer = build(&settings, tuning)?;
        Ok(Self {
            settings,
            tuning,
            producer: RwLock::new(Arc::new(producer)),
        })
    }

    fn current(&self) -> Arc<FutureProducer> {
        match self.producer.read() {
            Ok(p) => Arc::clone(&p),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Replaces `failed` with a fresh producer, unless someone already did.
    fn replace(&self, failed: &Arc<FutureProducer>) {
        let mut slot = match self.producer.write() {
            Ok(slot) => slot,
            Err(poisoned) => poisoned.into_inner(),
        };
        if !Arc::ptr_eq(&slot, failed) {
            return;
        }
        match build(&self.settings, self.tuning) {
            Ok(fresh) => {
                tracing::warn!("producer hit a fatal error; replaced it");
                *slot = Arc::new(fresh);
            }
            Err(e) => tracing::error!(error = %e, "could not rebuild the producer"),
        }
    }

    /// Produces one record and waits for its delivery report.
    pub async fn publish(&self, record: Outgoing<'_>) -> Result<Delivered, PublishError> {
        let producer = self.current();
        let headers = record.headers.iter().fold(
            OwnedHeaders::new_with_capacity(record.headers.len()),
            |h, (key, value)| {
                h.insert(Header {
                    key,
                    value: Some(*value),
                })
            },
        );
        // Stamped with business time: processors inherit record timestamps as event time,
        // and librdkafka's default (the system clock) would disagree with a scaled clock.
        let future_record = FutureRecord::to(record.topic)
            .timestamp(callstream_platform::clock::now_ms())
            .key(record.key)
            .payload(record.payload)
            .headers(headers);
        let delivery = match producer.send_result(future_record) {
            Ok(delivery) => delivery,
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                return Err(PublishError::QueueFull)
            }
            Err((e, _)) => return Err(self.failed(&producer, e)),
        };
        // A little slack over librdkafka's own message timeout, so its
        // (more precise) error normally wins.
        let deadline = self.tuning.produce_timeout + Duration::from_millis(250);
        match tokio::time::timeout(deadline, delivery).await {
            Err(_) => Err(PublishError::Timeout(self.tuning.produce_timeout)),
            Ok(Err(_canceled)) => Err(PublishError::Failed("producer dropped".into())),
            Ok(Ok(Err((e, _message)))) => Err(self.failed(&producer, e)),
            Ok(Ok(Ok(delivery))) => Ok(Delivered {
                partition: delivery.partition,
                offset: delivery.offset,
            }),
        }
    }

    fn failed(&self, producer: &Arc<FutureProducer>, e: KafkaError) -> PublishError {
        if producer.client().fatal_error().is_some() {
            self.replace(producer);
        }
        PublishError::Failed(e.to_string())
    }

    /// Whether the broker answers a metadata request for `topics` within
    /// `timeout` and every partition has a leader. Runs on the blocking pool.
    pub async fn broker_ready(
        &self,
        topics: Arc<[String]>,
        timeout: Duration,
    ) -> Result<(), String> {
        let producer = self.current();
        let check = tokio::task::spawn_blocking(move || {
            for topic in topics.iter() {
                let metadata = producer
                    .client()
                    .fetch_metadata(Some(topic), timeout)
                    .map_err(|e| format!("metadata: {e}"))?;
                let Some(t) = metadata.topics().first() else {
                    return Err(format!("topic {topic} missing"));
                };
                if let Some(e) = t.error() {
                    return Err(format!("topic {topic}: {e:?}"));
                }
                if t.partitions().is_empty() || t.partitions().iter().any(|p| p.leader() < 0) {
                    return Err(format!("topic {topic} has partitions without a leader"));
                }
            }
            Ok(())
        });
        check
            .await
            .map_err(|e| format!("readiness check panicked: {e}"))?
    }

    /// Waits for every queued record to be delivered (or `timeout`), on the
    /// blocking pool. Called once at shutdown.
    pub async fn flush(&self, timeout: Duration) -> Result<(), String> {
        let producer = self.current();
        tokio::task::spawn_blocking(move || producer.flush(timeout))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    }
}

/// Caches the readiness answer briefly, so probes cannot hammer the
/// broker, and lets only one check run at a time.
pub struct Readiness {
    ttl: Duration,
    timeout: Duration,
    topics: Arc<[String]>,
    last: tokio::sync::Mutex<Option<(Instant, Result<(), String>)>>,
}

impl Readiness {
    pub fn new(topics: Vec<String>, ttl: Duration, timeout: Duration) -> Self {
        Self {
            ttl,
            timeout,
            topics: topics.into(),
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// The cached answer if fresh, else a new check.
    pub async fn check(&self, publisher: &Publisher) -> Result<(), String> {
        // Holding the lock across the check makes concurrent probes share it.
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = last.as_ref() {
            if at.elapsed() < self.ttl {
                return answer.clone();
            }
        }
        let answer = publisher
            .broker_ready(Arc::clone(&self.topics), self.timeout)
            .await;
        *last = Some((Instant::now(), answer.clone()));
        answer
    }
}

//! Commands onto Kafka: one idempotent producer (`acks=all`, `murmur2_random`), and a
//! send that resolves only on the broker's acknowledgement or a bounded deadline. Records
//! that must go together (a control change and its history, a replayed dead letter and its
//! audit event) go through a transactional producer instead, in one transaction (see
//! [`Publisher::send_together`]).
//!
//! Guarantees: an action answers 202 only for a command the broker has; on any failure it
//! answers 503 and nothing is promised (a command the broker took after the deadline is
//! still a valid command, with its own id, and shows in the commands view).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use callstream_platform::KafkaSettings;
use callstream_schemas::AnyEvent;
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{
    BaseRecord, DefaultProducerContext, FutureProducer, FutureRecord, Producer, ThreadedProducer,
};
use uuid::Uuid;

use crate::error::ApiError;

type TransactionalProducer = ThreadedProducer<DefaultProducerContext>;

/// A record ready to go into a transaction.
pub struct Prepared {
    pub topic: String,
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
    pub headers: OwnedHeaders,
}

impl Prepared {
    /// `event`, keyed by `key`, with its headers and a fresh trace context.
    pub fn event(topic: String, key: &str, event: &AnyEvent) -> Result<Self, ApiError> {
        Ok(Self {
            topic,
            key: key.as_bytes().to_vec(),
            payload: encode(event)?,
            headers: headers_of(event),
        })
    }
}

/// The shared producers.
pub struct Publisher {
    producer: FutureProducer,
    timeout: Duration,
    settings: KafkaSettings,
    /// For records that go together (a control change and its history, a replay and its
    /// audit): made at the first such action (rare), and made again after a failed
    /// transaction, whose producer may be unusable.
    transactional: Arc<Mutex<Option<TransactionalProducer>>>,
}

impl Publisher {
    pub fn new(settings: &KafkaSettings, timeout: Duration) -> Result<Self, KafkaError> {
        let ms = timeout
            .as_millis()
            .clamp(100, u128::from(u32::MAX))
            .to_string();
        let producer = settings
            .producer_config()
            .set("message.timeout.ms", &ms)
            .create()?;
        Ok(Self {
            producer,
            timeout,
            settings: settings.clone(),
            transactional: Arc::new(Mutex::new(None)),
        })
    }

    /// Sends a control change to `control_topic` and to its history (`control-history`,
    /// never compacted) in one transaction: the change takes effect and stays on the audit
    /// trail, or neither.
    pub async fn send_control(
        &self,
        control_topic: &str,
        key: &str,
        event: &AnyEvent,
    ) -> Result<(), ApiError> {
        let payload = encode(event)?;
        let headers = headers_of(event);
        let records = [
            control_topic.to_owned(),
            callstream_platform::topics::history_of(control_topic),
        ]
        .into_iter()
        .map(|topic| Prepared {
            topic,
            key: key.as_bytes().to_vec(),
            payload: payload.clone(),
            headers: headers.clone(),
        })
        .collect();
        self.send_together(records, event.envelope().event_id).await
    }

    /// Sends `records` in one transaction: all of them, or none (503). One transaction at
    /// a time (the producer is behind a lock); these are rare admin and operator actions.
    pub async fn send_together(&self, records: Vec<Prepared>, id: Uuid) -> Result<(), ApiError> {
        let (settings, slot, timeout) = (
            self.settings.clone(),
            self.transactional.clone(),
            self.timeout,
        );
        let sent = tokio::task::spawn_blocking(move || -> Result<(), KafkaError> {
            let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                let id = format!("callstream-operator-api-tx-{}", Uuid::new_v4());
                let producer: TransactionalProducer =
                    settings.transactional_producer_config(&id).create()?;
                producer.init_transactions(timeout)?;
                *slot = Some(producer);
            }
            let Some(producer) = slot.as_ref() else {
                return Err(KafkaError::Canceled);
            };
            let result = producer.begin_transaction().and_then(|()| {
                for r in &records {
                    let record = BaseRecord::to(&r.topic)
                        .timestamp(callstream_platform::clock::now_ms())
                        .key(r.key.as_slice())
                        .payload(r.payload.as_slice())
                        .headers(r.headers.clone());
                    producer.send(record).map_err(|(error, _)| error)?;
                }
                producer.commit_transaction(timeout)
            });
            if result.is_err() {
                let _ = producer.abort_transaction(timeout);
                // A fresh producer for the next transaction.
                *slot = None;
            }
            result
        })
        .await;
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => {
                tracing::warn!(%error, %id, "transaction not committed");
                Err(ApiError::Unavailable("kafka did not take the records"))
            }
            Err(error) => {
                tracing::error!(%error, "transaction task failed");
                Err(ApiError::Internal)
            }
        }
    }

    /// Sends `event` keyed by `key` and waits for the broker's acknowledgement.
    pub async fn send(&self, topic: &str, key: &str, event: &AnyEvent) -> Result<(), ApiError> {
        let payload = encode(event)?;
        let headers = headers_of(event);
        // Business time, as every producer of callstream stamps its records.
        let record = FutureRecord::to(topic)
            .timestamp(callstream_platform::clock::now_ms())
            .key(key)
            .payload(&payload)
            .headers(headers);
        match self.producer.send(record, self.timeout).await {
            Ok(_) => Ok(()),
            Err((error, _)) => {
                tracing::warn!(%error, topic, event_id = %event.envelope().event_id, "command not acknowledged");
                Err(ApiError::Unavailable(
                    "kafka did not acknowledge the command",
                ))
            }
        }
    }

    /// Whether the broker answers a metadata request.
    pub async fn ready(&self) -> bool {
        let producer = self.producer.clone();
        tokio::task::spawn_blocking(move || {
            producer
                .client()
                .fetch_metadata(None, Duration::from_millis(500))
                .is_ok()
        })
        .await
        .unwrap_or(false)
    }

    /// Waits for queued records to be sent.
    pub fn flush(&self, timeout: Duration) {
        if let Err(error) = self.producer.flush(timeout) {
            tracing::warn!(%error, "producer flush incomplete");
        }
    }
}

fn encode(event: &AnyEvent) -> Result<Vec<u8>, ApiError> {
    event.encode().map_err(|error| {
        tracing::error!(%error, "command does not fit its schema");
        ApiError::Internal
    })
}

/// The event's own headers and a fresh trace context.
fn headers_of(event: &AnyEvent) -> OwnedHeaders {
    let mut headers = OwnedHeaders::new();
    for (name, value) in event.kafka_headers() {
        headers = headers.insert(Header {
            key: name,
            value: Some(value.as_bytes()),
        });
    }
    let traceparent = traceparent();
    headers.insert(Header {
        key: callstream_schemas::headers::TRACEPARENT,
        value: Some(traceparent.as_bytes()),
    })
}

/// A fresh W3C trace context: each action starts a trace.
fn traceparent() -> String {
    let trace = Uuid::new_v4().simple().to_string();
    let span = &Uuid::new_v4().simple().to_string()[..16];
    format!("00-{trace}-{span}-01")
}

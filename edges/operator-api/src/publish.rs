//! Commands onto Kafka: one idempotent producer (`acks=all`, `murmur2_random`), and a
//! send that resolves only on the broker's acknowledgement or a bounded deadline.
//!
//! Guarantees: an action answers 202 only for a command the broker has; on any failure it
//! answers 503 and nothing is promised (a command the broker took after the deadline is
//! still a valid command, with its own id, and shows in the commands view).

use std::time::Duration;

use callstream_platform::KafkaSettings;
use callstream_schemas::AnyEvent;
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use uuid::Uuid;

use crate::error::ApiError;

/// The shared producer.
pub struct Publisher {
    producer: FutureProducer,
    timeout: Duration,
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
        Ok(Self { producer, timeout })
    }

    /// Sends `event` keyed by `key` and waits for the broker's acknowledgement.
    pub async fn send(&self, topic: &str, key: &str, event: &AnyEvent) -> Result<(), ApiError> {
        let payload = event.encode().map_err(|error| {
            tracing::error!(%error, "command does not fit its schema");
            ApiError::Internal
        })?;
        let mut headers = OwnedHeaders::new();
        for (name, value) in event.kafka_headers() {
            headers = headers.insert(Header {
                key: name,
                value: Some(value.as_bytes()),
            });
        }
        let traceparent = traceparent();
        headers = headers.insert(Header {
            key: callstream_schemas::headers::TRACEPARENT,
            value: Some(traceparent.as_bytes()),
        });
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

/// A fresh W3C trace context: each action starts a trace.
fn traceparent() -> String {
    let trace = Uuid::new_v4().simple().to_string();
    let span = &Uuid::new_v4().simple().to_string()[..16];
    format!("00-{trace}-{span}-01")
}

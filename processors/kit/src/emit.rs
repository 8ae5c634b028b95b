//! An event as the record a processor emits: the Avro value, the event
//! headers (`event-type`, `schema-fingerprint`, causation and correlation)
//! and the `event-id` header, keyed by the given key.
//!
//! Guarantee: every processor writes an event the same way, so a consumer
//! reading any topic finds the same headers. An event that does not fit its
//! own schema is a bug in the code that built it; the helpers say what to do
//! with it (refuse the input, or log and skip), never panic.

use callstream_runtime::{header, Output, ProcessError};
use callstream_schemas::{EncodeError, Event, Timestamp};

/// `event` as a record of `topic` keyed by `key`.
pub fn output<E: Event>(topic: &str, key: &str, event: &E) -> Result<Output, EncodeError> {
    let mut output = Output::new(topic, key.as_bytes().to_vec(), event.encode()?);
    for (name, value) in event.kafka_headers() {
        output = output.header(name, value);
    }
    Ok(output.header(header::EVENT_ID, event.envelope().event_id.to_string()))
}

/// [`output`], with an event that does not encode as the input's failure:
/// the input goes to the dead letters with the reason rather than being lost.
pub fn output_or_refuse<E: Event>(
    topic: &str,
    key: &str,
    event: &E,
) -> Result<Output, ProcessError> {
    output(topic, key, event)
        .map_err(|e| ProcessError::Invalid(format!("cannot encode {}: {e}", E::name())))
}

/// [`output`], with an event that does not encode logged and skipped,
/// rather than taking the partition down (for outputs no input is to blame for).
pub fn output_or_log<E: Event>(topic: &str, key: &str, event: &E) -> Option<Output> {
    match output(topic, key, event) {
        Ok(output) => Some(output),
        Err(error) => {
            tracing::error!(event_type = E::name(), %error, "event does not encode; skipped");
            None
        }
    }
}

/// Milliseconds since the epoch as an event time; out-of-range values clamp to the epoch.
pub fn timestamp(ms: i64) -> Timestamp {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

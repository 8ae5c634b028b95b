//! Kafka header names and values for events, without a Kafka client dependency: producers
//! attach [`event_headers`] plus `traceparent`; consumers can route on `event-type` without
//! decoding the value.
//!
//! The values are UTF-8 text so console consumers print them (`--property print.headers=true`).

use crate::{Envelope, EventKind};

/// Full Avro record name of the value, for example `io.callstream.events.CallEvent`.
pub const EVENT_TYPE: &str = "event-type";
/// 16 lowercase hex digits of the writer schema's fingerprint (as in the value's header).
pub const SCHEMA_FINGERPRINT: &str = "schema-fingerprint";
/// W3C trace context of the producing span.
pub const TRACEPARENT: &str = "traceparent";
/// The event's `causation_id`, when it has one.
pub const CAUSATION_ID: &str = "causation-id";
/// The event's `correlation_id`, when it has one.
pub const CORRELATION_ID: &str = "correlation-id";

/// The headers every event carries, except `traceparent`, which belongs to the caller's span:
/// event type, schema fingerprint, and the causation and correlation ids when set.
pub fn event_headers(kind: EventKind, envelope: &Envelope<'_>) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        (EVENT_TYPE, kind.name().to_owned()),
        (SCHEMA_FINGERPRINT, kind.fingerprint().to_string()),
    ];
    if let Some(id) = envelope.causation_id {
        headers.push((CAUSATION_ID, id.to_string()));
    }
    if let Some(id) = envelope.correlation_id {
        headers.push((CORRELATION_ID, id.to_string()));
    }
    headers
}

/// The event type an `event-type` header value names.
pub fn kind_of(event_type: &[u8]) -> Option<EventKind> {
    std::str::from_utf8(event_type)
        .ok()
        .and_then(EventKind::from_name)
}

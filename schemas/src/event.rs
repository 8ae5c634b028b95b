//! The `Event` trait every event type implements: its schema, name and fingerprint, its
//! envelope, and single-object encoding and decoding.

use std::fmt;

use apache_avro::Schema;
use serde::{de::DeserializeOwned, Serialize};
use uuid::Uuid;

use crate::{codec, types::Timestamp, AnyEvent, DecodeError, EncodeError, EventKind, Fingerprint};

/// The fields every event has, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub event_id: Uuid,
    pub tenant_id: &'a str,
    pub occurred_at: Timestamp,
    pub causation_id: Option<Uuid>,
    pub correlation_id: Option<Uuid>,
}

/// An event type: a Rust struct mirroring one `.avsc` record.
pub trait Event:
    Serialize + DeserializeOwned + Clone + fmt::Debug + PartialEq + Send + Sync + 'static
{
    /// Which event type this is.
    const KIND: EventKind;

    /// The envelope fields.
    fn envelope(&self) -> Envelope<'_>;

    /// Wraps the event for code that handles any type.
    fn into_any(self) -> AnyEvent;

    /// The current schema, parsed from the `.avsc` file.
    fn schema() -> &'static Schema {
        Self::KIND.schema()
    }

    /// Full Avro name, the `event-type` header value (`io.callstream.events.CallEvent`).
    fn name() -> &'static str {
        Self::KIND.name()
    }

    /// Fingerprint of the current schema, as written in the header.
    fn fingerprint() -> Fingerprint {
        Self::KIND.fingerprint()
    }

    /// The Kafka headers for this event (`event-type`, `schema-fingerprint`, and the
    /// causation and correlation ids when set); the producer adds `traceparent`.
    fn kafka_headers(&self) -> Vec<(&'static str, String)> {
        crate::headers::event_headers(Self::KIND, &self.envelope())
    }

    /// Avro single-object encoding: `0xC3 0x01`, the 8-byte fingerprint, the binary body.
    fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        codec::encode(self)
    }

    /// Decodes single-object bytes written with the current schema or any frozen version of
    /// it. Never panics; bytes of another event type are [`DecodeError::WrongType`].
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        codec::decode(bytes)
    }
}

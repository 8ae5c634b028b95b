//! Turning drafts into record values: Avro single-object encoding of the
//! `schemas` crate's `CallEvent` and `ContactCommand`, behind a small trait
//! so the router does not depend on how values are encoded.

use crate::event::{CallEventDraft, LaunchRequestDraft};

/// One encoded value and what the record headers say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The record value.
    pub payload: Vec<u8>,
    /// The `event-type` header: the schema's record name.
    pub event_type: &'static str,
    /// The `schema-fingerprint` header: the schema's CRC-64-AVRO (Rabin)
    /// fingerprint, as 16 lowercase hex digits.
    pub fingerprint: String,
}

/// An event that does not fit its schema: a bug, never the caller's fault.
#[derive(Debug, thiserror::Error)]
#[error("encoding {event_type}: {message}")]
pub struct CodecError {
    pub event_type: &'static str,
    pub message: String,
}

/// Encodes the two kinds of value the gateway produces.
pub trait EventCodec: Send + Sync + 'static {
    fn call_event(&self, event: &CallEventDraft) -> Result<Encoded, CodecError>;
    fn launch_request(&self, request: &LaunchRequestDraft) -> Result<Encoded, CodecError>;
}

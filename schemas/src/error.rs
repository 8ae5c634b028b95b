//! Typed errors of encoding and decoding.
//!
//! None of these is retriable but [`DecodeError::UnknownSchemaId`]: the same bytes (or the same
//! value) fail the same way every time.
//! A consumer should route a record that fails to decode to an exception or dead-letter path,
//! never retry it in a loop. Encode errors mean the Rust type and its `.avsc` file disagree,
//! which the crate's tests rule out; they are errors rather than panics all the same.

use crate::Fingerprint;

/// Why bytes could not be decoded into an event.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Fewer bytes than the header, or the body ends before its schema says it does.
    #[error("truncated input: {0}")]
    Truncated(&'static str),
    /// Not Avro single-object encoding: the first two bytes are not `0xC3 0x01`.
    #[error("bad magic bytes {found:02x?}: not Avro single-object encoding (0xC3 0x01)")]
    BadMagic { found: [u8; 2] },
    /// A well-formed header naming a schema this build does not know (a newer writer, another
    /// system's schema, or corruption).
    #[error("unknown schema fingerprint {0}")]
    UnknownFingerprint(Fingerprint),
    /// Confluent-framed bytes whose schema id this process has not learned yet: fetch the
    /// schema from the registry and [`learn`](crate::wire::learn) it, then decode again (the
    /// one decode error that is not the record's fault).
    #[error("schema id {0} is not known yet (fetch it from the schema registry)")]
    UnknownSchemaId(u32),
    /// The fingerprint belongs to another event type than the one asked for.
    #[error("expected a {expected} but the header names a {found}")]
    WrongType {
        expected: &'static str,
        found: &'static str,
    },
    /// The body does not decode with the schema its header names.
    #[error("body of a {event_type} does not match its schema: {detail}")]
    BodyMismatch {
        event_type: &'static str,
        detail: String,
    },
    /// The body decoded but bytes were left over: the single-object body is the whole rest.
    #[error("{count} bytes after the end of a {event_type} body")]
    TrailingBytes {
        event_type: &'static str,
        count: usize,
    },
    /// Data written with an older version of the schema cannot be read by the current one.
    /// The evolution tests exist to make this impossible for frozen versions.
    #[error("a {event_type} written with an older schema cannot be resolved to the current one: {source}")]
    Resolution {
        event_type: &'static str,
        #[source]
        source: Box<apache_avro::Error>,
    },
    /// Valid Avro that the Rust type cannot hold (for example a timestamp outside chrono's
    /// range).
    #[error("a {event_type} decoded but does not fit its Rust type: {source}")]
    Mapping {
        event_type: &'static str,
        #[source]
        source: Box<apache_avro::Error>,
    },
}

/// Why an event could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The value does not fit its schema (the Rust type and the `.avsc` file disagree).
    #[error("a {event_type} does not fit its schema: {detail}")]
    SchemaMismatch {
        event_type: &'static str,
        detail: String,
    },
}

//! callstream's event schemas: one Avro record per event type, defined in `schemas/*.avsc`
//! (the single source of truth), with Rust types mirroring them and Avro single-object
//! encoding, so any Avro reader (apache-avro, Java's `BinaryMessageDecoder`, ...) can decode
//! every topic.
//!
//! Guarantees:
//! - [`Event::encode`] writes `0xC3 0x01`, the spec CRC-64-AVRO fingerprint of the schema's
//!   canonical form (little-endian), and the binary body; or, once a schema registry's ids are
//!   installed ([`wire::use_confluent_ids`]), the Confluent wire format (`0x00`, the 4-byte
//!   schema id, the same body). Both framings are always read.
//! - [`Event::decode`] and [`decode_any`] never panic; every failure is a [`DecodeError`].
//! - Data written with any frozen version in `schemas/history/` decodes into the current type
//!   (the evolution tests check each current schema can read all of them).
//!
//! ```
//! use callstream_schemas::{decode_any, AnyEvent, Event, EventKind};
//! # use callstream_schemas::types::*;
//! # let event = AuditEvent {
//! #     event_id: uuid::Uuid::nil(), tenant_id: "t1".into(),
//! #     occurred_at: chrono::DateTime::from_timestamp_millis(0).unwrap(),
//! #     causation_id: None, correlation_id: None, actor: Actor::system("recovery"),
//! #     action: "recovery.recovered".into(), subject_type: "launch".into(),
//! #     subject_id: "l1".into(), contact_id: None, command_id: None,
//! #     result: AuditResult::Applied, reason: None, detail: None,
//! # };
//! let bytes = event.encode()?;
//! assert_eq!(AuditEvent::decode(&bytes)?, event);
//! assert_eq!(decode_any(&bytes)?.kind(), EventKind::AuditEvent);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Lets unit tests share the integration tests' value generator, which names the crate.
#[cfg(test)]
extern crate self as callstream_schemas;

mod codec;
mod decode;
mod encode;
mod error;
mod event;
mod fingerprint;
pub mod headers;
mod outcome;
mod registry;
mod scan;
mod serde_util;
pub mod types;
pub mod varint;
pub mod wire;

pub use codec::{decode_any, decode_value, header, split_header, HEADER_LEN, MAGIC};
pub use error::{DecodeError, EncodeError};
pub use event::{Envelope, Event};
pub use fingerprint::{canonical_form, fingerprint_of, rabin, CanonicalFormError, Fingerprint};
pub use registry::{AnyEvent, EventKind, SchemaInfo};
pub use types::*;

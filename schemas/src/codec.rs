//! Avro single-object encoding (`0xC3 0x01` + 8-byte little-endian CRC-64-AVRO fingerprint +
//! binary body), as the specification defines it and apache-avro and Java's
//! `BinaryMessageDecoder` read it.
//!
//! Guarantees: decoding never panics and returns a typed [`DecodeError`] for any input; the
//! body must be exactly what the schema describes (no bytes short, none left over); an older
//! frozen writer schema is resolved into the current one.

use std::io::{self, Read};

use apache_avro::{to_value, types::Value};

use crate::{
    registry::{self, any_from_value, Registry, Writer, REGISTRY},
    scan::{self, ScanError},
    wire, AnyEvent, DecodeError, EncodeError, Event, EventKind, Fingerprint,
};

/// The two marker bytes of single-object encoding, version 1.
pub const MAGIC: [u8; 2] = [0xC3, 0x01];
/// Marker plus fingerprint.
pub const HEADER_LEN: usize = 10;

/// The single-object header for a fingerprint.
pub fn header(fingerprint: Fingerprint) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..2].copy_from_slice(&MAGIC);
    h[2..].copy_from_slice(&fingerprint.0);
    h
}

/// Splits framed bytes into the writer schema's fingerprint and the body, checking only the
/// header: single-object bytes carry the fingerprint, Confluent-framed ones a schema id that
/// must be known (see [`crate::wire`]).
pub fn split_header(bytes: &[u8]) -> Result<(Fingerprint, &[u8]), DecodeError> {
    if bytes.first() == Some(&wire::CONFLUENT_MAGIC) {
        let id = wire::schema_id(bytes).ok_or(DecodeError::Truncated(
            "shorter than the 5-byte Confluent header",
        ))?;
        let fingerprint = match wire::fingerprint_of_id(id) {
            Some(fingerprint) => fingerprint,
            // New to this process: the registry, if one is installed, says what it is.
            None if wire::resolve(id) == wire::Resolution::Known => {
                wire::fingerprint_of_id(id).ok_or(DecodeError::UnknownSchemaId(id))?
            }
            None => return Err(DecodeError::UnknownSchemaId(id)),
        };
        return Ok((fingerprint, &bytes[wire::CONFLUENT_HEADER_LEN..]));
    }
    let magic_seen = &bytes[..bytes.len().min(2)];
    if magic_seen != &MAGIC[..magic_seen.len()] {
        let mut found = [0u8; 2];
        found[..magic_seen.len()].copy_from_slice(magic_seen);
        return Err(DecodeError::BadMagic { found });
    }
    if bytes.len() < HEADER_LEN {
        return Err(DecodeError::Truncated("shorter than the 10-byte header"));
    }
    let mut fp = [0u8; 8];
    fp.copy_from_slice(&bytes[2..HEADER_LEN]);
    Ok((Fingerprint(fp), &bytes[HEADER_LEN..]))
}

pub(crate) fn encode<E: Event>(event: &E) -> Result<Vec<u8>, EncodeError> {
    match encode_direct(event) {
        Some(bytes) => Ok(bytes),
        // The Value route writes the same bytes, or says what does not fit.
        None => encode_via_value(event),
    }
}

/// The fast route (see `crate::encode::direct`); `None` when it cannot take this value.
pub(crate) fn encode_direct<E: Event>(event: &E) -> Option<Vec<u8>> {
    let info = E::KIND.info();
    let mut out = Vec::with_capacity(256);
    wire::write_header(E::KIND, &mut out);
    crate::encode::direct::to_body(event, &info.schema, &info.names, &mut out).ok()?;
    Some(out)
}

/// `to_value`, then the one-pass encoder.
pub(crate) fn encode_via_value<E: Event>(event: &E) -> Result<Vec<u8>, EncodeError> {
    let info = E::KIND.info();
    let mismatch = |detail: String| EncodeError::SchemaMismatch {
        event_type: E::name(),
        detail,
    };
    let value = to_value(event).map_err(|e| mismatch(e.to_string()))?;
    let mut out = Vec::with_capacity(256);
    wire::write_header(E::KIND, &mut out);
    crate::encode::encode(&value, &info.schema, &info.names, &mut out).map_err(mismatch)?;
    Ok(out)
}

pub(crate) fn decode<E: Event>(bytes: &[u8]) -> Result<E, DecodeError> {
    if let Some(event) = decode_direct(&REGISTRY, bytes, E::KIND) {
        return Ok(event);
    }
    let (kind, value) = decode_value(bytes)?;
    if kind != E::KIND {
        return Err(DecodeError::WrongType {
            expected: E::name(),
            found: kind.name(),
        });
    }
    apache_avro::from_value(&value).map_err(|source| DecodeError::Mapping {
        event_type: E::name(),
        source: Box::new(source),
    })
}

/// Decodes single-object bytes of any event type, choosing the schema by fingerprint.
pub fn decode_any(bytes: &[u8]) -> Result<AnyEvent, DecodeError> {
    if let Some(event) = any_direct(bytes) {
        return Ok(event);
    }
    let (kind, value) = decode_value(bytes)?;
    any_from_value(kind, &value).map_err(|source| DecodeError::Mapping {
        event_type: kind.name(),
        source: Box::new(source),
    })
}

/// The fast route (see `crate::decode`): bytes written with the current schema of `kind`,
/// decoded straight into its type. `None` sends the caller the Value route, which also gives
/// the typed error.
pub(crate) fn decode_direct<E: serde::de::DeserializeOwned>(
    registry: &Registry,
    bytes: &[u8],
    kind: EventKind,
) -> Option<E> {
    let (fingerprint, body) = split_header(bytes).ok()?;
    let (found, Writer::Current(_)) = registry.writer(fingerprint)? else {
        return None;
    };
    if found != kind {
        return None;
    }
    let info = &registry.current[kind as usize];
    // The scan keeps its guarantee: no allocation out of proportion to the input.
    scan::check(&info.schema, &info.names, body).ok()?;
    crate::decode::from_body(&info.schema, &info.names, body)
}

fn any_direct(bytes: &[u8]) -> Option<AnyEvent> {
    let (fingerprint, _) = split_header(bytes).ok()?;
    let (kind, _) = REGISTRY.writer(fingerprint)?;
    registry::any_direct(bytes, kind)
}

/// Decodes single-object bytes into an Avro value of the current schema of their event type
/// (for generic consumers such as the projections' timeline, and for tests).
pub fn decode_value(bytes: &[u8]) -> Result<(EventKind, Value), DecodeError> {
    decode_value_in(&REGISTRY, bytes)
}

fn decode_value_in(registry: &Registry, bytes: &[u8]) -> Result<(EventKind, Value), DecodeError> {
    let (fingerprint, body) = split_header(bytes)?;
    let (kind, writer) = registry
        .writer(fingerprint)
        .ok_or(DecodeError::UnknownFingerprint(fingerprint))?;
    let event_type = kind.name();
    let writer_info = registry.writer_schema(writer);
    // Structure first, without allocating: see `scan` for why apache-avro alone is not enough.
    scan::check(&writer_info.schema, &writer_info.names, body).map_err(|e| match e {
        ScanError::Truncated => DecodeError::Truncated("body ends before its schema does"),
        ScanError::Trailing(count) => DecodeError::TrailingBytes { event_type, count },
        ScanError::Invalid(detail) => DecodeError::BodyMismatch { event_type, detail },
    })?;
    let mut reader = BodyReader {
        rest: body,
        ran_out: false,
    };
    // The header is the one the reader expects (bytes with apache-avro's fingerprint variant
    // carry another), so it is given, not read from the input.
    let expected = header(writer_info.fingerprint);
    let decoded = writer_info
        .reader
        .0
        .read_value(&mut (&expected[..]).chain(&mut reader));
    // apache-avro turns some short reads into values (a truncated string becomes null), so
    // running out of input is checked on the reader, not only on the error.
    if reader.ran_out {
        return Err(DecodeError::Truncated("body ends before its schema does"));
    }
    let value = decoded.map_err(|source| DecodeError::BodyMismatch {
        event_type,
        detail: source.to_string(),
    })?;
    if !reader.rest.is_empty() {
        return Err(DecodeError::TrailingBytes {
            event_type,
            count: reader.rest.len(),
        });
    }
    let value = match writer {
        Writer::Current(_) => value,
        Writer::Frozen(_) | Writer::Learned(_) => value
            .resolve(&registry.current[kind as usize].schema)
            .map_err(|source| DecodeError::Resolution {
                event_type,
                source: Box::new(source),
            })?,
    };
    Ok((kind, value))
}

/// A reader over the body that remembers whether the decoder asked for more than there was.
struct BodyReader<'a> {
    rest: &'a [u8],
    ran_out: bool,
}

impl Read for BodyReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !buf.is_empty() && self.rest.is_empty() {
            self.ran_out = true;
        }
        self.rest.read(buf)
    }
}

#[cfg(test)]
mod tests {
    //! The frozen-writer path, with synthetic older versions (the real history has only v1).

    use super::*;
    use apache_avro::to_avro_datum;

    use crate::{registry::FrozenFile, types::CallEvent};

    /// The current call_event schema without some fields, as an "older version".
    fn call_event_without(fields: &[&str]) -> &'static str {
        let mut json: serde_json::Value =
            serde_json::from_str(EventKind::CallEvent.schema_json()).expect("json");
        json["fields"]
            .as_array_mut()
            .expect("fields")
            .retain(|f| !fields.contains(&f["name"].as_str().unwrap_or_default()));
        Box::leak(json.to_string().into_boxed_str())
    }

    fn registry_with(json: &'static str) -> Registry {
        Registry::build(&[FrozenFile {
            stem: "call_event",
            version: 0,
            json,
        }])
    }

    fn sample_value(schema: &apache_avro::Schema) -> Value {
        // A CallEvent as a generic record of the old schema: encode a real event and read it
        // back with the old schema's field list.
        let event = CallEvent {
            event_id: uuid::Uuid::from_u128(7),
            tenant_id: "t1".into(),
            occurred_at: chrono::DateTime::from_timestamp_millis(1_700_000_000_000)
                .expect("in range"),
            causation_id: None,
            correlation_id: Some(uuid::Uuid::from_u128(8)),
            provider: "twilio".into(),
            integration_id: Some("i1".into()),
            provider_event_id: "CA1:completed:3".into(),
            call_id: "CA1".into(),
            contact_id: "c1".into(),
            launch_id: None,
            campaign_id: None,
            source: crate::types::CallEventSource::Live,
            provider_status: "completed".into(),
            outcome: crate::types::CallOutcome::Answered,
            answered_by: Some("human".into()),
            duration_seconds: Some(42),
            sequence_number: Some(3),
            provider_error: None,
            reported_time_zone: None,
            received_at: chrono::DateTime::from_timestamp_millis(1_700_000_000_500)
                .expect("in range"),
            analysis: None,
        };
        let full = to_value(&event)
            .and_then(|v| v.resolve(EventKind::CallEvent.schema()))
            .expect("resolves");
        let Value::Record(fields) = full else {
            panic!("record")
        };
        let apache_avro::Schema::Record(old) = schema else {
            panic!("record schema")
        };
        let keep: Vec<&str> = old.fields.iter().map(|f| f.name.as_str()).collect();
        Value::Record(
            fields
                .into_iter()
                .filter(|(n, _)| keep.contains(&n.as_str()))
                .collect(),
        )
    }

    #[test]
    fn data_from_an_older_version_resolves_into_the_current_type() {
        // Dropping optional fields (with defaults) is how an older version looks.
        let old_json = call_event_without(&["analysis", "provider_error", "reported_time_zone"]);
        let registry = registry_with(old_json);
        let old = &registry.frozen[0];
        assert_ne!(old.fingerprint, EventKind::CallEvent.fingerprint());

        let mut bytes = header(old.fingerprint).to_vec();
        bytes.extend(to_avro_datum(&old.schema, sample_value(&old.schema)).expect("old writes"));
        let (kind, value) = decode_value_in(&registry, &bytes).expect("old data decodes");
        assert_eq!(kind, EventKind::CallEvent);
        assert!(value.validate(EventKind::CallEvent.schema()));
        let event: CallEvent = apache_avro::from_value(&value).expect("maps");
        assert_eq!(event.call_id, "CA1");
        assert_eq!(event.analysis, None, "the default of the added field");

        // The live registry does not know that fingerprint.
        assert!(matches!(
            decode_value(&bytes),
            Err(DecodeError::UnknownFingerprint(_))
        ));
    }

    #[test]
    fn an_older_version_missing_a_required_field_is_a_resolution_error() {
        // call_id has no default in the current schema: data without it cannot be read.
        let old_json = call_event_without(&["call_id"]);
        let registry = registry_with(old_json);
        let old = &registry.frozen[0];
        let mut bytes = header(old.fingerprint).to_vec();
        bytes.extend(to_avro_datum(&old.schema, sample_value(&old.schema)).expect("old writes"));
        let err = decode_value_in(&registry, &bytes).expect_err("cannot resolve");
        assert!(matches!(err, DecodeError::Resolution { .. }), "{err:?}");
    }
}

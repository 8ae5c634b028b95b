//! The Confluent wire format (`0x00` + big-endian schema id + body): written once ids are
//! installed, read for known ids, a newer writer's schema learned and resolved, and the
//! single-object framing still read. Its own test binary: installing ids is once per process.

mod support;

use apache_avro::types::Value;
use callstream_schemas::wire::{self, Framing, LearnError};
use callstream_schemas::{decode_any, decode_value, DecodeError, EventKind};
use support::{sample, written_by};

/// Ids as a registry would hand them out: any 32-bit number, not in kind order.
fn id_of(kind: EventKind) -> u32 {
    70_000 + 13 * kind as u32
}

fn framed(id: u32, body: &[u8]) -> Vec<u8> {
    let mut bytes = vec![wire::CONFLUENT_MAGIC];
    bytes.extend_from_slice(&id.to_be_bytes());
    bytes.extend_from_slice(body);
    bytes
}

/// `kind`'s current schema with one more field, optional with a default: the next version a
/// rolling upgrade brings.
fn with_added_field(kind: EventKind) -> String {
    let mut json: serde_json::Value = serde_json::from_str(kind.schema_json()).expect("json");
    json["fields"].as_array_mut().expect("fields").push(
        serde_json::json!({"name": "added_later", "type": ["null", "string"], "default": null}),
    );
    json.to_string()
}

fn record_fields(value: &Value) -> &[(String, Value)] {
    match value {
        Value::Record(fields) => fields,
        other => panic!("not a record: {other:?}"),
    }
}

// One test: the steps share the process's one installation of ids.
#[test]
fn confluent_framing_is_written_read_learned_and_resolved() {
    // Before ids are installed: single-object, and a Confluent id is unknown, not garbage.
    assert_eq!(wire::framing(), Framing::SingleObject);
    let single = decode_any(&written_by(
        EventKind::CallEvent.schema(),
        EventKind::CallEvent.fingerprint(),
        sample(EventKind::CallEvent),
    ))
    .expect("single-object decodes")
    .encode()
    .expect("encodes");
    assert_eq!(&single[..2], &[0xC3, 0x01]);
    let body = &single[10..];
    let unknown = framed(id_of(EventKind::CallEvent), body);
    assert!(matches!(
        decode_any(&unknown),
        Err(DecodeError::UnknownSchemaId(id)) if id == id_of(EventKind::CallEvent)
    ));
    assert_eq!(wire::schema_id(&unknown), Some(id_of(EventKind::CallEvent)));
    assert!(matches!(
        decode_any(&[0, 0, 1]),
        Err(DecodeError::Truncated(_))
    ));

    // Installed: every kind writes `0x00` + its id + the same body, and reads back.
    let ids: Vec<(EventKind, u32)> = EventKind::ALL.iter().map(|&k| (k, id_of(k))).collect();
    assert!(wire::use_confluent_ids(&ids));
    assert!(
        !wire::use_confluent_ids(&ids),
        "installing twice is refused"
    );
    assert_eq!(wire::framing(), Framing::Confluent);
    for &kind in EventKind::ALL {
        let value = sample(kind);
        let old = written_by(kind.schema(), kind.fingerprint(), value.clone());
        let event = decode_any(&old).expect("single-object bytes still decode");
        let bytes = event.encode().expect("encodes");
        assert_eq!(bytes[0], 0, "{kind:?}");
        assert_eq!(wire::schema_id(&bytes), Some(id_of(kind)), "{kind:?}");
        assert_eq!(&bytes[5..], &old[10..], "{kind:?}: the same Avro body");
        assert_eq!(decode_any(&bytes).expect("decodes"), event, "{kind:?}");
        assert_eq!(decode_value(&bytes).expect("decodes").1, value, "{kind:?}");
    }

    // A newer writer's schema (a field added with a default), under an id this build never
    // saw: unknown until learned, then read with this build's schema, the new field dropped.
    let kind = EventKind::ContactCommand;
    let newer = with_added_field(kind);
    let newer_schema = apache_avro::Schema::parse_str(&newer).expect("parses");
    let mut fields = record_fields(&sample(kind)).to_vec();
    fields.push((
        "added_later".into(),
        Value::Union(1, Box::new(Value::String("from v2".into()))),
    ));
    let body = apache_avro::to_avro_datum(&newer_schema, Value::Record(fields)).expect("fits");
    let bytes = framed(9_001, &body);
    assert!(!wire::knows_id(9_001));
    assert!(matches!(
        decode_any(&bytes),
        Err(DecodeError::UnknownSchemaId(9_001))
    ));
    assert_eq!(wire::learn(9_001, &newer).expect("learns"), kind);
    assert!(wire::knows_id(9_001));
    let (decoded_kind, value) = decode_value(&bytes).expect("resolves");
    assert_eq!(decoded_kind, kind);
    assert_eq!(
        value,
        sample(kind),
        "the added field is dropped, the rest equal"
    );
    assert_eq!(decode_any(&bytes).expect("typed").kind(), kind);

    // A registry id for this build's own schema text maps to it directly.
    assert_eq!(
        wire::learn(9_002, kind.schema_json()).expect("learns"),
        kind
    );
    let own = framed(
        9_002,
        &bytes_body(
            &decode_any(&bytes)
                .expect("typed")
                .encode()
                .expect("encodes"),
        ),
    );
    assert_eq!(decode_any(&own).expect("decodes").kind(), kind);

    // What cannot be learned, and says why.
    let mut incompatible: serde_json::Value =
        serde_json::from_str(kind.schema_json()).expect("json");
    incompatible["fields"]
        .as_array_mut()
        .expect("fields")
        .retain(|f| f["name"] != "contact_id");
    assert!(matches!(
        wire::learn(9_003, &incompatible.to_string()),
        Err(LearnError::Incompatible { id: 9_003, .. })
    ));
    let foreign = r#"{"type":"record","name":"Other","namespace":"com.example","fields":[]}"#;
    assert!(matches!(
        wire::learn(9_004, foreign),
        Err(LearnError::NotOurs { id: 9_004, .. })
    ));
    assert!(matches!(
        wire::learn(9_005, "{not json"),
        Err(LearnError::Invalid { id: 9_005, .. })
    ));
    assert!(!wire::knows_id(9_003) && !wire::knows_id(9_004) && !wire::knows_id(9_005));

    // With a resolver installed (a registry's client), decoding fetches what it does not know.
    let resolvable = with_added_field(EventKind::CallLaunch);
    let served = resolvable.clone();
    assert!(wire::set_resolver(Box::new(move |id| match id {
        9_100 => Ok(served.clone()),
        _ => Err(wire::ResolveFailure {
            detail: "connection refused".into(),
            transient: true,
        }),
    })));
    let launch = EventKind::CallLaunch;
    let mut fields = record_fields(&sample(launch)).to_vec();
    fields.push(("added_later".into(), Value::Union(0, Box::new(Value::Null))));
    let newer_schema = apache_avro::Schema::parse_str(&resolvable).expect("parses");
    let body = apache_avro::to_avro_datum(&newer_schema, Value::Record(fields)).expect("fits");
    assert_eq!(
        decode_value(&framed(9_100, &body))
            .expect("fetched and resolved")
            .1,
        sample(launch)
    );
    assert!(matches!(
        decode_any(&framed(9_101, &body)),
        Err(DecodeError::UnknownSchemaId(9_101))
    ));
    assert_eq!(wire::resolve(9_101), wire::Resolution::Unavailable);
    assert_eq!(wire::resolve(9_100), wire::Resolution::Known);
}

/// The body of bytes in this process's framing (Confluent, once installed).
fn bytes_body(bytes: &[u8]) -> Vec<u8> {
    bytes[wire::CONFLUENT_HEADER_LEN..].to_vec()
}

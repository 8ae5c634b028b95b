//! Decoding never panics: garbage, truncated, foreign and mislabelled bytes all return typed
//! errors.

mod support;

use callstream_schemas::{
    decode_any, header, types::*, DecodeError, Event, EventKind, Fingerprint, HEADER_LEN,
};
use proptest::prelude::*;
use support::{sample, value_of_kind, written_by};

fn valid(kind: EventKind) -> Vec<u8> {
    written_by(kind.schema(), kind.fingerprint(), sample(kind))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Arbitrary bytes: an error, never a panic (a random 8-byte fingerprint is unknown).
    #[test]
    fn arbitrary_bytes_are_rejected(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(decode_any(&bytes).is_err());
        prop_assert!(CallEvent::decode(&bytes).is_err());
    }

    /// A valid header of a real schema followed by garbage: never a panic. Rarely garbage is a
    /// valid body; then it must re-encode like any event.
    #[test]
    fn garbage_after_a_known_header_never_panics(
        kind in proptest::sample::select(EventKind::ALL.to_vec()),
        body in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut bytes = header(kind.fingerprint()).to_vec();
        bytes.extend_from_slice(&body);
        match decode_any(&bytes) {
            Ok(event) => prop_assert!(event.encode().is_ok()),
            Err(DecodeError::UnknownFingerprint(_) | DecodeError::BadMagic { .. }) => {
                prop_assert!(false, "the header was valid")
            }
            Err(_) => {}
        }
    }

    /// Every proper prefix of a valid encoding is an error: `Truncated` past the magic bytes.
    #[test]
    fn every_truncation_is_an_error((kind, value) in value_of_kind(), cut in any::<prop::sample::Index>()) {
        let bytes = written_by(kind.schema(), kind.fingerprint(), value);
        let len = cut.index(bytes.len());
        let err = decode_any(&bytes[..len]).expect_err("a prefix must not decode");
        prop_assert!(matches!(err, DecodeError::Truncated(_)), "cut at {len}: {err:?}");
    }

    /// Flipping bytes in a valid body: never a panic.
    #[test]
    fn corrupted_bodies_never_panic(
        (kind, value) in value_of_kind(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = written_by(kind.schema(), kind.fingerprint(), value);
        for (at, byte) in flips {
            let i = HEADER_LEN + at.index(bytes.len() - HEADER_LEN);
            bytes[i] ^= byte | 1;
        }
        if let Ok(event) = decode_any(&bytes) {
            prop_assert!(event.encode().is_ok());
        }
    }
}

#[test]
fn malformed_inputs_give_the_error_that_names_the_problem() {
    let good = valid(EventKind::CallLaunch);
    let unknown = Fingerprint([1, 2, 3, 4, 5, 6, 7, 8]);
    let mut unknown_fp = header(unknown).to_vec();
    unknown_fp.extend_from_slice(&good[HEADER_LEN..]);
    let mut trailing = good.clone();
    trailing.push(0);
    let mut bad_magic = good.clone();
    bad_magic[1] = 0x02;

    type Expect = fn(&DecodeError) -> bool;
    let cases: Vec<(&str, Vec<u8>, Expect)> = vec![
        ("empty", vec![], |e| matches!(e, DecodeError::Truncated(_))),
        ("magic only", vec![0xC3, 0x01], |e| {
            matches!(e, DecodeError::Truncated(_))
        }),
        ("first magic byte only", vec![0xC3], |e| {
            matches!(e, DecodeError::Truncated(_))
        }),
        ("json", br#"{"event_id":"x"}"#.to_vec(), |e| {
            matches!(
                e,
                DecodeError::BadMagic {
                    found: [b'{', b'"']
                }
            )
        }),
        ("wrong version byte", bad_magic, |e| {
            matches!(
                e,
                DecodeError::BadMagic {
                    found: [0xC3, 0x02]
                }
            )
        }),
        (
            "unknown fingerprint",
            unknown_fp,
            |e| matches!(e, DecodeError::UnknownFingerprint(fp) if fp.0 == [1, 2, 3, 4, 5, 6, 7, 8]),
        ),
        ("header without body", good[..HEADER_LEN].to_vec(), |e| {
            matches!(e, DecodeError::Truncated(_))
        }),
        ("trailing byte", trailing, |e| {
            matches!(e, DecodeError::TrailingBytes { count: 1, .. })
        }),
    ];
    for (name, bytes, expected) in cases {
        let err = decode_any(&bytes).expect_err(name);
        assert!(expected(&err), "{name}: got {err:?}");
    }
}

#[test]
fn typed_decode_of_another_type_is_wrong_type() {
    let bytes = valid(EventKind::CallLaunch);
    let err = CallEvent::decode(&bytes).expect_err("a launch is not a call event");
    assert!(
        matches!(
            err,
            DecodeError::WrongType { expected, found }
                if expected == "io.callstream.events.CallEvent"
                    && found == "io.callstream.events.CallLaunch"
        ),
        "{err:?}"
    );
}

#[test]
fn a_body_that_breaks_its_schema_is_body_mismatch() {
    // Every body starts with event_id: a 36-byte uuid string (length byte 72) at offset 10.
    let good = valid(EventKind::CallEvent);
    assert_eq!(good[HEADER_LEN], 72);
    let cases: &[(&str, usize, u8)] = &[
        ("not a uuid", HEADER_LEN + 1, b'z'),
        ("not UTF-8", HEADER_LEN + 1, 0xff),
    ];
    for &(name, at, byte) in cases {
        let mut bytes = good.clone();
        bytes[at] = byte;
        let err = decode_any(&bytes).expect_err(name);
        assert!(
            matches!(err, DecodeError::BodyMismatch { .. }),
            "{name}: {err:?}"
        );
    }
}

#[test]
fn a_timestamp_outside_chrono_range_is_a_mapping_error() {
    let mut value = sample(EventKind::Alert);
    if let apache_avro::types::Value::Record(fields) = &mut value {
        let at = fields
            .iter_mut()
            .find(|(n, _)| n == "occurred_at")
            .expect("field");
        at.1 = apache_avro::types::Value::TimestampMillis(i64::MAX);
    }
    let bytes = written_by(
        EventKind::Alert.schema(),
        EventKind::Alert.fingerprint(),
        value,
    );
    let err = Alert::decode(&bytes).expect_err("out of range");
    assert!(matches!(err, DecodeError::Mapping { .. }), "{err:?}");
}

//! Every event type round-trips, and what it writes is exactly what its `.avsc` describes.

mod support;

use apache_avro::types::Value;
use callstream_schemas::{decode_any, decode_value, AnyEvent, Event, EventKind};
use proptest::prelude::*;
use support::{sample, value_of_kind, written_by};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A value any Avro writer could produce for a schema decodes into its Rust type, encodes
    /// back to the same Avro value (nothing dropped, renamed or retyped), and that encoding
    /// validates against the parsed `.avsc` file.
    #[test]
    fn any_schema_value_round_trips((kind, value) in value_of_kind()) {
        let bytes = written_by(kind.schema(), kind.fingerprint(), value.clone());
        let event = decode_any(&bytes).expect("decodes");
        prop_assert_eq!(event.kind(), kind);

        let encoded = event.encode().expect("encodes");
        prop_assert_eq!(&encoded[..10], &bytes[..10]);
        let (decoded_kind, decoded) = decode_value(&encoded).expect("own bytes decode");
        prop_assert_eq!(decoded_kind, kind);
        prop_assert!(decoded.validate(kind.schema()), "encoded {kind:?} does not validate");
        prop_assert_eq!(&decoded, &value);

        prop_assert_eq!(decode_any(&encoded).expect("decodes again"), event.clone());
        // Deterministic: map entries are written in key order, so equal events give equal bytes.
        prop_assert_eq!(event.encode().expect("encodes again"), encoded);
    }
}

/// The typed API: `T::decode(T::encode(x)) == x` for every type, and the header names the
/// type's current fingerprint.
#[test]
fn every_type_round_trips_through_its_typed_api() {
    fn check<E: Event>(event: E) {
        let bytes = event.encode().expect("encodes");
        assert_eq!(bytes[..2], [0xC3, 0x01]);
        assert_eq!(bytes[2..10], E::fingerprint().0);
        assert_eq!(E::decode(&bytes).expect("decodes"), event, "{}", E::name());
    }
    for &kind in EventKind::ALL {
        let value = sample(kind);
        let any =
            decode_any(&written_by(kind.schema(), kind.fingerprint(), value)).expect("sample");
        match any {
            AnyEvent::CallEvent(e) => check(e),
            AnyEvent::ContactCommand(e) => check(e),
            AnyEvent::ScheduleRequest(e) => check(e),
            AnyEvent::ScheduleEvent(e) => check(e),
            AnyEvent::LaunchCommand(e) => check(e),
            AnyEvent::CallLaunch(e) => check(e),
            AnyEvent::CompletionMissing(e) => check(e),
            AnyEvent::CompletionResolved(e) => check(e),
            AnyEvent::CrmCommand(e) => check(e),
            AnyEvent::CrmResult(e) => check(e),
            AnyEvent::ExceptionEvent(e) => check(e),
            AnyEvent::ControlChange(e) => check(e),
            AnyEvent::Alert(e) => check(e),
            AnyEvent::AuditEvent(e) => check(e),
            AnyEvent::ContactState(e) => check(e),
            AnyEvent::Notification(e) => check(e),
        }
    }
}

/// apache-avro's own single-object reader decodes our bytes when given our header: the format
/// is the standard one, only the fingerprint algorithm differs from apache-avro 0.21's.
#[test]
fn apache_avro_single_object_reader_reads_our_bytes() {
    struct SpecHeader(callstream_schemas::Fingerprint);
    impl apache_avro::headers::HeaderBuilder for SpecHeader {
        fn build_header(&self) -> Vec<u8> {
            callstream_schemas::header(self.0).to_vec()
        }
    }
    for &kind in EventKind::ALL {
        let value = sample(kind);
        let event = decode_any(&written_by(
            kind.schema(),
            kind.fingerprint(),
            value.clone(),
        ))
        .expect("sample decodes");
        let bytes = event.encode().expect("encodes");
        let reader = apache_avro::GenericSingleObjectReader::new_with_header_builder(
            kind.schema().clone(),
            SpecHeader(kind.fingerprint()),
        )
        .expect("reader");
        let read: Value = reader
            .read_value(&mut &bytes[..])
            .expect("apache-avro reads it");
        assert_eq!(read, value, "{kind:?}");
    }
}

/// Bytes written by apache-avro's default single-object writer (its own fingerprint variant)
/// decode too, so a Rust producer using apache-avro directly interoperates.
#[test]
fn apache_avro_default_writer_bytes_decode() {
    for &kind in EventKind::ALL {
        let value = sample(kind);
        let mut writer =
            apache_avro::GenericSingleObjectWriter::new_with_capacity(kind.schema(), 256)
                .expect("writer");
        let mut bytes = Vec::new();
        writer
            .write_value(value.clone(), &mut bytes)
            .expect("writes");
        let (decoded_kind, decoded) = decode_value(&bytes).expect("decodes");
        assert_eq!((decoded_kind, decoded), (kind, value));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The direct decoder (`decode_any`, `T::decode`) gives exactly what the Value route gives
    /// (`decode_value` then `apache_avro::from_value`) for any value any writer could produce.
    #[test]
    fn direct_decoding_matches_the_value_route((kind, value) in value_of_kind()) {
        let bytes = written_by(kind.schema(), kind.fingerprint(), value.clone());
        let (_, decoded) = decode_value(&bytes).expect("decodes");
        let direct = decode_any(&bytes).expect("decodes directly");
        macro_rules! compare {
            ($($ty:ident),+) => {
                match direct {
                    $(AnyEvent::$ty(e) => {
                        let via_value: callstream_schemas::$ty =
                            apache_avro::from_value(&decoded).expect("maps");
                        prop_assert_eq!(&e, &via_value);
                        prop_assert_eq!(
                            <callstream_schemas::$ty as Event>::decode(&bytes).expect("typed"),
                            via_value
                        );
                    })+
                }
            };
        }
        compare!(
            CallEvent, ContactCommand, ScheduleRequest, ScheduleEvent, LaunchCommand,
            CallLaunch, CompletionMissing, CompletionResolved, CrmCommand, CrmResult,
            ExceptionEvent, ControlChange, Alert, AuditEvent, ContactState, Notification
        );
    }
}

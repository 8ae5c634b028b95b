//! The direct encoder is taken for every event type and writes byte for byte what the Value
//! route writes, for examples and for random values.

use crate::codec::{encode_direct, encode_via_value};
use crate::decode::tests::example_bytes;
use crate::{decode_any, AnyEvent, EventKind};
use proptest::prelude::*;

#[path = "../../../tests/support/mod.rs"]
mod support;

macro_rules! both_routes {
    ($any:expr, $($ty:ident),+) => {
        match $any {
            $(AnyEvent::$ty(e) => (encode_direct(e), encode_via_value(e).expect("encodes")),)+
        }
    };
}

fn routes(event: &AnyEvent) -> (Option<Vec<u8>>, Vec<u8>) {
    both_routes!(
        event,
        CallEvent,
        ContactCommand,
        ScheduleRequest,
        ScheduleEvent,
        LaunchCommand,
        CallLaunch,
        CompletionMissing,
        CompletionResolved,
        CrmCommand,
        CrmResult,
        ExceptionEvent,
        ControlChange,
        Alert,
        AuditEvent,
        ContactState,
        Notification
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn direct_encoding_matches_the_value_route((kind, value) in support::value_of_kind()) {
        let bytes = support::written_by(kind.schema(), kind.fingerprint(), value);
        let (direct, via_value) = routes(&decode_any(&bytes).expect("decodes"));
        prop_assert_eq!(direct, Some(via_value), "{:?}", kind);
    }
}

#[test]
fn every_type_encodes_directly_to_the_bytes_of_the_value_route() {
    for &kind in EventKind::ALL {
        for full in [true, false] {
            let bytes = example_bytes(kind, full);
            let event = decode_any(&bytes).expect("decodes");
            let (direct, via_value) = routes(&event);
            let direct = direct.unwrap_or_else(|| panic!("{kind:?} fell back to the Value route"));
            assert_eq!(direct, via_value, "{kind:?} full={full}");
            // The same value as written (apache-avro writes maps in hash order, we sort them).
            let value = |b: &[u8]| crate::decode_value(b).expect("decodes").1;
            assert_eq!(value(&direct), value(&bytes), "{kind:?} full={full}");
        }
    }
}

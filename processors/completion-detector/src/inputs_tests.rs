//! The fast reader against the full decoder: the same fields for every
//! valid event, and never a value where the full decoder refuses the bytes.

use super::*;
use callstream_schemas::{CallAnalysis, Event};
use proptest::prelude::*;

use crate::testkit::{accepted_launch, live_event};

fn fast_launch<'a>(inputs: &Inputs, bytes: &'a [u8]) -> Option<LaunchIn<'a>> {
    inputs.launch.as_ref()?.read(bytes).and_then(launch_from)
}

fn fast_event<'a>(inputs: &Inputs, bytes: &'a [u8]) -> Option<EventIn<'a>> {
    inputs.event.as_ref()?.read(bytes).and_then(event_from)
}

#[test]
fn both_current_schemas_have_a_fast_reader() {
    assert!(Inputs::default().fast());
}

#[test]
fn builder_events_read_the_same_both_ways() {
    let inputs = Inputs::default();
    let launch = accepted_launch("t1", "c1", Uuid::from_u128(7), "CA7", 1_700_000_000_000);
    let bytes = launch.encode().expect("encodes");
    let fast = fast_launch(&inputs, &bytes).expect("fast path taken");
    assert!(matches!(fast.tenant_id, Cow::Borrowed(_)));
    assert_eq!(fast, LaunchIn::from(launch));

    let event = live_event("t1", "c1", Some(Uuid::from_u128(7)), "CA7", "completed", 5);
    let bytes = event.encode().expect("encodes");
    let fast = fast_event(&inputs, &bytes).expect("fast path taken");
    assert_eq!(fast, EventIn::from(event));
}

fn text() -> impl Strategy<Value = String> {
    ".{0,12}"
}

fn uuid() -> impl Strategy<Value = Uuid> {
    any::<u128>().prop_map(Uuid::from_u128)
}

fn launch() -> impl Strategy<Value = CallLaunch> {
    (
        (
            uuid(),
            text(),
            -8_000_000_000_000i64..8_000_000_000_000,
            proptest::option::of(uuid()),
        ),
        (
            uuid(),
            text(),
            0..LaunchStatus::ALL.len(),
            proptest::option::of(text()),
        ),
        (any::<i32>(), proptest::option::of(text()), any::<bool>()),
    )
        .prop_map(
            |((id, tenant, at, corr), (launch_id, campaign, status, call), (n, why, r))| {
                let mut l = accepted_launch(&tenant, &campaign, launch_id, "", at);
                l.event_id = id;
                l.correlation_id = corr;
                l.causation_id = corr;
                l.campaign_id = campaign;
                l.status = LaunchStatus::ALL[status];
                l.provider_call_id = call;
                l.attempts = n;
                l.reason = why.clone();
                l.reason_detail = why;
                l.reconciled = r;
                l
            },
        )
}

fn event() -> impl Strategy<Value = CallEvent> {
    (
        (uuid(), text(), text(), text(), proptest::option::of(uuid())),
        (
            0..CallEventSource::ALL.len(),
            0..CallOutcome::ALL.len(),
            proptest::option::of(text()),
        ),
        (
            proptest::option::of(any::<i32>()),
            proptest::option::of(text()),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (id, tenant, call, status, launch),
                (source, outcome, by),
                (secs, zone, analysed),
            )| {
                let mut e = live_event(&tenant, &call, launch, &call, &status, 1_000);
                e.event_id = id;
                e.source = CallEventSource::ALL[source];
                e.outcome = CallOutcome::ALL[outcome];
                e.answered_by = by;
                e.duration_seconds = secs;
                e.reported_time_zone = zone.clone();
                e.analysis = analysed.then(|| CallAnalysis {
                    summary: zone,
                    interested: Some(true),
                    callback_requested: true,
                    ..CallAnalysis::default()
                });
                e
            },
        )
}

/// Bytes changed at random: a byte flipped, cut short or one appended.
fn mutate(bytes: &mut Vec<u8>, at: usize, byte: u8, how: u8) {
    if bytes.is_empty() {
        return;
    }
    let at = at % bytes.len();
    match how % 3 {
        0 => bytes[at] = byte,
        1 => bytes.truncate(at),
        _ => bytes.push(byte),
    }
}

proptest! {
    #[test]
    fn launches_read_the_same_both_ways(l in launch()) {
        let bytes = l.encode().expect("encodes");
        let fast = fast_launch(&Inputs::default(), &bytes);
        prop_assert_eq!(fast, Some(LaunchIn::from(l)));
    }

    #[test]
    fn events_read_the_same_both_ways(e in event()) {
        let bytes = e.encode().expect("encodes");
        let fast = fast_event(&Inputs::default(), &bytes);
        prop_assert_eq!(fast, Some(EventIn::from(e)));
    }

    #[test]
    fn mutated_launches_never_read_where_the_full_decode_refuses(
        l in launch(), at in any::<usize>(), byte in any::<u8>(), how in any::<u8>()
    ) {
        let mut bytes = l.encode().expect("encodes");
        mutate(&mut bytes, at, byte, how);
        if let Some(fast) = fast_launch(&Inputs::default(), &bytes) {
            let full = CallLaunch::decode(&bytes).map(LaunchIn::from).ok();
            prop_assert_eq!(Some(fast), full);
        }
    }

    #[test]
    fn mutated_events_never_read_where_the_full_decode_refuses(
        e in event(), at in any::<usize>(), byte in any::<u8>(), how in any::<u8>()
    ) {
        let mut bytes = e.encode().expect("encodes");
        mutate(&mut bytes, at, byte, how);
        if let Some(fast) = fast_event(&Inputs::default(), &bytes) {
            let full = CallEvent::decode(&bytes).map(EventIn::from).ok();
            prop_assert_eq!(Some(fast), full);
        }
    }
}

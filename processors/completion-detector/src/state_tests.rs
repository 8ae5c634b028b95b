use super::*;
use proptest::prelude::*;

/// A launch as the dispatcher produces them for Twilio.
pub(crate) fn typical_launch(n: u128) -> Launch {
    Launch {
        launch_id: Uuid::from_u128(n),
        job_id: Uuid::from_u128(n + 1),
        event_id: Uuid::from_u128(n + 2),
        correlation_id: Some(Uuid::from_u128(n + 3)),
        tenant_id: "tenant-01".into(),
        campaign_id: "spring-intake".into(),
        provider: "twilio".into(),
        provider_call_id: format!("CA{:032x}", n),
        accepted_at_ms: 1_700_000_000_000,
        window_ms: 20 * 60_000,
        grace_ms: 120_000,
        missing: None,
    }
}

fn arb_uuid() -> impl Strategy<Value = Uuid> {
    any::<u128>().prop_map(Uuid::from_u128)
}

fn arb_launch() -> impl Strategy<Value = Launch> {
    (
        (
            arb_uuid(),
            arb_uuid(),
            arb_uuid(),
            proptest::option::of(arb_uuid()),
        ),
        (
            "[a-z0-9-]{0,12}",
            "[a-z0-9-]{0,12}",
            "twilio|json|[a-z]{0,8}",
            "[A-Za-z0-9]{0,40}",
        ),
        (any::<i64>(), any::<i64>(), any::<i64>(), 0u8..4),
    )
        .prop_map(|((l, j, e, c), (t, camp, p, call), (at, w, g, m))| Launch {
            launch_id: l,
            job_id: j,
            event_id: e,
            correlation_id: c,
            tenant_id: t,
            campaign_id: camp,
            provider: p,
            provider_call_id: call,
            accepted_at_ms: at,
            window_ms: w,
            grace_ms: g,
            missing: trigger_from(m).unwrap(),
        })
}

fn arb_completion() -> impl Strategy<Value = Completion> {
    (
        (
            arb_uuid(),
            "[a-z0-9-]{0,12}",
            "[A-Za-z0-9]{0,40}",
            proptest::option::of(arb_uuid()),
        ),
        (
            any::<i64>(),
            any::<i64>(),
            0u8..3,
            0..CallOutcome::ALL.len(),
        ),
    )
        .prop_map(|((e, t, call, l), (o, a, s, out))| Completion {
            event_id: e,
            tenant_id: t,
            call_id: call,
            launch_id: l,
            occurred_at_ms: o,
            arrived_at_ms: a,
            source: source_from(s).unwrap(),
            outcome: CallOutcome::ALL[out],
        })
}

fn arb_state() -> impl Strategy<Value = ContactWindows> {
    (
        "[a-z0-9-]{0,12}",
        proptest::collection::vec(arb_launch(), 0..4),
        proptest::collection::vec(arb_completion(), 0..3),
        proptest::collection::vec((arb_uuid(), any::<u64>(), any::<i64>()), 0..3),
    )
        .prop_map(|(tenant_id, launches, early, closed)| ContactWindows {
            tenant_id,
            launches,
            early,
            closed: closed
                .into_iter()
                .map(|(launch_id, call_key, closed_at_ms)| Closed {
                    launch_id,
                    call_key,
                    closed_at_ms,
                })
                .collect(),
        })
}

proptest! {
    #[test]
    fn state_round_trips(state in arb_state()) {
        prop_assert_eq!(ContactWindows::decode(&state.encode()).unwrap(), state);
    }

    #[test]
    fn garbage_and_truncations_are_errors_not_panics(
        state in arb_state(),
        cut in any::<prop::sample::Index>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let encoded = state.encode();
        let at = cut.index(encoded.len());
        prop_assert!(ContactWindows::decode(&encoded[..at]).is_err());
        let _ = ContactWindows::decode(&bytes);
    }
}

#[test]
fn a_typical_open_launch_is_compact() {
    let state = ContactWindows {
        tenant_id: "tenant-01".into(),
        launches: vec![typical_launch(1)],
        ..ContactWindows::default()
    };
    let bytes = state.encode().len();
    assert!(bytes <= 160, "one open launch takes {bytes} bytes");
    let two = ContactWindows {
        launches: vec![typical_launch(1), typical_launch(9)],
        ..state
    };
    let second = two.encode().len() - bytes;
    assert!(second <= 150, "a second launch adds {second} bytes");
}

#[test]
fn call_keys_are_stable() {
    // Stored in the changelog: the hash must never change.
    assert_eq!(call_key(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(call_key("a"), 0xaf63_dc4c_8601_ec8c);
}

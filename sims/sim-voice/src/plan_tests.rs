use proptest::prelude::*;

use super::*;

fn draws(u: f64) -> Draws {
    Draws([u; DRAWS])
}

fn input(events: EventSet) -> PlanInput {
    PlanInput {
        in_window: 1,
        events,
        amd: Amd::DetectMessageEnd,
        analysis: true,
    }
}

#[test]
fn weighted_cuts_in_proportion() {
    let cases: &[(&[f64], f64, usize)] = &[
        (&[1.0, 1.0], 0.0, 0),
        (&[1.0, 1.0], 0.49, 0),
        (&[1.0, 1.0], 0.5, 1),
        (&[1.0, 3.0], 0.26, 1),
        (&[0.0, 1.0], 0.0, 1),
        (&[1.0, 0.0], 0.999, 0),
        (&[2.0, 0.0, 2.0], 0.75, 2),
    ];
    for (weights, u, want) in cases {
        assert_eq!(weighted(weights, *u), *want, "{weights:?} {u}");
    }
}

#[test]
fn drop_probability_rises_past_the_threshold() {
    let b = Behaviour {
        completion_drop_share: 0.05,
        burst_threshold: 10,
        burst_drop_per_call: 0.01,
        ..Behaviour::default()
    };
    let cases = [(1, 0.05), (10, 0.05), (11, 0.06), (30, 0.25), (500, 1.0)];
    for (n, want) in cases {
        let got = drop_probability(&b, n);
        assert!((got - want).abs() < 1e-9, "{n}: {got} != {want}");
    }
}

#[test]
fn create_faults_read_their_own_draws() {
    let b = Behaviour {
        create_error_share: 0.2,
        create_slow_share: 0.3,
        ..Behaviour::default()
    };
    let mut d = draws(0.9);
    assert_eq!(create_fault(&b, &d), CreateFault::None);
    d.0[CREATE_SLOW] = 0.1;
    assert_eq!(create_fault(&b, &d), CreateFault::Slow);
    d.0[CREATE_ERROR] = 0.1;
    d.0[ERROR_CODE] = 0.1;
    assert_eq!(create_fault(&b, &d), CreateFault::Error(500));
    d.0[ERROR_CODE] = 0.7;
    assert_eq!(create_fault(&b, &d), CreateFault::Error(503));
}

#[test]
fn each_outcome_has_its_timeline() {
    use CallStatus::*;
    let cases: &[(f64, Outcome, &[CallStatus], Option<&str>)] = &[
        (
            0.1,
            Outcome::Human,
            &[Initiated, Ringing, InProgress, Completed],
            Some("human"),
        ),
        (
            0.6,
            Outcome::Voicemail,
            &[Initiated, Ringing, InProgress, Completed],
            Some("machine_end_beep"),
        ),
        (
            0.8,
            Outcome::NoAnswer,
            &[Initiated, Ringing, NoAnswer],
            None,
        ),
        (0.92, Outcome::Busy, &[Initiated, Busy], None),
        (0.99, Outcome::Failed, &[Initiated, Failed], None),
    ];
    let b = Behaviour::default();
    for (u, outcome, statuses, answered_by) in cases {
        let mut d = draws(0.5);
        d.0[OUTCOME] = *u;
        let p = plan(&b, input(EventSet::ALL), &d);
        assert_eq!(p.outcome, *outcome);
        let got: Vec<CallStatus> = p.transitions.iter().map(|t| t.status).collect();
        assert_eq!(got, *statuses, "{outcome:?}");
        assert_eq!(p.answered_by, *answered_by, "{outcome:?}");
        assert_eq!(p.intent.is_some(), *outcome == Outcome::Human);
        let answered = matches!(outcome, Outcome::Human | Outcome::Voicemail);
        assert_eq!(p.duration_secs > 0, answered, "{outcome:?}");
        let analyses = p
            .deliveries
            .iter()
            .filter(|d| d.payload == Payload::Analysis)
            .count();
        assert_eq!(analyses, usize::from(*outcome == Outcome::Human));
    }
}

#[test]
fn without_subscriptions_only_the_final_status_is_sent() {
    let b = Behaviour::default();
    let p = plan(&b, input(EventSet::DEFAULT), &draws(0.1));
    let statuses: Vec<Payload> = p
        .deliveries
        .iter()
        .filter(|d| d.payload != Payload::Analysis)
        .map(|d| d.payload)
        .collect();
    assert_eq!(
        statuses,
        vec![Payload::Status {
            transition: 3,
            sequence: 0
        }]
    );
    let none = plan(
        &b,
        PlanInput {
            analysis: false,
            ..input(EventSet::NONE)
        },
        &draws(0.1),
    );
    assert!(none.deliveries.is_empty());
}

#[test]
fn machine_detection_decides_answered_by() {
    let b = Behaviour::default();
    let mut d = draws(0.5);
    d.0[OUTCOME] = 0.6; // voicemail
    let cases = [
        (Amd::Off, None),
        (Amd::Enable, Some("machine_start")),
        (Amd::DetectMessageEnd, Some("machine_end_beep")),
    ];
    for (amd, want) in cases {
        let p = plan(
            &b,
            PlanInput {
                amd,
                ..input(EventSet::ALL)
            },
            &d,
        );
        assert_eq!(p.answered_by, want, "{amd:?}");
    }
}

fn arb_behaviour() -> impl Strategy<Value = Behaviour> {
    (
        0.0..=1.0f64,
        0.0..=1.0f64,
        0.0..=1.0f64,
        0.0..=1.0f64,
        0.0..=1.0f64,
        0.0..=0.05f64,
    )
        .prop_map(|(drop, lost, delay, dup, reorder, per_call)| Behaviour {
            completion_drop_share: drop,
            lost_call_share: lost,
            delay_share: delay,
            duplicate_share: dup,
            reorder_share: reorder,
            burst_drop_per_call: per_call,
            ..Behaviour::default()
        })
}

fn arb_draws() -> impl Strategy<Value = Draws> {
    proptest::collection::vec(0.0..1.0f64, DRAWS).prop_map(|v| {
        let mut d = [0.0; DRAWS];
        d.copy_from_slice(&v);
        Draws(d)
    })
}

proptest! {
    #[test]
    fn plans_keep_their_invariants(b in arb_behaviour(), d in arb_draws(), n in 1u32..100) {
        let p = plan(&b, PlanInput { in_window: n, ..input(EventSet::ALL) }, &d);
        // Time order and one final status, last.
        prop_assert!(p.transitions.windows(2).all(|w| w[0].at <= w[1].at));
        prop_assert_eq!(p.transitions.iter().filter(|t| t.status.is_final()).count(), 1);
        prop_assert!(p.final_transition().status.is_final());
        // Sent in send order, never before the event they report.
        prop_assert!(p.deliveries.windows(2).all(|w| w[0].send_at <= w[1].send_at));
        for del in &p.deliveries {
            let event_at = match del.payload {
                Payload::Status { transition, .. } => p.transitions[transition].at,
                Payload::Analysis => p.final_transition().at,
            };
            prop_assert!(del.send_at >= event_at);
        }
        // Sequence numbers follow the transitions.
        let mut originals: Vec<(usize, u32)> = p.deliveries.iter().filter_map(|d| match d.payload {
            Payload::Status { transition, sequence } if !d.duplicate => Some((transition, sequence)),
            _ => None,
        }).collect();
        originals.sort_unstable();
        for (k, (_, seq)) in originals.iter().enumerate() {
            prop_assert_eq!(*seq as usize, k);
        }
        // A dropped completion takes the final callback and the analysis.
        let final_sent = p.deliveries.iter().any(|d| match d.payload {
            Payload::Status { transition, .. } => p.transitions[transition].status.is_final(),
            Payload::Analysis => true,
        });
        prop_assert_eq!(final_sent, !p.completion_dropped);
        prop_assert!(!p.lost || p.completion_dropped);
        prop_assert_eq!(p.dropped_callback, p.completion_dropped);
    }

    #[test]
    fn faults_do_not_change_the_call(b in arb_behaviour(), d in arb_draws()) {
        let calm = plan(&Behaviour::default(), input(EventSet::ALL), &d);
        let faulty = plan(&b, input(EventSet::ALL), &d);
        prop_assert_eq!(calm.outcome, faulty.outcome);
        prop_assert_eq!(&calm.transitions, &faulty.transitions);
        prop_assert_eq!(calm.intent, faulty.intent);
        prop_assert_eq!(calm.duration_secs, faulty.duration_secs);
    }
}

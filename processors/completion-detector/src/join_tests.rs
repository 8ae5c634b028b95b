use std::collections::HashMap;

use callstream_schemas::{CallEventSource, CallOutcome, MissingTrigger};
use proptest::prelude::*;
use uuid::Uuid;

use super::*;
use crate::state::{Completion, ContactWindows, Launch};

const T0: i64 = 1_700_000_000_000;
const W: i64 = 1_000;
const GRACE: i64 = 100;
const S: JoinSettings = JoinSettings {
    early_grace_ms: 50,
    late_retention_ms: 10_000,
    closed_retention_ms: 5_000,
};

fn launch(n: u128, at: i64) -> Launch {
    Launch {
        launch_id: Uuid::from_u128(n),
        job_id: Uuid::from_u128(1000 + n),
        event_id: Uuid::from_u128(2000 + n),
        correlation_id: None,
        tenant_id: "t1".into(),
        campaign_id: "c1".into(),
        provider: "twilio".into(),
        provider_call_id: format!("CA{n}"),
        accepted_at_ms: at,
        window_ms: W,
        grace_ms: GRACE,
        missing: None,
    }
}

/// A completion of call `CA{call}` naming launch `named` (if any).
fn completion(event: u128, call: u128, named: Option<u128>, at: i64) -> Completion {
    Completion {
        event_id: Uuid::from_u128(5000 + event),
        tenant_id: "t1".into(),
        call_id: format!("CA{call}"),
        launch_id: named.map(Uuid::from_u128),
        occurred_at_ms: at,
        arrived_at_ms: at,
        source: CallEventSource::Live,
        outcome: CallOutcome::Answered,
    }
}

fn clocks(now: i64) -> Clocks {
    Clocks {
        stream_ms: now,
        now_ms: now,
    }
}

/// A short name per event, so the tables read as the story they tell.
fn names(events: &[JoinEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| !matches!(e, JoinEvent::Accepted { .. }))
        .map(|e| match e {
            JoinEvent::Accepted { .. } => unreachable!(),
            JoinEvent::Missing { launch } => format!("missing {}", launch.launch_id.as_u128()),
            JoinEvent::OnTime { launch, .. } => format!("on-time {}", launch.launch_id.as_u128()),
            JoinEvent::Late { launch, .. } => format!("late {}", launch.launch_id.as_u128()),
            JoinEvent::Recovered { launch, .. } => {
                format!("recovered {}", launch.launch_id.as_u128())
            }
            JoinEvent::Duplicate { .. } => "duplicate".into(),
            JoinEvent::Unmatched { .. } => "unmatched".into(),
            JoinEvent::DuplicateLaunch { .. } => "duplicate-launch".into(),
            JoinEvent::Expired { launch } => format!("expired {}", launch.launch_id.as_u128()),
        })
        .collect()
}

/// One step of a story: something arrives at a time, or time passes.
#[derive(Debug, Clone)]
enum Step {
    Launch(Launch),
    Completion(Completion),
    Tick(i64),
}

fn run(steps: &[Step]) -> (ContactWindows, Vec<String>) {
    let mut state = ContactWindows::default();
    let mut events = Vec::new();
    for step in steps {
        let now = match step {
            Step::Launch(l) => l.accepted_at_ms,
            Step::Completion(c) => c.arrived_at_ms,
            Step::Tick(t) => *t,
        };
        events.extend(state.advance(clocks(now), &S));
        match step {
            Step::Launch(l) => events.extend(state.add_launch(l.clone(), now)),
            Step::Completion(c) => events.extend(state.add_completion(c.clone(), now)),
            Step::Tick(_) => {}
        }
        events.extend(state.advance(clocks(now), &S));
    }
    (state, names(&events))
}

#[test]
fn matching_cases() {
    use Step::*;
    let deadline = T0 + W + GRACE;
    let cases: Vec<(&str, Vec<Step>, Vec<&str>)> = vec![
        (
            "by call id",
            vec![
                Launch(launch(1, T0)),
                Completion(completion(1, 1, None, T0 + 10)),
                Tick(deadline + 1),
            ],
            vec!["on-time 1"],
        ),
        (
            "by launch id when the call id differs",
            vec![
                Launch(launch(1, T0)),
                Completion(completion(1, 77, Some(1), T0 + 10)),
                Tick(deadline + 1),
            ],
            vec!["on-time 1"],
        ),
        (
            "completion first, launch within the grace",
            vec![
                Completion(completion(1, 1, Some(1), T0)),
                Launch(launch(1, T0 + 20)),
                Tick(deadline + 100),
            ],
            vec!["on-time 1"],
        ),
        (
            "duplicate completion matches nothing twice",
            vec![
                Launch(launch(1, T0)),
                Launch(launch(2, T0 + 5)),
                Completion(completion(1, 1, Some(1), T0 + 10)),
                Completion(completion(9, 1, Some(1), T0 + 11)),
                Tick(T0 + 5 + W + GRACE),
            ],
            vec!["on-time 1", "duplicate", "missing 2"],
        ),
        (
            "two launches tracked apart",
            vec![
                Launch(launch(1, T0)),
                Launch(launch(2, T0 + 10)),
                Completion(completion(2, 2, Some(2), T0 + 20)),
                Tick(deadline),
                Tick(deadline + 10),
            ],
            vec!["on-time 2", "missing 1"],
        ),
        (
            "late completion resolves the missing case",
            vec![
                Launch(launch(1, T0)),
                Tick(deadline),
                Completion(completion(1, 1, Some(1), deadline + 5)),
            ],
            vec!["missing 1", "late 1"],
        ),
        (
            "a completion arriving after the deadline is late even before any tick",
            vec![
                Launch(launch(1, T0)),
                Completion(completion(1, 1, Some(1), deadline + 5)),
            ],
            vec!["missing 1", "late 1"],
        ),
        (
            "unknown ids fall back to the earliest window holding the time",
            vec![
                Launch(launch(1, T0)),
                Launch(launch(2, T0 + 10)),
                Completion(completion(1, 99, None, T0 + 20)),
                Tick(T0 + 20 + S.early_grace_ms),
            ],
            vec!["on-time 1"],
        ),
        (
            "completion outside every window matches nothing",
            vec![
                Launch(launch(1, T0)),
                Completion(completion(1, 99, None, T0 - 500)),
                Tick(T0 + 500),
                Tick(deadline),
            ],
            vec!["unmatched", "missing 1"],
        ),
        (
            "a waiting completion the window holds is matched at the deadline",
            vec![
                Launch(launch(1, T0)),
                Completion(completion(1, 99, None, deadline - 10)),
                Tick(deadline),
            ],
            vec!["on-time 1"],
        ),
        (
            "a re-sent launch is not tracked twice",
            vec![
                Launch(launch(1, T0)),
                Launch(launch(1, T0 + 1)),
                Tick(deadline),
            ],
            vec!["duplicate-launch", "missing 1"],
        ),
        (
            "a missing launch is forgotten after the late retention",
            vec![
                Launch(launch(1, T0)),
                Tick(deadline),
                Tick(deadline + S.late_retention_ms),
            ],
            vec!["missing 1", "expired 1"],
        ),
    ];
    for (name, steps, expected) in cases {
        let (_, got) = run(&steps);
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn a_recovery_replay_of_a_missing_launch_closes_it_quietly() {
    let mut state = ContactWindows::default();
    state.add_launch(launch(1, T0), T0);
    let deadline = T0 + W + GRACE;
    let missing = state.advance(clocks(deadline), &S);
    assert_eq!(names(&missing), ["missing 1"]);
    let mut replay = completion(1, 1, Some(1), deadline + 100);
    replay.source = CallEventSource::Recovery;
    let events = state.add_completion(replay, deadline + 100);
    assert_eq!(names(&events), ["recovered 1"]);
    // The live callback, if it finally arrives, matches nothing.
    let events = state.add_completion(completion(2, 1, Some(1), deadline + 200), deadline + 200);
    assert_eq!(names(&events), ["duplicate"]);
}

#[test]
fn the_trigger_names_the_clock_that_passed_the_deadline() {
    let deadline = T0 + W + GRACE;
    for (stream, expected) in [
        (deadline, MissingTrigger::StreamTime),
        (T0, MissingTrigger::WallClock),
    ] {
        let mut state = ContactWindows::default();
        state.add_launch(launch(1, T0), T0);
        let events = state.advance(
            Clocks {
                stream_ms: stream,
                now_ms: deadline,
            },
            &S,
        );
        match events.as_slice() {
            [JoinEvent::Missing { launch }] => assert_eq!(launch.missing, Some(expected)),
            other => panic!("expected one missing, got {other:?}"),
        }
    }
}

#[test]
fn state_empties_once_everything_is_forgotten() {
    let (state, _) = run(&[
        Step::Launch(launch(1, T0)),
        Step::Completion(completion(1, 1, Some(1), T0 + 1)),
        Step::Launch(launch(2, T0 + 2)),
        Step::Tick(T0 + 2 + W + GRACE),
        Step::Tick(T0 + 100_000),
    ]);
    assert!(state.is_empty(), "{state:?}");
    assert_eq!(state.next_due(&S), None);
}

fn arb_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u128..4, 0i64..3_000).prop_map(|(n, at)| Step::Launch(launch(n, T0 + at))),
        (
            0u128..5,
            proptest::option::of(0u128..5),
            0i64..3_000,
            any::<bool>()
        )
            .prop_map(|(call, named, at, recovery)| {
                // One event id per content, as a real duplicate has.
                let e = call * 10 + named.map_or(9, |n| n) + u128::from(recovery) * 100;
                let mut c = completion(e, call, named, T0 + at);
                if recovery {
                    c.source = CallEventSource::Recovery;
                }
                Step::Completion(c)
            }),
        (0i64..4_000).prop_map(|t| Step::Tick(T0 + t)),
    ]
}

proptest! {
    #[test]
    fn no_launch_closes_twice_and_no_completion_closes_two(mut steps in proptest::collection::vec(arb_step(), 0..40)) {
        // Time moves forward, as it does on a partition.
        steps.sort_by_key(|s| match s {
            Step::Launch(l) => l.accepted_at_ms,
            Step::Completion(c) => c.arrived_at_ms,
            Step::Tick(t) => *t,
        });
        let mut state = ContactWindows::default();
        let mut closed_launches: HashMap<Uuid, usize> = HashMap::new();
        let mut missing: HashMap<Uuid, usize> = HashMap::new();
        let mut used: HashMap<Uuid, usize> = HashMap::new();
        for step in &steps {
            let now = match step {
                Step::Launch(l) => l.accepted_at_ms,
                Step::Completion(c) => c.arrived_at_ms,
                Step::Tick(t) => *t,
            };
            let mut events = state.advance(clocks(now), &S);
            events.extend(match step {
                Step::Launch(l) => state.add_launch(l.clone(), now),
                Step::Completion(c) => state.add_completion(c.clone(), now),
                Step::Tick(_) => Vec::new(),
            });
            for event in events {
                match event {
                    JoinEvent::OnTime { launch, completion }
                    | JoinEvent::Late { launch, completion }
                    | JoinEvent::Recovered { launch, completion } => {
                        *closed_launches.entry(launch.launch_id).or_default() += 1;
                        *used.entry(completion.event_id).or_default() += 1;
                    }
                    JoinEvent::Missing { launch } => {
                        *missing.entry(launch.launch_id).or_default() += 1;
                    }
                    _ => {}
                }
            }
            // The encoding holds whatever the join builds.
            prop_assert_eq!(ContactWindows::decode(&state.encode()).unwrap(), state.clone());
        }
        prop_assert!(closed_launches.values().all(|n| *n == 1), "{:?}", closed_launches);
        prop_assert!(missing.values().all(|n| *n == 1), "{:?}", missing);
        prop_assert!(used.values().all(|n| *n == 1), "{:?}", used);
    }
}

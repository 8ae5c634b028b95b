//! The transition table, tested edge by edge, and a sample of rejections.

use super::*;
use WorkflowState as S;

/// Every allowed edge, written out independently of [`TRANSITIONS`] so a
/// change to the table has to be made twice, on purpose.
const EXPECTED_ALLOWED: [(WorkflowState, WorkflowState, StepKind); 24] = [
    (S::Received, S::Scheduled, SameStep),
    (S::Received, S::NeedsReview, SameStep),
    (S::Received, S::Completed, SameStep),
    (S::Received, S::Failed, SameStep),
    (S::Scheduled, S::Dispatching, SameStep),
    (S::Scheduled, S::Scheduled, SameStep),
    (S::Scheduled, S::NeedsReview, SameStep),
    (S::Scheduled, S::Completed, SameStep),
    (S::Scheduled, S::Failed, SameStep),
    (S::Dispatching, S::AwaitingResult, SameStep),
    (S::Dispatching, S::NeedsReview, SameStep),
    (S::Dispatching, S::Completed, SameStep),
    (S::Dispatching, S::Failed, SameStep),
    (S::Dispatching, S::Scheduled, NewStep),
    (S::AwaitingResult, S::AwaitingResult, SameStep),
    (S::AwaitingResult, S::NeedsReview, SameStep),
    (S::AwaitingResult, S::Completed, SameStep),
    (S::AwaitingResult, S::Failed, SameStep),
    (S::AwaitingResult, S::Scheduled, NewStep),
    (S::NeedsReview, S::Completed, SameStep),
    (S::NeedsReview, S::Failed, SameStep),
    (S::NeedsReview, S::Scheduled, NewStep),
    (S::Completed, S::Scheduled, NewStep),
    (S::Failed, S::Scheduled, NewStep),
];

#[test]
fn the_table_is_exactly_the_expected_edges() {
    assert_eq!(TRANSITIONS.len(), EXPECTED_ALLOWED.len());
    for edge_row in EXPECTED_ALLOWED {
        assert!(TRANSITIONS.contains(&edge_row), "{edge_row:?} missing");
    }
}

#[test]
fn every_allowed_edge_applies_and_moves_the_step_as_its_kind_says() {
    for (from, to, kind) in EXPECTED_ALLOWED {
        let mut wf = Workflow::at(from, 7);
        let applied = wf
            .apply(7, to)
            .unwrap_or_else(|e| panic!("{from} → {to}: {e}"));
        let next_step = if kind == NewStep { 8 } else { 7 };
        assert_eq!(
            applied,
            Applied {
                from,
                to,
                step: next_step,
                new_step: kind == NewStep
            }
        );
        assert_eq!((wf.state(), wf.step()), (to, next_step));
    }
}

#[test]
fn every_edge_outside_the_table_is_rejected_and_changes_nothing() {
    let mut rejected = 0;
    for from in WorkflowState::ALL {
        for to in WorkflowState::ALL {
            if edge(from, to).is_some() {
                continue;
            }
            let mut wf = Workflow::at(from, 3);
            let err = wf.apply(3, to).unwrap_err();
            assert!(
                matches!(
                    err,
                    TransitionRejected::Backwards { .. } | TransitionRejected::NotAllowed { .. }
                ),
                "{from} → {to}: {err:?}"
            );
            assert_eq!(wf, Workflow::at(from, 3), "{from} → {to} changed the state");
            rejected += 1;
        }
    }
    assert_eq!(rejected, 7 * 7 - EXPECTED_ALLOWED.len());
}

#[test]
fn sample_rejections_carry_the_right_reason() {
    use TransitionRejected::*;
    let cases = [
        // A late "ringing" after the result: backwards out of a finished step.
        (
            (S::Completed, 2),
            (2, S::AwaitingResult),
            Backwards {
                from: S::Completed,
                to: S::AwaitingResult,
            },
        ),
        (
            (S::AwaitingResult, 2),
            (2, S::Dispatching),
            Backwards {
                from: S::AwaitingResult,
                to: S::Dispatching,
            },
        ),
        (
            (S::Scheduled, 2),
            (2, S::Received),
            Backwards {
                from: S::Scheduled,
                to: S::Received,
            },
        ),
        (
            (S::Failed, 2),
            (2, S::Completed),
            Backwards {
                from: S::Failed,
                to: S::Completed,
            },
        ),
        (
            (S::Completed, 2),
            (2, S::Completed),
            Backwards {
                from: S::Completed,
                to: S::Completed,
            },
        ),
        // Skipping ahead is not allowed either.
        (
            (S::Received, 0),
            (0, S::Dispatching),
            NotAllowed {
                from: S::Received,
                to: S::Dispatching,
            },
        ),
        (
            (S::NeedsReview, 1),
            (1, S::Dispatching),
            NotAllowed {
                from: S::NeedsReview,
                to: S::Dispatching,
            },
        ),
        (
            (S::Dispatching, 1),
            (1, S::Dispatching),
            NotAllowed {
                from: S::Dispatching,
                to: S::Dispatching,
            },
        ),
        // An old call's result after the contact moved on to the next call.
        (
            (S::Scheduled, 5),
            (4, S::Scheduled),
            StaleStep {
                event_step: 4,
                current_step: 5,
            },
        ),
        (
            (S::AwaitingResult, 5),
            (4, S::Completed),
            StaleStep {
                event_step: 4,
                current_step: 5,
            },
        ),
        // An event claiming a step that was never begun.
        (
            (S::Scheduled, 5),
            (6, S::Dispatching),
            UnknownStep {
                event_step: 6,
                current_step: 5,
            },
        ),
    ];
    for ((state, step), (event_step, to), expected) in cases {
        let mut wf = Workflow::at(state, step);
        assert_eq!(
            wf.apply(event_step, to),
            Err(expected),
            "{state}@{step} ← {to}@{event_step}"
        );
        assert_eq!(wf, Workflow::at(state, step));
    }
}

#[test]
fn a_stale_result_is_rejected_after_the_retry_began() {
    // Step 0: planned, launched, no answer, retry planned (step 1).
    let mut wf = Workflow::new();
    for to in [S::Scheduled, S::Dispatching, S::AwaitingResult] {
        wf.apply(0, to).unwrap();
    }
    let retry = wf.apply(0, S::Scheduled).unwrap();
    assert_eq!((retry.step, retry.new_step), (1, true));
    // The recovery path re-delivers step 0's call as answered: rejected,
    // where a table-only check would have applied Scheduled → Completed.
    assert_eq!(
        wf.apply(0, S::Completed),
        Err(TransitionRejected::StaleStep {
            event_step: 0,
            current_step: 1
        })
    );
    assert_eq!((wf.state(), wf.step()), (S::Scheduled, 1));
}

#[test]
fn reason_codes_are_stable_labels() {
    let cases = [
        (
            TransitionRejected::StaleStep {
                event_step: 0,
                current_step: 1,
            },
            "stale_step",
        ),
        (
            TransitionRejected::UnknownStep {
                event_step: 2,
                current_step: 1,
            },
            "unknown_step",
        ),
        (
            TransitionRejected::Backwards {
                from: S::Completed,
                to: S::Received,
            },
            "backwards",
        ),
        (
            TransitionRejected::NotAllowed {
                from: S::Received,
                to: S::Dispatching,
            },
            "not_allowed",
        ),
    ];
    for (rejection, code) in cases {
        assert_eq!(rejection.reason_code(), code);
    }
}

#[test]
fn state_names_are_the_design_vocabulary() {
    let names: Vec<String> = WorkflowState::ALL
        .iter()
        .map(|s| {
            serde_json::to_string(s)
                .unwrap()
                .trim_matches('"')
                .to_owned()
        })
        .collect();
    assert_eq!(
        names,
        [
            "received",
            "needs_review",
            "scheduled",
            "dispatching",
            "awaiting_result",
            "completed",
            "failed"
        ]
    );
    for s in WorkflowState::ALL {
        assert_eq!(
            s.to_string(),
            serde_json::to_string(&s).unwrap().trim_matches('"')
        );
    }
}

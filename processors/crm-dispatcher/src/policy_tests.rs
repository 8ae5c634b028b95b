use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn refused(status: u16, retry_after_ms: Option<u64>) -> Outcome {
    Outcome::Refused {
        status,
        retry_after_ms,
        message: "no".into(),
    }
}

fn unanswered() -> Outcome {
    Outcome::Unanswered {
        message: "timeout".into(),
    }
}

fn unreachable() -> Outcome {
    Outcome::Unreachable {
        message: "refused".into(),
    }
}

/// Which step follows, ignoring the delay.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    Done,
    WriteNow,
    SearchNow,
    ParkThenWrite,
    ParkThenSearch,
    Fail(FailReason),
}

fn shape(next: &Next) -> Shape {
    match next {
        Next::Written { .. } | Next::Found { .. } => Shape::Done,
        Next::Write => Shape::WriteNow,
        Next::Search => Shape::SearchNow,
        Next::Park {
            resume: Resume::Write,
            ..
        } => Shape::ParkThenWrite,
        Next::Park {
            resume: Resume::Search,
            ..
        } => Shape::ParkThenSearch,
        Next::Fail { reason } => Shape::Fail(*reason),
    }
}

#[test]
fn each_outcome_leads_to_its_step() {
    let written = Outcome::Written {
        status: 201,
        object_id: "1".into(),
    };
    let found = Outcome::Found {
        object_id: "1".into(),
    };
    use Sent::*;
    use Shape::*;
    let cases: Vec<(Sent, Outcome, Shape, bool, Option<bool>)> = vec![
        (Create, written, Done, false, None),
        (Search, found, Done, false, None),
        (Search, Outcome::NotFound, WriteNow, false, Some(false)),
        (Create, Outcome::Expired, WriteNow, false, None),
        (Search, Outcome::Expired, SearchNow, false, None),
        // A create that may have landed is searched for, never re-sent.
        (Create, unanswered(), ParkThenSearch, true, Some(true)),
        (Create, refused(503, None), ParkThenSearch, true, Some(true)),
        (Create, refused(408, None), ParkThenSearch, true, Some(true)),
        // 429 and a failed connect sent nothing that was applied.
        (Create, refused(429, Some(2_000)), ParkThenWrite, true, None),
        (Create, unreachable(), ParkThenWrite, true, None),
        // An update may go again: same values, and its contact waits.
        (Update, unanswered(), ParkThenWrite, true, None),
        (Update, refused(500, None), ParkThenWrite, true, None),
        (Search, refused(502, None), ParkThenSearch, true, None),
        (Search, unanswered(), ParkThenSearch, true, None),
        // The CRM saying no is final at once.
        (
            Create,
            refused(400, None),
            Fail(FailReason::Rejected),
            false,
            None,
        ),
        (
            Update,
            refused(404, None),
            Fail(FailReason::Rejected),
            false,
            None,
        ),
        (
            Search,
            refused(401, None),
            Fail(FailReason::Rejected),
            false,
            None,
        ),
    ];
    let policy = DispatchPolicy::default();
    for (sent, outcome, want, failed, maybe) in cases {
        let decision = decide(sent, &outcome, 0, 7, &policy, None);
        assert_eq!(shape(&decision.next), want, "{sent:?} {outcome:?}");
        assert_eq!(decision.failed, failed, "{sent:?} {outcome:?}");
        assert_eq!(decision.maybe_applied, maybe, "{sent:?} {outcome:?}");
    }
}

#[test]
fn a_search_after_an_unknown_outcome_waits_the_settle_time() {
    let policy = DispatchPolicy::default();
    let decision = decide(Sent::Create, &unanswered(), 0, 7, &policy, None);
    let Next::Park { delay, .. } = decision.next else {
        panic!("{decision:?}")
    };
    assert!(delay >= policy.settle);
}

#[test]
fn nothing_found_inside_the_settle_window_searches_again_and_never_creates() {
    let policy = DispatchPolicy::default();
    let left = Duration::from_secs(90);
    let inside = decide(Sent::Search, &Outcome::NotFound, 2, 7, &policy, Some(left));
    assert_eq!(
        inside.next,
        Next::Park {
            resume: Resume::Search,
            delay: policy.search_interval
        }
    );
    assert!(
        !inside.failed,
        "not a failure: it counts nothing against the bound"
    );
    assert_eq!(inside.maybe_applied, None, "still maybe applied");
    // The last search of the window goes at its end, not past it.
    let near_end = decide(
        Sent::Search,
        &Outcome::NotFound,
        0,
        7,
        &policy,
        Some(Duration::from_secs(3)),
    );
    assert_eq!(
        near_end.next,
        Next::Park {
            resume: Resume::Search,
            delay: Duration::from_secs(3)
        }
    );
    // After the window, nothing found means it never landed: write.
    for over in [Some(Duration::ZERO), None] {
        let after = decide(Sent::Search, &Outcome::NotFound, 0, 7, &policy, over);
        assert_eq!(after.next, Next::Write);
        assert_eq!(after.maybe_applied, Some(false));
    }
}

proptest! {
    /// Whatever is left of the window, a search that finds nothing inside it
    /// never leads to a write, and its next search is no later than the
    /// window's end.
    #[test]
    fn no_write_inside_the_window(left_ms in 1u64..1_000_000, failures in 0u32..5) {
        let policy = DispatchPolicy::default();
        let left = Duration::from_millis(left_ms);
        let d = decide(Sent::Search, &Outcome::NotFound, failures, 7, &policy, Some(left));
        let Next::Park { resume, delay } = d.next else {
            panic!("{d:?}")
        };
        prop_assert_eq!(resume, Resume::Search);
        prop_assert!(delay <= left && !delay.is_zero());
    }
}

#[test]
fn retry_after_sets_the_least_delay() {
    let policy = DispatchPolicy::default();
    let decision = decide(
        Sent::Update,
        &refused(429, Some(9_000)),
        0,
        7,
        &policy,
        None,
    );
    let Next::Park { delay, .. } = decision.next else {
        panic!("{decision:?}")
    };
    assert!(delay >= Duration::from_secs(9));
}

#[test]
fn a_lost_result_reconciles_at_once() {
    let policy = DispatchPolicy::default();
    let cases = [
        (Sent::Create, Shape::SearchNow, Some(true)),
        (Sent::Update, Shape::WriteNow, None),
        (Sent::Search, Shape::SearchNow, None),
    ];
    for (sent, want, maybe) in cases {
        let decision = decide_lost(sent, 0, &policy);
        assert_eq!(shape(&decision.next), want, "{sent:?}");
        assert!(decision.failed);
        assert_eq!(decision.maybe_applied, maybe);
    }
    let exhausted = decide_lost(Sent::Create, policy.retry.max_failures - 1, &policy);
    assert_eq!(
        shape(&exhausted.next),
        Shape::Fail(FailReason::RetriesExhausted)
    );
}

proptest! {
    /// The bound holds for every transient outcome, and a create whose
    /// outcome is unknown is never written again without a search.
    #[test]
    fn failures_are_bounded_and_creates_never_repeat_blindly(
        failures in 0u32..20,
        status in prop::sample::select(vec![408u16, 429, 500, 502, 503, 504]),
        which in 0usize..3,
        seed: u64,
    ) {
        let policy = DispatchPolicy::default();
        let outcome = match which {
            0 => refused(status, None),
            1 => unanswered(),
            _ => unreachable(),
        };
        for sent in [Sent::Create, Sent::Update, Sent::Search] {
            let decision = decide(sent, &outcome, failures, seed, &policy, None);
            prop_assert!(decision.failed);
            if failures + 1 >= policy.retry.max_failures {
                prop_assert_eq!(shape(&decision.next), Shape::Fail(FailReason::RetriesExhausted));
            } else if let Next::Park { delay, .. } = decision.next {
                prop_assert!(delay <= policy.retry.max_delay.max(policy.settle));
            } else {
                prop_assert!(false, "expected a park: {:?}", decision.next);
            }
            let ambiguous = !matches!(outcome, Outcome::Unreachable { .. }) && status != 429
                || matches!(outcome, Outcome::Unanswered { .. });
            if sent == Sent::Create && ambiguous {
                let writes_again = matches!(
                    decision.next,
                    Next::Write | Next::Park { resume: Resume::Write, .. }
                );
                prop_assert!(!writes_again, "{:?}", decision.next);
            }
        }
    }
}

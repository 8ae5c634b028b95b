//! The dispatcher's state machine on the in-memory driver, branch by
//! branch: what each provider answer, lost answer, timer and restart leads
//! to, and what is emitted. The provider is played by hand: the test takes
//! the effect the dispatcher asked for and hands back a reply.

mod support;

use callstream_launch_dispatcher::ledger::{FailureKind, Outcome, Phase};
use callstream_launch_dispatcher::provider::{CreateOutcome, LookupOutcome};
use callstream_launch_dispatcher::wire::EffectCall;
use callstream_schemas::{ExceptionType, LaunchStatus};
use support::*;

const DEADLINE_MS: i64 = 23_000; // send deadline + request timeout + settle (defaults)

#[test]
fn an_accepted_create_records_the_call_id_and_emits_accepted_keyed_by_contact() {
    let mut driver = driver();
    let cmd = command(1);
    pipe(&mut driver, &cmd);
    // Step (a): `dispatching` is in the ledger before the effect runs.
    let entry = entry(&driver, &cmd.launch_id).unwrap();
    assert_eq!(entry.phase, Phase::Dispatching { seq: 1 });
    assert!(launches(&driver).is_empty());
    let (request, call) = take_one(&mut driver);
    let EffectCall::Create { call: create, .. } = &call else {
        panic!("{call:?}")
    };
    assert_eq!(
        (create.to.as_str(), create.launch_id),
        (cmd.to_number.as_str(), cmd.launch_id)
    );
    assert_eq!(request.id, format!("{}/1", cmd.launch_id));

    reply(&mut driver, request, &created(&call, accepted("CA1")));
    let out = launches(&driver);
    assert_eq!(out.len(), 1);
    let launch = &out[0];
    assert_eq!(
        (
            launch.status,
            launch.provider_call_id.as_deref(),
            launch.attempts,
            launch.reconciled
        ),
        (LaunchStatus::Accepted, Some("CA1"), 1, false)
    );
    assert_eq!(launch.causation_id, Some(cmd.event_id));
    assert_eq!(launch.requested_at.timestamp_millis(), START);
    let produced = driver.records("call-launches");
    assert_eq!(produced[0].key.as_deref(), Some(cmd.contact_id.as_bytes()));
    assert!(exceptions(&driver).is_empty());
    // Final: the reconcile timer is gone, only the ledger's forget timer is left.
    driver.advance_wall_clock_ms(DEADLINE_MS * 10);
    assert!(driver.pending_effects().is_empty());
    assert_eq!(launches(&driver).len(), 1);
}

#[test]
fn a_permanent_refusal_fails_at_once_with_an_exception_and_no_retry() {
    let mut driver = driver();
    let cmd = command(2);
    pipe(&mut driver, &cmd);
    let (request, call) = take_one(&mut driver);
    let refusal = CreateOutcome::Permanent {
        reason: "http_400".into(),
        detail: Some("21211: Invalid 'To' Phone Number".into()),
    };
    reply(&mut driver, request, &created(&call, refusal));
    driver.advance_wall_clock_ms(3_600_000);
    assert!(
        driver.pending_effects().is_empty(),
        "a 4xx must not be retried"
    );
    let out = launches(&driver);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].status, out[0].reason.as_deref()),
        (LaunchStatus::Failed, Some("http_400"))
    );
    let exc = exceptions(&driver);
    assert_eq!(exc.len(), 1);
    assert_eq!(
        (
            exc[0].exception_type,
            exc[0].reason.as_str(),
            exc[0].launch_id
        ),
        (ExceptionType::LaunchFailed, "http_400", Some(cmd.launch_id))
    );
}

#[test]
fn transient_failures_retry_with_growing_delays_up_to_the_bound_then_fail() {
    let mut driver = driver();
    let cmd = command(3);
    pipe(&mut driver, &cmd);
    let policy = config().policy.retry;
    let mut waits = Vec::new();
    for attempt in 1..=policy.max_attempts {
        let (request, call) = take_one(&mut driver);
        assert_eq!(seq_of(&call), attempt);
        let unavailable = CreateOutcome::Transient {
            reason: "http_503".into(),
            detail: None,
        };
        reply(&mut driver, request, &created(&call, unavailable));
        if attempt == policy.max_attempts {
            break;
        }
        // The retry waits on a timer (the partition goes on meanwhile).
        let mut waited = 0;
        while driver.pending_effects().is_empty() {
            driver.advance_wall_clock_ms(50);
            waited += 50;
            assert!(waited <= 60_000, "no retry after {waited} ms");
        }
        let ceiling = policy.ceiling(attempt).as_millis() as i64;
        assert!(
            waited >= ceiling / 2 - 50 && waited <= ceiling + 50,
            "waited {waited} ms, ceiling {ceiling}"
        );
        waits.push(waited);
    }
    assert!(waits.windows(2).all(|w| w[1] >= w[0] / 2), "{waits:?}");
    driver.advance_wall_clock_ms(3_600_000);
    assert!(
        driver.pending_effects().is_empty(),
        "retried past the bound"
    );
    let out = launches(&driver);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].status, out[0].reason.as_deref(), out[0].attempts),
        (
            LaunchStatus::Failed,
            Some("http_503"),
            policy.max_attempts as i32
        )
    );
    let exc = exceptions(&driver);
    assert_eq!(exc.len(), 1);
    assert_eq!(exc[0].exception_type, ExceptionType::ProviderFailure);
}

#[test]
fn other_launches_go_on_while_one_waits_to_retry() {
    let mut driver = driver();
    pipe(&mut driver, &command(10));
    let (request, call) = take_one(&mut driver);
    let busy = CreateOutcome::Transient {
        reason: "http_503".into(),
        detail: None,
    };
    reply(&mut driver, request, &created(&call, busy));
    pipe(&mut driver, &command(11));
    let (request, call) = take_one(&mut driver);
    reply(&mut driver, request, &created(&call, accepted("CA11")));
    assert_eq!(statuses(&driver), [LaunchStatus::Accepted]);
}

#[test]
fn a_request_never_sent_is_retried_without_counting_an_attempt() {
    let mut driver = driver();
    let cmd = command(4);
    pipe(&mut driver, &cmd);
    let (request, call) = take_one(&mut driver);
    let queued = CreateOutcome::NotSent {
        reason: "send_deadline".into(),
    };
    reply(&mut driver, request, &created(&call, queued));
    assert_eq!(entry(&driver, &cmd.launch_id).unwrap().attempts, 0);
    driver.advance_wall_clock_ms(1_000);
    let (request, call) = take_one(&mut driver);
    reply(&mut driver, request, &created(&call, accepted("CA4")));
    assert_eq!(launches(&driver)[0].attempts, 1);
}

#[test]
fn a_timeout_after_sending_is_ambiguous_and_reconciled_to_the_call_found() {
    let mut driver = driver();
    let cmd = command(5);
    pipe(&mut driver, &cmd);
    let (request, call) = take_one(&mut driver);
    let timeout = CreateOutcome::Ambiguous {
        reason: "timeout".into(),
        detail: None,
    };
    reply(&mut driver, request, &created(&call, timeout));
    assert_eq!(statuses(&driver), [LaunchStatus::Ambiguous]);
    assert!(
        driver.pending_effects().is_empty(),
        "look only after the settle margin"
    );
    driver.advance_wall_clock_ms(3_000);
    let (request, call) = take_one(&mut driver);
    let EffectCall::Lookup { find, .. } = &call else {
        panic!("dialed again blindly: {call:?}")
    };
    assert_eq!(
        (find.launch_id, find.to.as_str()),
        (cmd.launch_id, cmd.to_number.as_str())
    );
    assert_eq!(
        find.since_ms,
        START - 120_000,
        "the window starts before the first request"
    );
    let found = LookupOutcome::Found {
        call_id: "CA5".into(),
        status: Some("in-progress".into()),
    };
    reply(&mut driver, request, &looked(&call, found));
    let out = launches(&driver);
    assert_eq!(
        statuses(&driver),
        [LaunchStatus::Ambiguous, LaunchStatus::Accepted]
    );
    assert_eq!(
        (
            out[1].provider_call_id.as_deref(),
            out[1].reconciled,
            out[1].attempts
        ),
        (Some("CA5"), true, 1)
    );
    assert_eq!(out[0].reason.as_deref(), Some("timeout"));
    let audit = audits(&driver);
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].action, "launch.reconciled");
}

#[test]
fn a_lookup_that_finds_no_call_dials_again_and_says_so() {
    let mut driver = driver();
    let cmd = command(6);
    pipe(&mut driver, &cmd);
    let (request, call) = take_one(&mut driver);
    let broken = CreateOutcome::Ambiguous {
        reason: "transport".into(),
        detail: None,
    };
    reply(&mut driver, request, &created(&call, broken));
    driver.advance_wall_clock_ms(3_000);
    let (request, call) = take_one(&mut driver);
    reply(
        &mut driver,
        request,
        &looked(&call, LookupOutcome::NotFound),
    );
    let (request, call) = take_one(&mut driver);
    assert!(matches!(call, EffectCall::Create { .. }), "{call:?}");
    reply(&mut driver, request, &created(&call, accepted("CA6")));
    let out = launches(&driver);
    assert_eq!(
        statuses(&driver),
        [LaunchStatus::Ambiguous, LaunchStatus::Accepted]
    );
    assert_eq!((out[1].attempts, out[1].reconciled), (2, false));
    assert!(audits(&driver)[0]
        .detail
        .as_deref()
        .unwrap()
        .contains("dialing again"));
}

#[test]
fn failing_lookups_back_off_and_give_up_into_an_exception_never_a_dial() {
    let mut config = config();
    config.policy.max_lookups = 3;
    let mut driver = driver_with(&config);
    let cmd = command(7);
    pipe(&mut driver, &cmd);
    let _lost = driver.take_effects();
    driver.advance_wall_clock_ms(DEADLINE_MS);
    for _ in 0..3 {
        let (request, call) = take_one(&mut driver);
        assert!(matches!(call, EffectCall::Lookup { .. }), "{call:?}");
        let down = LookupOutcome::Failed {
            reason: "http_503".into(),
            detail: None,
        };
        reply(&mut driver, request, &looked(&call, down));
        driver.advance_wall_clock_ms(60_000);
    }
    assert!(driver.pending_effects().is_empty());
    let out = launches(&driver);
    assert_eq!(
        statuses(&driver),
        [LaunchStatus::Ambiguous, LaunchStatus::Failed]
    );
    assert_eq!(out[1].reason.as_deref(), Some("reconcile_failed"));
    let e = entry(&driver, &cmd.launch_id).unwrap();
    let Phase::Done {
        outcome: Outcome::Failed { failure },
    } = e.phase
    else {
        panic!()
    };
    assert_eq!(failure.kind, FailureKind::Unresolved);
    assert_eq!(
        exceptions(&driver)[0].exception_type,
        ExceptionType::ProviderFailure
    );
}

#[test]
fn several_unattributable_calls_are_left_to_a_person() {
    let mut driver = driver();
    pipe(&mut driver, &command(8));
    let _lost = driver.take_effects();
    driver.advance_wall_clock_ms(DEADLINE_MS);
    let (request, call) = take_one(&mut driver);
    let unsure = LookupOutcome::Unresolved {
        candidates: vec!["CA1".into(), "CA2".into()],
    };
    reply(&mut driver, request, &looked(&call, unsure));
    let out = launches(&driver);
    assert_eq!(
        out.last().map(|l| (l.status, l.reason.clone())),
        Some((LaunchStatus::Failed, Some("reconcile_ambiguous".into())))
    );
    assert!(out
        .last()
        .unwrap()
        .reason_detail
        .as_deref()
        .unwrap()
        .contains("CA2"));
}

/// The crash between dispatch and outcome: the create was asked for and
/// committed, then the process died (its answer lost, the call placed or
/// not). The restored ledger says `dispatching`; its timer reconciles.
#[test]
fn after_a_restart_a_dispatching_launch_is_looked_up_never_redialed_blindly() {
    for (placed, expected) in [
        (true, LaunchStatus::Accepted),
        (false, LaunchStatus::Accepted),
    ] {
        let mut driver = driver();
        let cmd = command(9);
        pipe(&mut driver, &cmd);
        let _lost_with_the_crash = driver.take_effects();
        driver.restart();
        assert_eq!(
            entry(&driver, &cmd.launch_id).unwrap().phase,
            Phase::Dispatching { seq: 1 }
        );
        driver.advance_wall_clock_ms(DEADLINE_MS - 1);
        assert!(
            driver.pending_effects().is_empty(),
            "reconciled before a sent request could finish"
        );
        driver.advance_wall_clock_ms(1);
        let (request, call) = take_one(&mut driver);
        assert!(matches!(call, EffectCall::Lookup { .. }), "{call:?}");
        let truth = if placed {
            LookupOutcome::Found {
                call_id: "CA9".into(),
                status: None,
            }
        } else {
            LookupOutcome::NotFound
        };
        reply(&mut driver, request, &looked(&call, truth));
        if !placed {
            let (request, call) = take_one(&mut driver);
            assert!(matches!(call, EffectCall::Create { .. }));
            reply(&mut driver, request, &created(&call, accepted("CA9b")));
        }
        let out = launches(&driver);
        assert_eq!(
            out.first().map(|l| (l.status, l.reason.clone())),
            Some((LaunchStatus::Ambiguous, Some("no_result".into())))
        );
        assert_eq!(out.last().map(|l| l.status), Some(expected));
        assert_eq!(out.last().unwrap().reconciled, placed);
    }
}

#[test]
fn late_answers_to_earlier_steps_are_ignored_unless_they_name_the_call() {
    let mut driver = driver();
    let cmd = command(12);
    pipe(&mut driver, &cmd);
    let (create_request, create) = take_one(&mut driver);
    // No answer in time: the timer moves on to a lookup.
    driver.advance_wall_clock_ms(DEADLINE_MS);
    let (lookup_request, lookup) = take_one(&mut driver);
    // A late failure of the create says nothing now.
    let late = CreateOutcome::Transient {
        reason: "http_503".into(),
        detail: None,
    };
    reply(&mut driver, create_request.clone(), &created(&create, late));
    assert_eq!(
        entry(&driver, &cmd.launch_id).unwrap().phase,
        Phase::Reconciling { seq: 2 }
    );
    // A late acceptance is the truth.
    reply(
        &mut driver,
        create_request,
        &created(&create, accepted("CA12")),
    );
    assert_eq!(
        statuses(&driver),
        [LaunchStatus::Ambiguous, LaunchStatus::Accepted]
    );
    // The lookup answering afterwards changes nothing.
    reply(
        &mut driver,
        lookup_request,
        &looked(&lookup, LookupOutcome::NotFound),
    );
    assert!(driver.pending_effects().is_empty());
    assert_eq!(launches(&driver).len(), 2);
}

#[test]
fn a_second_call_id_for_a_finished_launch_changes_nothing() {
    let mut driver = driver();
    pipe(&mut driver, &command(13));
    let (request, call) = take_one(&mut driver);
    reply(
        &mut driver,
        request.clone(),
        &created(&call, accepted("CA13")),
    );
    reply(
        &mut driver,
        request,
        &created(&call, accepted("CA13-other")),
    );
    assert_eq!(launches(&driver).len(), 1);
    assert_eq!(
        launches(&driver)[0].provider_call_id.as_deref(),
        Some("CA13")
    );
}

/// Every permanent failure the registry (`callstream_domain::failures`) gives the
/// launch dispatcher opens its exception.
#[test]
fn every_permanent_failure_of_the_launch_dispatcher_opens_an_exception() {
    use callstream_domain::failures::{Owner, PermanentFailure};
    use callstream_e2e::failures::{assert_opened, no_scenario};
    for failure in PermanentFailure::of(Owner::LaunchDispatcher) {
        let mut driver = driver();
        pipe(&mut driver, &command(40));
        match failure {
            PermanentFailure::LaunchRefused => {
                let (request, call) = take_one(&mut driver);
                let refusal = CreateOutcome::Permanent {
                    reason: "http_400".into(),
                    detail: Some("21211: Invalid 'To' Phone Number".into()),
                };
                reply(&mut driver, request, &created(&call, refusal));
            }
            PermanentFailure::ProviderFailed => {
                for _ in 0..config().policy.retry.max_attempts {
                    while driver.pending_effects().is_empty() {
                        driver.advance_wall_clock_ms(50);
                    }
                    let (request, call) = take_one(&mut driver);
                    let unavailable = CreateOutcome::Transient {
                        reason: "http_503".into(),
                        detail: None,
                    };
                    reply(&mut driver, request, &created(&call, unavailable));
                }
            }
            other => no_scenario("the launch dispatcher", other),
        }
        assert_opened(failure, &exceptions(&driver));
    }
}

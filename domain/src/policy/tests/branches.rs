//! Every branch of the policy, as a table of situations → decisions.

use super::*;

pub(super) const CRM: [&str; 2] = ["crm log_call", "crm update_last_outcome"];

struct Case {
    name: &'static str,
    outcome: Outcome,
    analysis: CallAnalysis,
    flags: ContactFlags,
    attempts_before: u32,
    failures_before: u32,
    expected: Vec<&'static str>,
    state: Option<S>,
}

fn case(name: &'static str, outcome: Outcome) -> Case {
    Case {
        name,
        outcome,
        analysis: CallAnalysis::default(),
        flags: ContactFlags::default(),
        attempts_before: 0,
        failures_before: 0,
        expected: vec![],
        state: None,
    }
}

pub(super) fn with_crm(mut planned: Vec<&'static str>) -> Vec<&'static str> {
    planned.extend(CRM);
    planned
}

fn cases() -> Vec<Case> {
    let in_3h = Some(CallbackRequest {
        requested_at: Some(now() + Duration::hours(3)),
        phrase: "at 6pm".into(),
    });
    let unreadable = Some(CallbackRequest {
        requested_at: None,
        phrase: "when the moon is full".into(),
    });
    let past = Some(CallbackRequest {
        requested_at: Some(now() - Duration::hours(1)),
        phrase: "at 2pm".into(),
    });
    vec![
        Case {
            expected: with_crm(vec!["finish Answered"]),
            state: Some(S::Completed),
            ..case("answered finishes", Outcome::Answered)
        },
        Case {
            expected: with_crm(vec!["plan VoicemailRetry intro +2880m"]),
            state: Some(S::Scheduled),
            ..case(
                "first voicemail retries after the first delay",
                Outcome::Voicemail,
            )
        },
        Case {
            attempts_before: 1,
            expected: with_crm(vec!["plan VoicemailRetry intro +4320m"]),
            state: Some(S::Scheduled),
            ..case("second voicemail uses the second delay", Outcome::Voicemail)
        },
        Case {
            expected: with_crm(vec!["plan NoAnswerRetry intro +1440m"]),
            state: Some(S::Scheduled),
            ..case("no answer retries", Outcome::NoAnswer)
        },
        Case {
            attempts_before: 1,
            expected: with_crm(vec!["plan BusyRetry intro +60m"]),
            state: Some(S::Scheduled),
            ..case("busy retries with its own delays", Outcome::Busy)
        },
        Case {
            attempts_before: 2,
            expected: with_crm(vec![
                "advance intro->reactivation",
                "plan StaleLeadAdvance reactivation +1440m",
            ]),
            state: Some(S::Scheduled),
            ..case("last attempt advances a stale lead", Outcome::NoAnswer)
        },
        Case {
            analysis: CallAnalysis {
                callback: in_3h.clone(),
                ..Default::default()
            },
            expected: with_crm(vec!["plan Callback intro +180m asked +180m"]),
            state: Some(S::Scheduled),
            ..case("callback at the named time", Outcome::Answered)
        },
        Case {
            analysis: CallAnalysis {
                callback: past,
                ..Default::default()
            },
            expected: with_crm(vec!["plan Callback intro +0m asked +-60m"]),
            state: Some(S::Scheduled),
            ..case(
                "a past callback time is never planned earlier than now",
                Outcome::Answered,
            )
        },
        Case {
            analysis: CallAnalysis {
                callback: unreadable,
                ..Default::default()
            },
            expected: with_crm(vec!["plan Callback intro +120m"]),
            state: Some(S::Scheduled),
            ..case(
                "unreadable callback time falls back to two hours",
                Outcome::Answered,
            )
        },
        Case {
            analysis: CallAnalysis {
                call_me_later: true,
                ..Default::default()
            },
            expected: with_crm(vec!["plan CallMeLater intro +120m"]),
            state: Some(S::Scheduled),
            ..case("call me later plans two hours out", Outcome::Answered)
        },
        Case {
            attempts_before: 2,
            analysis: CallAnalysis {
                callback: in_3h.clone(),
                ..Default::default()
            },
            expected: with_crm(vec!["plan Callback intro +180m asked +180m"]),
            state: Some(S::Scheduled),
            ..case("a callback beats exhausted attempts", Outcome::Voicemail)
        },
        Case {
            analysis: CallAnalysis {
                do_not_call: true,
                callback: in_3h.clone(),
                ..Default::default()
            },
            expected: with_crm(vec![
                "mark_dnc",
                "cancel_future",
                "finish DoNotCallRequested",
            ]),
            state: Some(S::Completed),
            ..case("do-not-call wins over a callback", Outcome::Answered)
        },
        Case {
            analysis: CallAnalysis {
                do_not_call: true,
                wants_person: true,
                ..Default::default()
            },
            expected: with_crm(vec![
                "mark_dnc",
                "cancel_future",
                "exception PersonRequested urgent=true",
                "finish DoNotCallRequested",
            ]),
            state: Some(S::Completed),
            ..case(
                "do-not-call still tells a rep a person was asked for",
                Outcome::Answered,
            )
        },
        Case {
            flags: ContactFlags {
                do_not_call: true,
                ..Default::default()
            },
            analysis: CallAnalysis {
                do_not_call: true,
                ..Default::default()
            },
            expected: with_crm(vec![
                "mark_dnc",
                "cancel_future",
                "finish DoNotCallRequested",
            ]),
            state: Some(S::Completed),
            ..case(
                "a repeated do-not-call request is still recorded",
                Outcome::Answered,
            )
        },
        Case {
            analysis: CallAnalysis {
                wants_person: true,
                ..Default::default()
            },
            expected: with_crm(vec!["exception PersonRequested urgent=true", "hold"]),
            state: Some(S::NeedsReview),
            ..case(
                "a person request opens an urgent exception and holds",
                Outcome::Answered,
            )
        },
        Case {
            analysis: CallAnalysis {
                wants_person: true,
                callback: in_3h,
                ..Default::default()
            },
            expected: with_crm(vec![
                "exception PersonRequested urgent=true",
                "hold",
                "plan Callback intro +180m asked +180m",
            ]),
            state: Some(S::Scheduled),
            ..case(
                "a person request keeps the callback asked for in the same call",
                Outcome::Answered,
            )
        },
        Case {
            flags: ContactFlags {
                urgent_open: true,
                ..Default::default()
            },
            expected: CRM.to_vec(),
            state: Some(S::NeedsReview),
            ..case("an open urgent request holds the retry", Outcome::Voicemail)
        },
        Case {
            flags: ContactFlags {
                blocked: true,
                ..Default::default()
            },
            expected: CRM.to_vec(),
            ..case("a blocked contact is only logged", Outcome::Voicemail)
        },
        Case {
            flags: ContactFlags {
                enrolled: true,
                ..Default::default()
            },
            expected: CRM.to_vec(),
            ..case("an enrolled contact is only logged", Outcome::NoAnswer)
        },
        Case {
            flags: ContactFlags {
                spam: true,
                ..Default::default()
            },
            expected: CRM.to_vec(),
            ..case("a spam contact is only logged", Outcome::Busy)
        },
        Case {
            flags: ContactFlags {
                do_not_call: true,
                ..Default::default()
            },
            expected: CRM.to_vec(),
            ..case("a do-not-call contact is only logged", Outcome::Answered)
        },
        Case {
            expected: CRM.to_vec(),
            ..case("a canceled call is only logged", Outcome::Canceled)
        },
        Case {
            expected: with_crm(vec!["plan ProviderFailureRetry intro +1m"]),
            state: Some(S::Scheduled),
            ..case(
                "a provider failure retries after the first backoff",
                Outcome::Failed,
            )
        },
        Case {
            failures_before: 2,
            expected: with_crm(vec!["plan ProviderFailureRetry intro +4m"]),
            state: Some(S::Scheduled),
            ..case("the backoff doubles", Outcome::Failed)
        },
        Case {
            failures_before: 3,
            expected: with_crm(vec![
                "exception ProviderFailuresExhausted urgent=false",
                "hold",
            ]),
            state: Some(S::NeedsReview),
            ..case(
                "provider failures past the bound open an exception",
                Outcome::Failed,
            )
        },
    ]
}

#[test]
fn every_branch_decides_as_tabled() {
    let policy = policy();
    for c in cases() {
        let mut i = input(c.outcome, &c.analysis);
        i.flags = c.flags;
        i.counters = Counters {
            attempts_in_campaign: c.attempts_before,
            consecutive_provider_failures: c.failures_before,
        };
        let steps = decide(&policy, &i).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(summary(&steps.decisions), c.expected, "{}", c.name);
        assert_eq!(steps.next_state, c.state, "{}", c.name);
        // Nothing is ever planned before the outcome.
        for d in &steps.decisions {
            if let Decision::PlanCall(call) = d {
                assert!(call.earliest >= now(), "{}", c.name);
            }
        }
    }
}

#[test]
fn the_last_attempt_finishes_when_there_is_no_next_campaign() {
    let policy = CampaignPolicy::default();
    let analysis = CallAnalysis::default();
    let mut i = input(Outcome::Voicemail, &analysis);
    i.counters.attempts_in_campaign = 2;
    let steps = decide(&policy, &i).unwrap();
    assert_eq!(
        summary(&steps.decisions),
        with_crm(vec!["finish AttemptsExhausted"])
    );
    assert_eq!(steps.next_state, Some(S::Completed));
    assert_eq!(steps.counters.attempts_in_campaign, 3);
}

#[test]
fn counters_count_attempts_and_runs_of_failures() {
    let policy = policy();
    let analysis = CallAnalysis::default();
    let before = Counters {
        attempts_in_campaign: 1,
        consecutive_provider_failures: 2,
    };
    let cases = [
        (Outcome::Answered, 2, 0),
        (Outcome::Voicemail, 2, 0),
        (Outcome::NoAnswer, 2, 0),
        (Outcome::Busy, 2, 0),
        (Outcome::Failed, 1, 3),
        (Outcome::Canceled, 1, 2),
    ];
    for (outcome, attempts, failures) in cases {
        let mut i = input(outcome, &analysis);
        i.counters = before;
        let got = decide(&policy, &i).unwrap().counters;
        assert_eq!(
            got,
            Counters {
                attempts_in_campaign: attempts,
                consecutive_provider_failures: failures
            },
            "{outcome}"
        );
    }
}

#[test]
fn in_flight_outcomes_and_bad_config_are_typed_errors() {
    let analysis = CallAnalysis::default();
    for outcome in [Outcome::Queued, Outcome::Ringing, Outcome::InProgress] {
        assert_eq!(
            decide(&policy(), &input(outcome, &analysis)),
            Err(PolicyError::NotFinal(outcome))
        );
    }
    let bad = CampaignPolicy {
        next_campaign: Some("intro".into()),
        ..policy()
    };
    assert_eq!(
        decide(&bad, &input(Outcome::Answered, &analysis)),
        Err(PolicyError::Config(PolicyConfigError::NextCampaignIsItself))
    );
}

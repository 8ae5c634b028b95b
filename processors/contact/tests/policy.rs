//! Every branch of the next-step policy, through the processor on the
//! in-memory driver: what a final call outcome sends to the scheduler, the
//! CRM and the exceptions, and where it leaves the contact.

mod support;

use callstream_schemas::*;
use support::*;

/// Launches the contact's first call, then reports `event` for it.
fn after_call<F>(event: F) -> (Harness<impl callstream_runtime::Processor>, LaunchCommand)
where
    F: FnOnce(uuid::Uuid) -> CallEvent,
{
    let mut h = harness();
    let launch = h.launched("c1");
    h.call(&event(launch.launch_id));
    (h, launch)
}

fn every_day_settings(max_attempts: i32, next: Option<&str>) -> CampaignSettings {
    CampaignSettings {
        windows: vec![CallingWindow {
            days_of_week: (1..=7).collect(),
            start_minute: 8 * 60,
            end_minute: 21 * 60,
        }],
        retry_delays_minutes: vec![60, 120],
        max_attempts,
        next_campaign_id: next.map(str::to_owned),
        move_buffer_minutes: 10,
    }
}

#[test]
fn voicemail_no_answer_and_busy_retry_after_the_campaign_delay() {
    let cases = [
        (
            "completed",
            Some("machine_end_beep"),
            JobOrigin::VoicemailRetry,
            "voicemail_retry",
            "voicemail",
        ),
        (
            "no-answer",
            None,
            JobOrigin::NoAnswerRetry,
            "no_answer_retry",
            "no_answer",
        ),
        ("busy", None, JobOrigin::BusyRetry, "busy_retry", "busy"),
    ];
    for (status, by, origin, reason, outcome) in cases {
        let ended = t0() + minutes(7);
        let (h, launch) = after_call(|l| call_event("c1", "CA1", Some(l), status, by, ended));
        let plans = h.plans();
        assert_eq!(plans.len(), 2, "{status}: entry and retry");
        let retry = &plans[1];
        assert_eq!(retry.origin, origin, "{status}");
        assert_eq!(retry.reason, reason);
        // The built-in policy waits 2,880 minutes before the first retry.
        assert_eq!(retry.earliest_at, Some(ended + minutes(2880)), "{status}");
        assert_eq!(retry.attempt, Some(2));
        assert_eq!(
            retry.replaces_job_id,
            Some(launch.job_id),
            "lineage to the call's job"
        );
        assert_eq!(
            retry.time_zone.as_deref(),
            Some("America/Chicago"),
            "area code 312"
        );
        assert_eq!(retry.time_zone_source, Some(ZoneSource::AreaCode));
        let state = h.state("c1");
        assert_eq!(state.workflow_state, WorkflowState::Scheduled);
        assert_eq!(state.workflow_step, 1, "the retry begins a new step");
        let old = job(&state, launch.job_id);
        assert_eq!(old.state, JobState::Completed);
        assert_eq!(old.outcome.map(|o| o.as_str()), Some(outcome));
        assert_eq!(old.replaced_by_job_id, Some(retry.job_id));
        assert_eq!(state.attempts[0].attempts, 1);
        let actions: Vec<_> = h.crm().iter().map(|c| c.action).collect();
        assert_eq!(
            actions,
            [CrmAction::LogCall, CrmAction::UpdateContact],
            "{status}"
        );
    }
}

#[test]
fn an_answered_call_finishes_and_tells_the_crm_with_stable_keys() {
    let ended = t0() + minutes(9);
    let analysis = CallAnalysis {
        summary: Some("Keen on the spring intake".into()),
        interested: Some(true),
        ..CallAnalysis::default()
    };
    let (h, launch) = after_call(|l| answered("c1", "CA1", Some(l), analysis, ended));
    assert_eq!(h.plans().len(), 1, "nothing planned after the entry");
    let state = h.state("c1");
    assert_eq!(state.workflow_state, WorkflowState::Completed);
    let crm = h.crm();
    let actions: Vec<_> = crm.iter().map(|c| c.action).collect();
    assert_eq!(
        actions,
        [
            CrmAction::LogCall,
            CrmAction::AddNote,
            CrmAction::UpdateContact,
            CrmAction::CreateTask
        ]
    );
    assert_eq!(crm[1].body.as_deref(), Some("Keen on the spring intake"));
    assert_eq!(crm[3].due_at, Some(ended + minutes(1440)));
    assert_eq!(crm[2].properties["callstream_last_outcome"], "answered");
    for command in &crm {
        let key = callstream_domain::policy::idempotency_key(
            TENANT,
            "CA1",
            match command.action {
                CrmAction::LogCall => "log_call",
                CrmAction::AddNote => "add_note",
                CrmAction::UpdateContact => "update_last_outcome",
                _ => "create_follow_up_task",
            },
        );
        assert_eq!(command.operation_id, key, "{:?}", command.action);
        assert_eq!(command.fact_at, ended);
        assert_eq!(command.call_id.as_deref(), Some("CA1"));
        assert_eq!(command.campaign_id.as_deref(), Some(CAMPAIGN));
    }
    assert_eq!(launch.attempt, 1);
}

#[test]
fn exhausted_attempts_advance_to_the_next_campaign_or_finish() {
    for next in [Some("nurture"), None] {
        let mut h = harness();
        h.campaign_settings(CAMPAIGN, every_day_settings(1, next));
        let launch = h.launched("c1");
        let ended = t0() + minutes(6);
        h.call(&call_event(
            "c1",
            "CA1",
            Some(launch.launch_id),
            "no-answer",
            None,
            ended,
        ));
        let state = h.state("c1");
        match next {
            Some(next) => {
                let plan = h.plans().pop().unwrap();
                assert_eq!(plan.origin, JobOrigin::StaleLeadAdvance);
                assert_eq!(plan.campaign_id, next);
                assert_eq!(plan.reason, "attempts_exhausted");
                assert_eq!(
                    plan.attempt,
                    Some(1),
                    "attempts in the next campaign start at zero"
                );
                assert_eq!(plan.earliest_at, Some(ended + minutes(1440)));
                assert_eq!(state.campaign_id.as_deref(), Some(next));
                let audit = h.audits().pop().unwrap();
                assert_eq!(audit.action, "contact.campaign_advanced");
                assert_eq!(audit.reason.as_deref(), Some("attempts_exhausted"));
                assert_eq!(state.workflow_state, WorkflowState::Scheduled);
            }
            None => {
                assert_eq!(h.plans().len(), 1, "no further call");
                assert_eq!(state.workflow_state, WorkflowState::Completed);
            }
        }
    }
}

#[test]
fn retries_use_the_campaign_delays_from_control() {
    let mut h = harness();
    h.campaign_settings(CAMPAIGN, every_day_settings(3, None));
    let launch = h.launched("c1");
    let ended = t0() + minutes(6);
    h.call(&call_event(
        "c1",
        "CA1",
        Some(launch.launch_id),
        "busy",
        None,
        ended,
    ));
    let retry = h.plans().pop().unwrap();
    assert_eq!(
        retry.earliest_at,
        Some(ended + minutes(60)),
        "first delay of [60, 120]"
    );
    assert_eq!(
        retry.windows.len(),
        1,
        "the campaign's windows travel with the request"
    );
    assert_eq!(retry.windows[0].start_minute, 480);
    // The retry's call is busy too: the second delay.
    let due = retry.earliest_at.unwrap();
    let second = h.due("c1", &retry, due).unwrap();
    let ended = due + minutes(2);
    h.call(&call_event(
        "c1",
        "CA2",
        Some(second.launch_id),
        "busy",
        None,
        ended,
    ));
    let again = h.plans().pop().unwrap();
    assert_eq!(again.earliest_at, Some(ended + minutes(120)));
    assert_eq!(again.attempt, Some(3));
}

#[test]
fn a_callback_is_read_in_the_leads_zone_and_kept_on_the_job() {
    // 10:05 in Chicago: "tomorrow at 10" is 10:00 CST the next day, 16:00 UTC.
    let ended = t0() + minutes(5);
    let cases = [
        (
            "tomorrow at 10",
            Some(at(2024, 3, 6, 16, 0)),
            at(2024, 3, 6, 16, 0),
            "callback_requested",
        ),
        (
            "3pm",
            Some(at(2024, 3, 5, 21, 0)),
            at(2024, 3, 5, 21, 0),
            "callback_requested",
        ),
        (
            "when the moon is blue",
            None,
            ended + minutes(120),
            "callback_time_unresolved",
        ),
    ];
    for (phrase, requested, earliest, reason) in cases {
        let analysis = CallAnalysis {
            callback_requested: true,
            callback_phrase: Some(phrase.into()),
            ..CallAnalysis::default()
        };
        let (h, _) = after_call(|l| answered("c1", "CA1", Some(l), analysis, ended));
        let plan = h.plans().pop().unwrap();
        assert_eq!(plan.origin, JobOrigin::Callback, "{phrase}");
        assert_eq!(plan.reason, reason, "{phrase}");
        assert_eq!(plan.requested_at, requested, "{phrase}");
        assert_eq!(plan.earliest_at, Some(earliest), "{phrase}");
        let detail = plan.reason_detail.unwrap();
        assert!(detail.contains(phrase), "{detail}");
        if requested.is_some() {
            assert!(detail.contains("America/Chicago"), "{detail}");
        }
    }
}

#[test]
fn call_me_later_without_a_time_plans_two_hours_out() {
    let ended = t0() + minutes(5);
    let analysis = CallAnalysis {
        callback_requested: true,
        ..CallAnalysis::default()
    };
    let (h, _) = after_call(|l| answered("c1", "CA1", Some(l), analysis, ended));
    let plan = h.plans().pop().unwrap();
    assert_eq!(plan.origin, JobOrigin::Callback);
    assert_eq!(plan.reason, "call_me_later");
    assert_eq!(plan.earliest_at, Some(ended + minutes(120)));
    assert_eq!(plan.requested_at, None);
}

#[test]
fn do_not_call_marks_the_contact_and_cancels_its_future_jobs() {
    let mut h = harness();
    let launch = h.launched("c1");
    let other = {
        h.command(&launch_request("c1", "nurture", "r2"), t0() + minutes(1));
        h.plans().pop().unwrap()
    };
    let analysis = CallAnalysis {
        do_not_call: true,
        ..CallAnalysis::default()
    };
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        analysis,
        t0() + minutes(8),
    ));
    let cancels = h.cancels();
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0].job_id, other.job_id);
    assert_eq!(cancels[0].reason, "do_not_call_requested");
    let state = h.state("c1");
    assert!(state.do_not_call);
    assert_eq!(state.workflow_state, WorkflowState::Completed);
    assert_eq!(job(&state, other.job_id).state, JobState::Cancelled);
    assert_eq!(h.plans().len(), 2, "nothing new planned");
    assert!(!h.crm().is_empty(), "the call is still logged");
}

/// Issue 19: an opt-out in the lead's words counts as one whatever the analysis's flag says:
/// every future job of every campaign is cancelled in the same transaction as the result.
#[test]
fn an_opt_out_in_the_leads_words_cancels_every_campaigns_jobs() {
    for (summary, request) in [
        (Some("Lead asked to be removed from the list."), None),
        (None, Some("stop")),
        (Some("said: take me off your list"), None),
    ] {
        let mut h = harness();
        let launch = h.launched("c1");
        h.command(&launch_request("c1", "nurture", "r2"), t0() + minutes(1));
        let other = h.plans().pop().unwrap();
        let analysis = CallAnalysis {
            do_not_call: false,
            summary: summary.map(str::to_owned),
            request_phrase: request.map(str::to_owned),
            ..CallAnalysis::default()
        };
        let before = h.crm().len();
        h.call(&answered(
            "c1",
            "CA1",
            Some(launch.launch_id),
            analysis,
            t0() + minutes(8),
        ));
        let cancels = h.cancels();
        assert_eq!(cancels.len(), 1, "{summary:?} {request:?}");
        assert_eq!(cancels[0].job_id, other.job_id);
        assert_eq!(cancels[0].reason, "do_not_call_requested");
        let state = h.state("c1");
        assert!(state.do_not_call, "{summary:?} {request:?}");
        assert!(h.crm().len() > before, "the CRM is told");
    }
}

#[test]
fn a_request_for_a_person_opens_an_urgent_exception_and_holds_calls() {
    let analysis = CallAnalysis {
        wants_person: true,
        request_phrase: Some("let me talk to a human".into()),
        ..CallAnalysis::default()
    };
    let (h, launch) = after_call(|l| answered("c1", "CA1", Some(l), analysis, t0() + minutes(8)));
    let exceptions = h.exceptions();
    assert_eq!(exceptions.len(), 1);
    let e = &exceptions[0];
    assert_eq!(e.status, ExceptionStatus::Open);
    assert_eq!(e.exception_type, ExceptionType::UrgentRequest);
    assert!(e.urgent);
    assert_eq!(e.reason, "person_requested");
    assert_eq!(e.launch_id, Some(launch.launch_id));
    assert!(e.detail.as_deref().unwrap().contains("talk to a human"));
    let state = h.state("c1");
    assert!(state.urgent_request_open);
    assert_eq!(state.hold_exception_id, Some(e.exception_id));
    assert_eq!(state.workflow_state, WorkflowState::NeedsReview);
    assert_eq!(h.plans().len(), 1, "calls are held: no retry");
}

#[test]
fn provider_failures_retry_with_jittered_backoff_then_open_an_exception() {
    let mut h = harness();
    let mut launch = h.launched("c1");
    let mut now = t0() + minutes(5);
    for failure in 1..=3u32 {
        let call = format!("CA{failure}");
        h.call(&call_event(
            "c1",
            &call,
            Some(launch.launch_id),
            "failed",
            None,
            now,
        ));
        let retry = h.plans().pop().unwrap();
        assert_eq!(retry.origin, JobOrigin::FailureRetry, "failure {failure}");
        assert_eq!(
            retry.attempt,
            Some(1),
            "a failed placement is not an attempt"
        );
        let wait = retry.earliest_at.unwrap() - now;
        let full = 60i64 << (failure - 1);
        assert!(
            wait.num_seconds() >= full / 2 && wait.num_seconds() <= full,
            "failure {failure}: waited {wait}"
        );
        now = retry.earliest_at.unwrap();
        launch = h.due("c1", &retry, now).unwrap();
    }
    h.call(&call_event(
        "c1",
        "CA4",
        Some(launch.launch_id),
        "failed",
        None,
        now,
    ));
    let e = h.exceptions().pop().unwrap();
    assert_eq!(e.exception_type, ExceptionType::ProviderFailure);
    assert!(!e.urgent);
    let state = h.state("c1");
    assert_eq!(state.workflow_state, WorkflowState::NeedsReview);
    assert_eq!(
        state.hold_reason.as_deref(),
        Some("provider_failures_exhausted")
    );
    assert_eq!(state.attempts[0].consecutive_provider_failures, 4);
}

#[test]
fn a_canceled_call_only_reaches_the_crm() {
    let (h, _) =
        after_call(|l| call_event("c1", "CA1", Some(l), "canceled", None, t0() + minutes(6)));
    assert_eq!(h.plans().len(), 1);
    assert!(h.exceptions().is_empty());
    assert_eq!(h.crm().len(), 2);
}

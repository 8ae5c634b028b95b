//! The contact processor's side of the promises to the people called (issue
//! 14), on the in-memory driver: a lead's opt-out is final, a CRM update can
//! stop calls without a launch, every launch outcome returns to the
//! workflow, an urgent hold keeps the callback the lead asked for, and every
//! candidate zone reaches the scheduler. Each test fails on the code before
//! that issue.

mod support;

use callstream_e2e::fixtures;
use callstream_schemas::*;
use support::*;

fn analysis_opting_out() -> CallAnalysis {
    CallAnalysis {
        do_not_call: true,
        summary: Some("Asked not to be called again".into()),
        ..CallAnalysis::default()
    }
}

/// A command that says something of the contact, by `actor`.
fn details_command(
    kind: ContactCommandKind,
    contact: &str,
    name: &str,
    actor: Actor,
    details: ContactDetails,
) -> ContactCommand {
    ContactCommand {
        event_id: fixtures::id(&format!("{kind}/{contact}/{name}")),
        actor,
        contact: Some(details),
        reason: Some(format!("test: {name}")),
        ..command(kind, contact, name)
    }
}

fn crm_says(do_not_call: bool) -> ContactDetails {
    ContactDetails {
        do_not_call: Some(do_not_call),
        ..ContactDetails::default()
    }
}

/// Hole 1: the lead said "stop" in a call; a later launch request whose CRM
/// record says `do_not_call: false` is refused, and nothing is planned.
#[test]
fn a_crm_false_never_lifts_the_leads_own_opt_out() {
    let mut h = harness();
    let launch = h.launched("c1");
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        analysis_opting_out(),
        t0() + minutes(6),
    ));
    let plans = h.plans().len();
    let mut again = launch_request("c1", "nurture", "r2");
    again.contact.as_mut().unwrap().do_not_call = Some(false);
    h.command(&again, t0() + minutes(30));
    let audit = h.audits().pop().unwrap();
    assert_eq!(audit.result, AuditResult::Rejected);
    assert_eq!(audit.reason.as_deref(), Some("do_not_call"));
    assert_eq!(h.plans().len(), plans, "nothing planned");
    assert!(h.state("c1").do_not_call);

    // A contact update saying the same changes nothing either.
    let update = details_command(
        ContactCommandKind::ContactUpdate,
        "c1",
        "u1",
        Actor {
            kind: ActorKind::Integration,
            id: "launch-intake".into(),
        },
        crm_says(false),
    );
    h.command(&update, t0() + minutes(31));
    assert!(h.state("c1").do_not_call);
    h.command(&launch_request("c1", "nurture", "r3"), t0() + minutes(32));
    assert_eq!(h.plans().len(), plans, "still nothing planned");

    // Only an operator's lift, with a reason, undoes it, and it is audited.
    let mut lift = details_command(
        ContactCommandKind::LiftRestriction,
        "c1",
        "lift",
        Actor::operator("ops@acme"),
        crm_says(false),
    );
    lift.reason = None;
    h.command(&lift, t0() + minutes(33));
    assert_eq!(
        h.audits().pop().unwrap().reason.as_deref(),
        Some("reason_required")
    );
    assert!(h.state("c1").do_not_call);
    lift.event_id = fixtures::id("lift-with-reason");
    lift.reason = Some("the lead called back and asked to be enrolled".into());
    h.command(&lift, t0() + minutes(34));
    let audit = h.audits().pop().unwrap();
    assert_eq!(audit.result, AuditResult::Applied);
    assert_eq!(audit.reason.as_deref(), Some("restriction_lifted"));
    assert!(!h.state("c1").do_not_call);
    h.command(&launch_request("c1", "nurture", "r4"), t0() + minutes(35));
    assert_eq!(h.plans().len(), plans + 1, "callable again");
}

/// Found by the demo: the platform posts the analysis in a webhook of its own, and
/// the status callback often comes first and records the call's result. The lead's
/// "stop" in the later report is kept all the same (it was dropped as a second
/// result of the call), so the CRM's `false` that follows plans nothing.
#[test]
fn a_stop_in_an_analysis_that_comes_after_the_status_callback_is_kept() {
    let mut h = harness();
    let launch = h.launched("c1");
    let at = t0() + minutes(6);
    let status = call_event(
        "c1",
        "CA1",
        Some(launch.launch_id),
        "completed",
        Some("human"),
        at,
    );
    h.call(&status);
    h.command(&launch_request("c1", "nurture", "r-later"), at + minutes(1));
    let later = h.plans().pop().expect("a job planned after the call");
    assert_eq!(later.campaign_id, "nurture");
    let mut analysis = answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        analysis_opting_out(),
        at,
    );
    analysis.event_id = fixtures::id("analysis/CA1");
    analysis.integration_id = Some("ai-analysis".into());
    analysis.provider = "json".into();
    analysis.provider_status = "answered".into();
    h.call(&analysis);
    assert!(h.state("c1").do_not_call, "the stop is kept");
    let cancelled = h.cancels();
    assert!(
        cancelled.iter().any(|c| c.job_id == later.job_id),
        "the job planned meanwhile is cancelled: {cancelled:?}"
    );

    let plans = h.plans().len();
    let mut again = launch_request("c1", "nurture", "r2");
    again.contact.as_mut().unwrap().do_not_call = Some(false);
    h.command(&again, t0() + minutes(30));
    assert_eq!(h.plans().len(), plans, "the CRM's false plans nothing");
    assert!(h.state("c1").do_not_call);
}

/// Hole 2: a CRM update saying "do not call" cancels every future job of
/// the contact at once, each with the restriction as its reason.
#[test]
fn a_crm_update_cancels_every_future_job_at_once() {
    let mut h = harness();
    let first = h.enter("c1", CAMPAIGN);
    h.command(&launch_request("c1", "nurture", "r2"), t0() + minutes(1));
    let second = h.plans().pop().unwrap();
    let update = details_command(
        ContactCommandKind::ContactUpdate,
        "c1",
        "stop",
        Actor {
            kind: ActorKind::Integration,
            id: "launch-intake".into(),
        },
        crm_says(true),
    );
    h.command(&update, t0() + minutes(2));
    let cancels = h.cancels();
    let cancelled: Vec<_> = cancels.iter().map(|c| c.job_id).collect();
    assert!(cancelled.contains(&first.job_id) && cancelled.contains(&second.job_id));
    assert!(cancels.iter().all(|c| c.reason == "do_not_call"));
    let state = h.state("c1");
    for job_id in [first.job_id, second.job_id] {
        assert_eq!(job(&state, job_id).state, JobState::Cancelled);
    }
    assert_eq!(state.workflow_state, WorkflowState::Failed);
    assert_eq!(
        h.audits().pop().unwrap().reason.as_deref(),
        Some("contact_updated")
    );
    // Its slot comes anyway (the scheduler already sent it): no launch.
    assert!(h.due("c1", &first, t0() + minutes(5)).is_none());
}

/// A restriction that comes while a launch is on its way to the dispatcher
/// stops it there (on the launch's key, behind it); the held outcome that
/// comes back ends the job, nothing is planned.
#[test]
fn a_restriction_stops_a_launch_already_sent() {
    let mut h = harness();
    let launch = h.launched("c1");
    let update = details_command(
        ContactCommandKind::ContactUpdate,
        "c1",
        "block",
        Actor {
            kind: ActorKind::Integration,
            id: "launch-intake".into(),
        },
        ContactDetails {
            blocked: Some(true),
            ..ContactDetails::default()
        },
    );
    h.command(&update, t0() + minutes(5));
    let stops = h.stops();
    let stop = stops.last().unwrap();
    assert_eq!(stop.kind, ContactCommandKind::CancelFutureJobs);
    assert_eq!(stop.launch_id, Some(launch.launch_id));
    assert_eq!(stop.reason.as_deref(), Some("blocked_number"));
    // On the launch's own key (tenant and number), so it reaches the dispatcher behind it.
    let keys = h.launch_keys();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);
    assert_eq!(
        keys[0],
        callstream_kit::keys::phone_key(TENANT, &launch.to_number)
    );
    let plans = h.plans().len();
    let held = CallLaunch {
        reason: Some("blocked_number".into()),
        ..fixtures::call_launch(
            TENANT,
            "c1",
            CAMPAIGN,
            launch.launch_id,
            launch.job_id,
            LaunchStatus::Held,
            t0() + minutes(6),
        )
    };
    h.launch_outcome(&held);
    let state = h.state("c1");
    assert_eq!(state.workflow_state, WorkflowState::Failed);
    assert_eq!(job(&state, launch.job_id).state, JobState::Cancelled);
    assert_eq!(h.plans().len(), plans, "nothing planned");
}

/// Hole 6: every launch outcome returns to the workflow; none leaves the
/// contact in `dispatching`.
#[test]
fn every_launch_outcome_moves_the_workflow_on() {
    let outcome = |launch: &LaunchCommand, status: LaunchStatus, reason: Option<&str>| CallLaunch {
        reason: reason.map(str::to_owned),
        ..fixtures::call_launch(
            TENANT,
            &launch.contact_id,
            &launch.campaign_id,
            launch.launch_id,
            launch.job_id,
            status,
            t0() + minutes(6),
        )
    };
    let cases = [
        (
            LaunchStatus::Accepted,
            None,
            WorkflowState::AwaitingResult,
            JobState::Launched,
        ),
        (
            LaunchStatus::Failed,
            Some("invalid_number"),
            WorkflowState::Failed,
            JobState::Cancelled,
        ),
        (
            LaunchStatus::Failed,
            Some("http_503"),
            WorkflowState::NeedsReview,
            JobState::Cancelled,
        ),
        (
            LaunchStatus::Failed,
            Some("reconcile_failed"),
            WorkflowState::NeedsReview,
            JobState::Cancelled,
        ),
        (
            LaunchStatus::Shadow,
            None,
            WorkflowState::Completed,
            JobState::Completed,
        ),
        (
            LaunchStatus::Held,
            Some("system_paused"),
            WorkflowState::Scheduled,
            JobState::Held,
        ),
        (
            LaunchStatus::Held,
            Some("slot_passed"),
            WorkflowState::Scheduled,
            JobState::Replaced,
        ),
        (
            LaunchStatus::Held,
            Some("window_closed"),
            WorkflowState::Scheduled,
            JobState::Replaced,
        ),
    ];
    for (status, reason, workflow, job_state) in cases {
        let mut h = harness();
        let launch = h.launched("c1");
        assert_eq!(h.state("c1").workflow_state, WorkflowState::Dispatching);
        let plans = h.plans().len();
        let report = outcome(&launch, status, reason);
        h.launch_outcome(&report);
        let state = h.state("c1");
        let label = format!("{status:?} {reason:?}");
        assert_eq!(state.workflow_state, workflow, "{label}");
        assert_eq!(job(&state, launch.job_id).state, job_state, "{label}");
        if job_state == JobState::Replaced {
            let plan = h.plans().pop().unwrap();
            assert_eq!(h.plans().len(), plans + 1, "{label}: planned again");
            assert_eq!(plan.replaces_job_id, Some(launch.job_id), "{label}");
            assert_eq!(Some(plan.reason.as_str()), reason, "{label}");
        } else {
            assert_eq!(h.plans().len(), plans, "{label}: nothing planned yet");
        }
        // The same report again changes nothing.
        let outputs = h.output_count();
        h.launch_outcome(&report);
        assert_eq!(h.output_count(), outputs, "{label}: a duplicate");
    }

    // A pause that held the launch lifts: the job is planned again.
    let mut h = harness();
    h.pause(ControlSetting::SystemPause, None, true);
    let plan = h.enter("c1", CAMPAIGN);
    h.pause(ControlSetting::SystemPause, None, false);
    let launch = h.due("c1", &plan, t0() + minutes(5)).unwrap();
    h.pause(ControlSetting::SystemPause, None, true);
    h.launch_outcome(&outcome(&launch, LaunchStatus::Held, Some("system_paused")));
    h.pause(ControlSetting::SystemPause, None, false);
    let before = h.plans().len();
    h.driver
        .advance_wall_clock_ms(minutes(2).num_milliseconds());
    let replan = h.plans().pop().unwrap();
    assert_eq!(h.plans().len(), before + 1);
    assert_eq!(replan.origin, JobOrigin::PauseReplan);
    assert_eq!(replan.replaces_job_id, Some(launch.job_id));
}

/// Hole 8: an urgent request for a person does not cancel a callback the
/// lead asked for in a later call.
#[test]
fn an_urgent_hold_keeps_a_callback_the_lead_asked_for_later() {
    let mut h = harness();
    let launch = h.launched("c1");
    let urgent = CallAnalysis {
        wants_person: true,
        callback_requested: true,
        callback_phrase: Some("in two hours".into()),
        ..CallAnalysis::default()
    };
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        urgent,
        t0() + minutes(6),
    ));
    let callback = h.plans().pop().unwrap();
    assert_eq!(callback.origin, JobOrigin::Callback);
    let second = h.due("c1", &callback, t0() + minutes(126)).unwrap();
    // On the callback call the lead asks again, for tomorrow; the urgent
    // request is still open.
    let again = CallAnalysis {
        callback_requested: true,
        callback_phrase: Some("tomorrow at 10".into()),
        ..CallAnalysis::default()
    };
    h.call(&answered(
        "c1",
        "CA2",
        Some(second.launch_id),
        again,
        t0() + minutes(130),
    ));
    let asked = h.plans().pop().unwrap();
    assert_eq!(asked.origin, JobOrigin::Callback);
    let slot = asked.earliest_at.unwrap();
    let launched = h.due("c1", &asked, slot);
    assert!(launched.is_some(), "the callback the lead asked for goes");
}

/// Hole 9: a number whose area code spans two zones sends both to the
/// scheduler, which books a slot open in each.
#[test]
fn every_candidate_zone_reaches_the_scheduler() {
    let mut h = harness();
    // 812 is southern Indiana: Eastern, with some counties on Central time.
    let mut request = launch_request("c1", CAMPAIGN, "r1");
    let details = request.contact.as_mut().unwrap();
    details.phone_number = Some("+18125550100".into());
    details.time_zone = None;
    h.command(&request, t0());
    let plan = h.plans().pop().unwrap();
    let zones: Vec<&str> = plan.time_zone.as_deref().unwrap().split(',').collect();
    assert_eq!(zones, ["America/Indiana/Indianapolis", "America/Chicago"]);
    assert_eq!(plan.time_zone_source, Some(ZoneSource::AreaCode));
}

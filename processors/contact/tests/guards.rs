//! Every launch-time guard, through the processor on the in-memory driver:
//! what a `launch_due` becomes on the contact's latest state.

mod support;

use callstream_schemas::*;
use support::*;

#[test]
fn a_job_that_passes_becomes_one_launch_with_a_stable_operation_id() {
    let mut h = harness();
    let plan = h.enter("c1", CAMPAIGN);
    let slot = t0() + minutes(5);
    let due = launch_due("c1", &plan, slot);
    h.command(&due, slot);
    let launches = h.launches();
    assert_eq!(launches.len(), 1);
    let l = &launches[0];
    assert_eq!(
        l.launch_id,
        callstream_domain::ids::contact::launch(TENANT, plan.job_id)
    );
    assert_eq!(l.job_id, plan.job_id);
    assert_eq!(l.to_number, PHONE);
    assert_eq!(l.attempt, 1);
    assert_eq!(l.origin, JobOrigin::CampaignEntry);
    assert_eq!(l.slot_at, slot);
    // The built-in window closes at 20:00 in Chicago: 02:00 UTC.
    assert_eq!(l.expires_at, Some(at(2024, 3, 6, 2, 0)));
    assert_eq!(l.causation_id, Some(due.event_id));
    let state = h.state("c1");
    assert_eq!(state.workflow_state, WorkflowState::Dispatching);
    assert_eq!(job(&state, plan.job_id).state, JobState::Launched);
    assert_eq!(job(&state, plan.job_id).launch_id, Some(l.launch_id));

    // The scheduler redelivers the same launch_due: nothing more leaves.
    let before = h.output_count();
    h.command(&due, slot);
    assert_eq!(h.output_count(), before);
}

#[test]
fn barred_contacts_are_cancelled_with_the_reason() {
    type SetFlag = fn(&mut ContactDetails);
    let cases: [(SetFlag, &str); 4] = [
        (|d| d.blocked = Some(true), "blocked_number"),
        (|d| d.do_not_call = Some(true), "do_not_call"),
        (|d| d.enrolled_student = Some(true), "enrolled_student"),
        (|d| d.spam = Some(true), "spam"),
    ];
    for (set, reason) in cases {
        let mut h = harness();
        let plan = h.enter("c1", CAMPAIGN);
        // The CRM's next request for the contact carries the new flag.
        let mut later = launch_request("c1", "nurture", "r2");
        set(later.contact.as_mut().unwrap());
        h.command(&later, t0() + minutes(1));
        let refused = h.audits().pop().unwrap();
        assert_eq!(
            refused.result,
            AuditResult::Rejected,
            "{reason}: no new plan"
        );
        assert_eq!(refused.reason.as_deref(), Some(reason));
        assert!(h.due("c1", &plan, t0() + minutes(5)).is_none(), "{reason}");
        let cancel = h.cancels().pop().unwrap();
        assert_eq!(cancel.job_id, plan.job_id);
        assert_eq!(cancel.reason, reason);
        let state = h.state("c1");
        assert_eq!(job(&state, plan.job_id).state, JobState::Cancelled);
        assert_eq!(job(&state, plan.job_id).reason, reason);
        assert_eq!(
            state.workflow_state,
            WorkflowState::Failed,
            "{reason}: nothing left to call"
        );
    }
}

#[test]
fn an_open_urgent_request_cancels_other_jobs_but_not_the_callback_asked_for_in_that_call() {
    let mut h = harness();
    let launch = h.launched("c1");
    h.command(&launch_request("c1", "nurture", "r2"), t0() + minutes(1));
    let other = h.plans().pop().unwrap();
    let analysis = CallAnalysis {
        wants_person: true,
        callback_requested: true,
        callback_phrase: Some("in two hours".into()),
        ..CallAnalysis::default()
    };
    let ended = t0() + minutes(8);
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        analysis,
        ended,
    ));
    let callback = h.plans().pop().unwrap();
    assert_eq!(callback.origin, JobOrigin::Callback);
    assert!(h.state("c1").urgent_request_open);

    assert!(h.due("c1", &other, ended + minutes(30)).is_none());
    let cancel = h.cancels().pop().unwrap();
    assert_eq!(
        (cancel.job_id, cancel.reason.as_str()),
        (other.job_id, "urgent_request_open")
    );
    let still = h.state("c1").workflow_state;
    assert_eq!(
        still,
        WorkflowState::Scheduled,
        "the callback is still planned"
    );

    let slot = callback.earliest_at.unwrap();
    let sent = h
        .due("c1", &callback, slot)
        .expect("the lead's own callback still goes");
    assert_eq!(sent.origin, JobOrigin::Callback);
}

#[test]
fn a_pause_holds_the_job_and_replans_it_when_the_pause_lifts() {
    for (setting, campaign, reason) in [
        (ControlSetting::SystemPause, None, "system_paused"),
        (
            ControlSetting::CampaignPause,
            Some(CAMPAIGN),
            "campaign_paused",
        ),
    ] {
        let mut h = harness();
        let plan = h.enter("c1", CAMPAIGN);
        h.pause(setting, campaign, true);
        let slot = t0() + minutes(5);
        h.driver.advance_wall_clock_ms(5 * 60_000);
        assert!(h.due("c1", &plan, slot).is_none(), "{reason}");
        let state = h.state("c1");
        assert_eq!(job(&state, plan.job_id).state, JobState::Held);
        assert_eq!(job(&state, plan.job_id).reason, reason);
        // Still paused at the re-check: nothing planned.
        h.driver.advance_wall_clock_ms(61_000);
        assert_eq!(h.plans().len(), 1, "{reason}");
        h.pause(setting, campaign, false);
        h.driver.advance_wall_clock_ms(61_000);
        let plans = h.plans();
        assert_eq!(plans.len(), 2, "{reason}: re-planned once the pause lifted");
        let replan = &plans[1];
        assert_eq!(replan.origin, JobOrigin::PauseReplan);
        assert_eq!(replan.replaces_job_id, Some(plan.job_id));
        assert_eq!(replan.reason, "pause_lifted");
        assert_eq!(replan.attempt, Some(1));
        assert!(replan.earliest_at.unwrap() >= slot);
        let state = h.state("c1");
        let old = job(&state, plan.job_id);
        assert_eq!(old.state, JobState::Replaced);
        assert_eq!(old.replaced_by_job_id, Some(replan.job_id));
        assert_eq!(job(&state, replan.job_id).state, JobState::Planned);
        assert_eq!(
            h.driver.open_timers(),
            0,
            "no re-check once nothing is held"
        );
        // The replacement launches normally.
        assert!(h.due("c1", replan, replan.earliest_at.unwrap()).is_some());
    }
}

#[test]
fn a_job_outside_its_window_moves_to_the_next_opening_plus_the_buffer() {
    let cases = [
        // 21:30 on Tuesday in Chicago: Wednesday 09:00 CST + 15 min.
        (at(2024, 3, 6, 3, 30), at(2024, 3, 6, 15, 15)),
        // Saturday noon: the weekday window reopens Monday 09:00 + 15 min.
        (at(2024, 3, 9, 18, 0), at(2024, 3, 11, 14, 15)),
    ];
    for (slot, moved_to) in cases {
        let mut h = harness();
        let plan = h.enter("c1", CAMPAIGN);
        assert!(h.due("c1", &plan, slot).is_none());
        let cancel = h.cancels().pop().unwrap();
        assert_eq!(
            (cancel.job_id, cancel.reason.as_str()),
            (plan.job_id, "outside_calling_window")
        );
        let moved = h.plans().pop().unwrap();
        assert_eq!(moved.origin, JobOrigin::WindowMove);
        assert_eq!(moved.replaces_job_id, Some(plan.job_id));
        assert_eq!(moved.earliest_at, Some(moved_to), "slot {slot}");
        assert_eq!(moved.reason, "outside_calling_window");
        let state = h.state("c1");
        assert_eq!(
            job(&state, plan.job_id).replaced_by_job_id,
            Some(moved.job_id)
        );
        assert_eq!(job(&state, plan.job_id).state, JobState::Replaced);
    }
}

#[test]
fn a_moved_callback_keeps_the_time_the_lead_asked_for() {
    let mut h = harness();
    let launch = h.launched("c1");
    let analysis = CallAnalysis {
        callback_requested: true,
        callback_phrase: Some("tomorrow at 10".into()),
        ..CallAnalysis::default()
    };
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        analysis,
        t0() + minutes(8),
    ));
    let callback = h.plans().pop().unwrap();
    let asked = callback.requested_at.unwrap();
    // The scheduler gave it a slot that is out of window by the time it is due.
    h.due("c1", &callback, at(2024, 3, 7, 4, 0));
    let moved = h.plans().pop().unwrap();
    assert_eq!(moved.replaces_job_id, Some(callback.job_id));
    assert_eq!(moved.requested_at, Some(asked));
}

#[test]
fn a_job_due_while_another_call_is_in_flight_waits() {
    let mut h = harness();
    let _first = h.launched("c1");
    h.command(&launch_request("c1", "nurture", "r2"), t0() + minutes(6));
    let second = h.plans().pop().unwrap();
    let slot = t0() + minutes(7);
    assert!(h.due("c1", &second, slot).is_none());
    let replan = h.plans().pop().unwrap();
    assert_eq!(replan.reason, "call_in_flight");
    assert_eq!(
        replan.origin,
        JobOrigin::CampaignEntry,
        "the origin is kept"
    );
    assert_eq!(replan.earliest_at, Some(slot + minutes(30)));
    assert_eq!(replan.replaces_job_id, Some(second.job_id));
}

#[test]
fn a_contact_without_a_number_is_not_dialled() {
    let mut h = harness();
    let mut request = launch_request("c1", CAMPAIGN, "r1");
    request.contact = None;
    h.command(&request, t0());
    let plan = h.plans().pop().unwrap();
    assert!(h.due("c1", &plan, t0() + minutes(5)).is_none());
    assert_eq!(h.cancels().pop().unwrap().reason, "no_phone_number");
}

#[test]
fn launch_due_of_a_cancelled_or_unknown_job_sends_nothing() {
    let mut h = harness();
    let plan = h.enter("c1", CAMPAIGN);
    h.command(
        &command(ContactCommandKind::CancelFutureJobs, "c1", "cancel"),
        t0() + minutes(1),
    );
    assert!(h.due("c1", &plan, t0() + minutes(5)).is_none());
    let mut stranger = plan.clone();
    stranger.job_id = uuid::Uuid::from_u128(99);
    assert!(h.due("c1", &stranger, t0() + minutes(6)).is_none());
    assert!(h.driver.dead_letters().is_empty());
}

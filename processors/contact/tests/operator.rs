//! Operator commands on the contact-commands topic: each acts on the
//! contact's jobs and leaves an audit event with the operator as actor.

mod support;

use callstream_schemas::*;
use support::*;

#[test]
fn retry_now_replaces_the_named_job_and_is_audited() {
    let mut h = harness();
    let plan = h.enter("c1", CAMPAIGN);
    let mut retry = command(ContactCommandKind::RetryNow, "c1", "retry");
    retry.job_id = Some(plan.job_id);
    retry.occurred_at = t0() + minutes(2);
    h.command(&retry, t0() + minutes(2));
    let cancel = h.cancels().pop().unwrap();
    assert_eq!(
        (cancel.job_id, cancel.reason.as_str()),
        (plan.job_id, "operator_retry")
    );
    let new = h.plans().pop().unwrap();
    assert_eq!(new.origin, JobOrigin::OperatorRetry);
    assert_eq!(new.replaces_job_id, Some(plan.job_id));
    assert_eq!(new.earliest_at, Some(t0() + minutes(2)));
    assert_eq!(new.causation_id, Some(retry.event_id));
    let audit = h.audits().pop().unwrap();
    assert_eq!(audit.action, "contact.retry_now");
    assert_eq!(audit.result, AuditResult::Applied);
    assert_eq!(audit.command_id, Some(retry.event_id));
    assert_eq!(audit.actor, Actor::operator("ops@acme"));
    let state = h.state("c1");
    assert_eq!(
        job(&state, plan.job_id).replaced_by_job_id,
        Some(new.job_id)
    );
}

#[test]
fn retry_later_needs_a_time_and_keeps_it_on_the_job() {
    let mut h = harness();
    h.enter("c1", CAMPAIGN);
    h.command(
        &command(ContactCommandKind::RetryLater, "c1", "later-1"),
        t0() + minutes(1),
    );
    let refused = h.audits().pop().unwrap();
    assert_eq!(refused.result, AuditResult::Rejected);
    assert_eq!(refused.reason.as_deref(), Some("requested_at_missing"));
    let mut later = command(ContactCommandKind::RetryLater, "c1", "later-2");
    let when = at(2024, 3, 7, 15, 0);
    later.requested_at = Some(when);
    h.command(&later, t0() + minutes(2));
    let plan = h.plans().pop().unwrap();
    assert_eq!(
        (plan.earliest_at, plan.requested_at),
        (Some(when), Some(when))
    );
    assert_eq!(h.audits().pop().unwrap().result, AuditResult::Applied);
}

#[test]
fn cancel_future_jobs_cancels_every_planned_job() {
    let mut h = harness();
    let a = h.enter("c1", CAMPAIGN);
    h.command(&launch_request("c1", "nurture", "r2"), t0());
    let b = h.plans().pop().unwrap();
    let mut cancel = command(ContactCommandKind::CancelFutureJobs, "c1", "stop");
    cancel.reason = Some("lead called in".into());
    h.command(&cancel, t0() + minutes(1));
    let cancels = h.cancels();
    let ids: Vec<_> = cancels.iter().map(|c| c.job_id).collect();
    assert_eq!(ids, [a.job_id, b.job_id]);
    assert!(cancels.iter().all(|c| c.reason == "operator_cancelled"));
    assert_eq!(cancels[0].reason_detail.as_deref(), Some("lead called in"));
    let audit = h.audits().pop().unwrap();
    assert_eq!(audit.action, "contact.cancel_future_jobs");
    assert_eq!(audit.detail.as_deref(), Some("2 job(s) cancelled"));
}

#[test]
fn force_finish_ends_the_workflow_and_releases_a_hold() {
    let mut h = harness();
    let launch = h.launched("c1");
    let analysis = CallAnalysis {
        wants_person: true,
        ..CallAnalysis::default()
    };
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        analysis,
        t0() + minutes(8),
    ));
    let opened = h.exceptions().pop().unwrap();
    h.command(
        &command(ContactCommandKind::ForceFinish, "c1", "finish"),
        t0() + minutes(20),
    );
    let closed = h.exceptions().pop().unwrap();
    assert_eq!(closed.exception_id, opened.exception_id);
    assert_eq!(closed.status, ExceptionStatus::Resolved);
    assert_eq!(closed.actor, Actor::operator("ops@acme"));
    let state = h.state("c1");
    assert_eq!(state.workflow_state, WorkflowState::Completed);
    assert!(!state.urgent_request_open);
    assert_eq!(h.audits().pop().unwrap().action, "contact.force_finish");
}

#[test]
fn ignoring_the_holding_exception_releases_the_hold() {
    let mut h = harness();
    let launch = h.launched("c1");
    let analysis = CallAnalysis {
        wants_person: true,
        ..CallAnalysis::default()
    };
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        analysis,
        t0() + minutes(8),
    ));
    let opened = h.exceptions().pop().unwrap();
    let mut ignore = command(ContactCommandKind::Ignore, "c1", "ignore");
    ignore.exception_id = Some(opened.exception_id);
    h.command(&ignore, t0() + minutes(30));
    assert_eq!(
        h.exceptions().pop().unwrap().status,
        ExceptionStatus::Ignored
    );
    assert!(!h.state("c1").urgent_request_open);
    // With the hold gone, an operator retry plans a call that may launch.
    h.command(
        &command(ContactCommandKind::RetryNow, "c1", "retry"),
        t0() + minutes(31),
    );
    let plan = h.plans().pop().unwrap();
    assert!(h.due("c1", &plan, t0() + minutes(40)).is_some());
}

#[test]
fn operators_cannot_retry_a_contact_that_may_not_be_called() {
    let mut h = harness();
    let launch = h.launched("c1");
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
    let plans = h.plans().len();
    h.command(
        &command(ContactCommandKind::RetryNow, "c1", "retry"),
        t0() + minutes(9),
    );
    let audit = h.audits().pop().unwrap();
    assert_eq!(
        (audit.result, audit.reason.as_deref()),
        (AuditResult::Rejected, Some("do_not_call"))
    );
    assert_eq!(h.plans().len(), plans);
}

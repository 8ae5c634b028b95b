//! Contact commands other than `launch_due`: launch requests and contact
//! updates from the gateway's intake, and the operator's retry now, retry
//! later, cancel future jobs, force finish and lift restriction (each with
//! an audit event).
//!
//! A lead's own opt-out is final: the CRM's flags add restrictions and
//! lift only their own; only an operator's `lift_restriction`, with a
//! reason, lifts one the lead or an operator set (`callstream_domain::restrictions`).
//!
//! Guarantees: a command is handled once (its event id is remembered); an
//! operator command that cannot be carried out is audited as rejected with
//! its reason and changes nothing else; `recover`, `advance_*` and the
//! `ignore` of a missing-completion case's exception belong to the recovery
//! processor and are left alone here. Every other `ignore` is judged here,
//! so each ignore is audited exactly once (see `ignore`).

use callstream_domain::ids::completion_case::ignore_targets_case;
use callstream_domain::workflow::WorkflowState;
use callstream_runtime::ProcessError;
use callstream_schemas::{
    Actor, AuditResult, ContactCommand, ContactCommandKind, ExceptionStatus, ExceptionType,
    JobOrigin, JobState,
};
use tracing::debug;

use crate::details;
use crate::emit::{Audit, ExceptionCase};
use crate::jobs::{NewJob, Step};
use crate::state::Hold;
use crate::telemetry::Ids;

/// Handles a command; `Ok(false)` when it changed nothing (a duplicate, or
/// a kind another processor handles).
pub fn handle(step: &mut Step<'_, '_>, cmd: &ContactCommand) -> Result<bool, ProcessError> {
    match cmd.kind {
        ContactCommandKind::LaunchDue => return crate::launch::launch_due(step, cmd),
        ContactCommandKind::Recover
        | ContactCommandKind::AdvanceNoAnswer
        | ContactCommandKind::AdvanceVoicemail => return Ok(leave(cmd)),
        ContactCommandKind::Ignore if ignore_targets_case(cmd.launch_id, cmd.exception_id) => {
            return Ok(leave(cmd))
        }
        ContactCommandKind::Unknown => {
            debug!(command_id = %cmd.event_id, "contact command of a kind this build does not know; skipped");
            return Ok(false);
        }
        _ => {}
    }
    if step
        .contact
        .dedupe
        .observe(&cmd.event_id.to_string(), None)
        .is_duplicate()
    {
        step.metrics.duplicate(&ids_of(cmd), "contact_command");
        return Ok(false);
    }
    match cmd.kind {
        ContactCommandKind::LaunchRequest => launch_request(step, cmd)?,
        ContactCommandKind::RetryNow | ContactCommandKind::RetryLater => retry(step, cmd)?,
        ContactCommandKind::CancelFutureJobs => cancel_future_jobs(step, cmd)?,
        ContactCommandKind::ForceFinish => force_finish(step, cmd)?,
        ContactCommandKind::Ignore => ignore(step, cmd)?,
        ContactCommandKind::ContactUpdate => details::contact_update(step, cmd)?,
        ContactCommandKind::LiftRestriction => details::lift_restriction(step, cmd)?,
        _ => {}
    }
    Ok(true)
}

/// The ids a telemetry line about `cmd` names.
pub fn ids_of(cmd: &ContactCommand) -> Ids<'_> {
    Ids {
        tenant: &cmd.tenant_id,
        contact: &cmd.contact_id,
        event_id: cmd.event_id,
    }
}

fn leave(cmd: &ContactCommand) -> bool {
    debug!(command_id = %cmd.event_id, kind = %cmd.kind, "command for the recovery processor; skipped");
    false
}

/// An operator's ignore of any exception but a missing-completion case's. The hold's
/// exception releases the hold. Any other (a CRM failure, no slot, a failed launch: opened
/// by a service that keeps no case for it to close) is closed as ignored here, with the
/// operator as actor. The API sends an ignore only for an exception its view shows open;
/// its type stays what the opener said (the event's `unknown` type does not overwrite it).
fn ignore(step: &mut Step<'_, '_>, cmd: &ContactCommand) -> Result<(), ProcessError> {
    let Some(exception_id) = cmd.exception_id else {
        return audit(step, cmd, AuditResult::Rejected, "no_exception", None);
    };
    let holding = step.contact.hold.as_ref().map(|h| h.exception_id) == Some(exception_id);
    if holding {
        release_hold(step, ExceptionStatus::Ignored, cmd.actor.clone(), "ignored")?;
        return audit(step, cmd, AuditResult::Applied, "hold_released", None);
    }
    step.out.exception(ExceptionCase {
        exception_id,
        status: ExceptionStatus::Ignored,
        exception_type: ExceptionType::Unknown,
        urgent: false,
        campaign_id: None,
        job_id: None,
        launch_id: cmd.launch_id,
        call_id: None,
        reason: "ignored".to_owned(),
        detail: cmd.reason.clone(),
        actor: cmd.actor.clone(),
    })?;
    audit(step, cmd, AuditResult::Applied, "exception_ignored", None)
}

fn action(kind: ContactCommandKind) -> String {
    format!("contact.{}", kind.as_str())
}

pub(crate) fn audit(
    step: &mut Step<'_, '_>,
    cmd: &ContactCommand,
    result: AuditResult,
    reason: &str,
    detail: Option<String>,
) -> Result<(), ProcessError> {
    step.out.audit(Audit {
        actor: cmd.actor.clone(),
        action: action(cmd.kind),
        command_id: Some(cmd.event_id),
        result,
        reason: Some(reason.to_owned()),
        detail: detail.or_else(|| cmd.reason.clone()),
    })
}

/// The gateway's launch intake: a call to the contact in a campaign.
fn launch_request(step: &mut Step<'_, '_>, cmd: &ContactCommand) -> Result<(), ProcessError> {
    let campaign = cmd
        .campaign_id
        .clone()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| ProcessError::Invalid("launch_request without campaign_id".into()))?;
    if let Some(details) = &cmd.contact {
        details::apply(step, cmd, details)?;
    }
    step.zone();
    if let Some(barred) = step.contact.barred_reason() {
        return audit(step, cmd, AuditResult::Rejected, barred, None);
    }
    // A call of the campaign still to be made, or made and without its
    // result yet: a second entry would call the lead twice.
    let active_in_campaign = step.contact.jobs.iter().any(|j| {
        j.campaign_id == campaign
            && (j.is_active() || (j.state == JobState::Launched && j.outcome.is_none()))
    });
    if active_in_campaign {
        let detail = format!("a call in campaign {campaign} is already planned");
        return audit(
            step,
            cmd,
            AuditResult::Rejected,
            "already_planned",
            Some(detail),
        );
    }
    to_scheduled(step);
    // Entering a campaign starts its attempts afresh.
    step.contact
        .counters
        .insert(campaign.clone(), Default::default());
    step.contact.campaign = Some(campaign.clone());
    let earliest = cmd
        .requested_at
        .map_or(cmd.occurred_at, |r| r.max(cmd.occurred_at));
    let detail = match (&cmd.request_id, &cmd.reason) {
        (_, Some(reason)) => reason.clone(),
        (Some(id), None) => format!("launch request {id}"),
        (None, None) => "launch request".to_owned(),
    };
    let job_id = step.job_id(&["campaign_entry"]);
    step.plan(NewJob {
        job_id,
        campaign_id: campaign,
        origin: JobOrigin::CampaignEntry,
        earliest_at: earliest,
        requested_at: cmd.requested_at,
        replaces: None,
        reason: "campaign_entry".into(),
        reason_detail: Some(detail),
        requested_in_call: None,
        attempt: None,
    })?;
    Ok(())
}

/// Moves the workflow to `scheduled` for a newly planned call, unless a
/// call is in flight (its result must still land in its own step; the new
/// job waits its turn at launch).
fn to_scheduled(step: &mut Step<'_, '_>) {
    let workflow = &mut step.contact.workflow;
    if matches!(
        workflow.state(),
        WorkflowState::Dispatching | WorkflowState::AwaitingResult
    ) {
        return;
    }
    // Every other state has an edge to scheduled.
    let _ = workflow.apply(workflow.step(), WorkflowState::Scheduled);
}

/// Operator retry now / retry later: a new job, replacing the named one.
fn retry(step: &mut Step<'_, '_>, cmd: &ContactCommand) -> Result<(), ProcessError> {
    if let Some(barred) = step.contact.barred_reason() {
        return audit(step, cmd, AuditResult::Rejected, barred, None);
    }
    let named = cmd.job_id.map(|id| step.contact.job(id).cloned());
    let old = match named {
        Some(None) => {
            return audit(step, cmd, AuditResult::Rejected, "unknown_job", None);
        }
        Some(Some(job)) => Some(job),
        None => None,
    };
    let Some(campaign) = old
        .as_ref()
        .map(|j| j.campaign_id.clone())
        .or_else(|| cmd.campaign_id.clone())
        .or_else(|| step.contact.campaign.clone())
    else {
        return audit(step, cmd, AuditResult::Rejected, "no_campaign", None);
    };
    let now = cmd.occurred_at;
    let earliest = match cmd.kind {
        ContactCommandKind::RetryLater => match cmd.requested_at {
            Some(at) => at.max(now),
            None => {
                return audit(
                    step,
                    cmd,
                    AuditResult::Rejected,
                    "requested_at_missing",
                    None,
                );
            }
        },
        _ => now,
    };
    // An operator acting on the contact is the outcome a hold waits for.
    release_hold(
        step,
        ExceptionStatus::Resolved,
        cmd.actor.clone(),
        "operator_retry",
    )?;
    let workflow = step.contact.workflow;
    let _ = step
        .contact
        .workflow
        .apply(workflow.step(), WorkflowState::Scheduled);
    let detail = cmd
        .reason
        .clone()
        .unwrap_or_else(|| format!("{} by {}", cmd.kind, cmd.actor.id));
    let new = NewJob {
        job_id: step.job_id(&["operator_retry"]),
        campaign_id: campaign,
        origin: JobOrigin::OperatorRetry,
        earliest_at: earliest,
        requested_at: (cmd.kind == ContactCommandKind::RetryLater)
            .then_some(cmd.requested_at)
            .flatten(),
        replaces: None,
        reason: "operator_retry".into(),
        reason_detail: Some(detail),
        requested_in_call: None,
        attempt: None,
    };
    match old {
        Some(old) => step.replace(old.job_id, new)?,
        None => step.plan(new)?,
    };
    audit(step, cmd, AuditResult::Applied, "operator_retry", None)
}

fn cancel_future_jobs(step: &mut Step<'_, '_>, cmd: &ContactCommand) -> Result<(), ProcessError> {
    let count = step.contact.active_jobs().len();
    step.cancel_all("operator_cancelled", cmd.reason.clone())?;
    let detail = format!("{count} job(s) cancelled");
    audit(
        step,
        cmd,
        AuditResult::Applied,
        "operator_cancelled",
        Some(detail),
    )
}

fn force_finish(step: &mut Step<'_, '_>, cmd: &ContactCommand) -> Result<(), ProcessError> {
    step.cancel_all("operator_finished", cmd.reason.clone())?;
    release_hold(
        step,
        ExceptionStatus::Resolved,
        cmd.actor.clone(),
        "operator_finished",
    )?;
    let workflow = step.contact.workflow;
    if !workflow.state().is_terminal() {
        // Every non-terminal state has an edge to completed.
        let _ = step
            .contact
            .workflow
            .apply(workflow.step(), WorkflowState::Completed);
    }
    audit(step, cmd, AuditResult::Applied, "operator_finished", None)
}

/// Ends the contact's hold, if any, closing its exception.
pub fn release_hold(
    step: &mut Step<'_, '_>,
    status: ExceptionStatus,
    actor: Actor,
    reason: &str,
) -> Result<(), ProcessError> {
    match step.contact.hold.take() {
        Some(hold) => close_hold(step, &hold, status, actor, reason),
        None => Ok(()),
    }
}

/// Emits the closing event of a hold's exception.
pub fn close_hold(
    step: &mut Step<'_, '_>,
    hold: &Hold,
    status: ExceptionStatus,
    actor: Actor,
    reason: &str,
) -> Result<(), ProcessError> {
    step.out.exception(ExceptionCase {
        exception_id: hold.exception_id,
        status,
        exception_type: if hold.urgent {
            ExceptionType::UrgentRequest
        } else {
            ExceptionType::ProviderFailure
        },
        urgent: hold.urgent,
        campaign_id: hold.campaign_id.clone(),
        job_id: None,
        launch_id: None,
        call_id: hold.call_id.clone(),
        reason: reason.to_owned(),
        detail: Some(format!("calls no longer held ({})", hold.reason)),
        actor,
    })
}

//! Launch outcomes from the dispatcher (`call-launches`): every one returns
//! to the workflow, so no contact waits in `dispatching` on a call that will
//! never report.
//!
//! - `accepted`: the call exists; the step waits for its result.
//! - `held`: nothing was sent. A pause held it: the job waits, held, until
//!   the pause lifts (the re-check re-plans it). Its window closed, its
//!   slot passed or a calling rule refused it (a cap reached by calls from
//!   other contacts to the same number): it is planned again at once, on the
//!   grid, in the window, no earlier than the outcome's `not_before`.
//! - `failed`: nothing was placed (or, unreconciled, nobody can tell); the
//!   dispatcher opened the exception. A refusal the launch cannot get past
//!   (a bad number, no caller id, a 4xx) fails the workflow; anything else
//!   holds it for a person to review.
//! - `shadow`: shadow mode made no call; the step ends as completed.
//! - `ambiguous`: not an outcome yet (reconciliation follows); nothing changes.
//! - Whatever the outcome, a launch not placed while the lead has become
//!   barred ends its job cancelled with the restriction, and the workflow
//!   fails with a `lead_unreachable` exception: nothing is planned.
//!
//! Guarantees: an outcome is taken once (its event id is remembered), only
//! for the job that launched under it and only while the workflow is still
//! in that job's step and has not heard of the call otherwise; a late or
//! contradicting report changes nothing and is logged.

use callstream_domain::failures::PermanentFailure;
use callstream_domain::workflow::WorkflowState;
use callstream_runtime::ProcessError;
use callstream_schemas::{CallLaunch, JobOrigin, JobState, LaunchStatus};
use tracing::{debug, warn};

use crate::failures::{fail_step, Subject};
use crate::jobs::{NewJob, Step};
use crate::state::Job;
use crate::telemetry::DecisionKind;

/// Reasons of a `held` launch that a pause gave: the job waits for it to lift.
const PAUSES: [&str; 2] = ["system_paused", "campaign_paused"];

/// Handles one launch outcome; `Ok(false)` when it changed nothing.
pub fn handle(step: &mut Step<'_, '_>, launch: &CallLaunch) -> Result<bool, ProcessError> {
    if matches!(
        launch.status,
        LaunchStatus::Ambiguous | LaunchStatus::Unknown
    ) {
        return Ok(false);
    }
    if step
        .contact
        .dedupe
        .observe(&launch.event_id.to_string(), None)
        .is_duplicate()
    {
        let ids = crate::telemetry::Ids {
            tenant: &launch.tenant_id,
            contact: &launch.contact_id,
            event_id: launch.event_id,
        };
        step.metrics.duplicate(&ids, "call_launch");
        return Ok(false);
    }
    let Some(job) = step.contact.job(launch.job_id).cloned() else {
        warn!(tenant = %launch.tenant_id, contact = %launch.contact_id, job_id = %launch.job_id, "launch outcome of a job this contact does not have; skipped");
        return Ok(true);
    };
    if launch.status == LaunchStatus::Accepted {
        // The platform has the call, whatever the workflow did meanwhile: the frequency
        // caps count it from now on.
        let subject = step.cap_subject(&job.campaign_id).to_owned();
        step.contact
            .record_placed(&subject, launch.launch_id, launch.occurred_at);
    }
    let workflow = step.contact.workflow;
    let waiting = job.state == JobState::Launched
        && job.launch_id == Some(launch.launch_id)
        && job.step == workflow.step()
        && workflow.state() == WorkflowState::Dispatching;
    if !waiting {
        debug!(job_id = %job.job_id, state = %job.state, workflow = %workflow.state(), status = %launch.status, "launch outcome after the step moved on; nothing to do");
        return Ok(true);
    }
    let reason = launch.reason.as_deref().unwrap_or(launch.status.as_str());
    let detail = launch.reason_detail.clone();
    // Not placed, and the lead may no longer be called (a restriction came
    // while it was on its way): the job ends there, nothing is planned.
    if let (LaunchStatus::Held | LaunchStatus::Failed, Some(barred)) =
        (launch.status, step.contact.barred_reason())
    {
        step.finish(job.job_id, JobState::Cancelled, barred, detail);
        let detail = format!(
            "the contact may not be called ({}); its launch was not placed and nothing \
             else is planned",
            barred.replace('_', " ")
        );
        fail_step(
            step,
            PermanentFailure::LeadBarred,
            barred,
            detail,
            subject(&job),
        )?;
        return Ok(true);
    }
    match launch.status {
        LaunchStatus::Accepted => {
            let _ = step
                .contact
                .workflow
                .apply(workflow.step(), WorkflowState::AwaitingResult);
        }
        LaunchStatus::Held if PAUSES.contains(&reason) => {
            let reason = PAUSES
                .iter()
                .find(|p| **p == reason)
                .copied()
                .unwrap_or(reason);
            let (at, cause) = (step.out.at, step.out.cause);
            if let Some(j) = step.contact.job_mut(job.job_id) {
                let detail = format!("held at the last hop: {}", reason.replace('_', " "));
                j.set_state(JobState::Held, reason, Some(detail), at);
                j.cause = cause;
            }
            step.metrics
                .decision(DecisionKind::Hold, job.job_id, reason);
            step.recheck_pauses = true;
            back_to_scheduled(step);
        }
        LaunchStatus::Held => {
            // Its window closed, its slot passed or a calling rule refused it before it
            // could leave: planned again now, in the window, on the grid's pace, and no
            // earlier than the rules allow (the dispatcher counts the calls placed to the
            // number by every contact, which this contact cannot see).
            let (at, cause) = (step.out.at, step.out.cause);
            if let Some(j) = step.contact.job_mut(job.job_id) {
                j.set_state(JobState::Replaced, reason, detail.clone(), at);
                j.cause = cause;
            }
            back_to_scheduled(step);
            let origin = if reason == "window_closed" {
                JobOrigin::WindowMove
            } else {
                job.origin
            };
            let new_id = step.job_id(&["launch-held", &job.job_id.to_string()]);
            step.replace(
                job.job_id,
                NewJob {
                    job_id: new_id,
                    campaign_id: job.campaign_id.clone(),
                    origin,
                    earliest_at: at.max(job.earliest_at).max(launch.not_before.unwrap_or(at)),
                    requested_at: None,
                    replaces: Some(job.job_id),
                    reason: reason.to_owned(),
                    reason_detail: detail,
                    requested_in_call: None,
                    attempt: Some(job.attempt),
                },
            )?;
        }
        LaunchStatus::Failed if is_permanent_refusal(reason) => {
            step.finish(job.job_id, JobState::Cancelled, reason, detail.clone());
            // The launch dispatcher opened this failure's exception.
            let detail = detail.unwrap_or_else(|| reason.to_owned());
            fail_step(
                step,
                PermanentFailure::LaunchRefused,
                reason,
                detail,
                subject(&job),
            )?;
        }
        LaunchStatus::Failed => {
            step.finish(job.job_id, JobState::Cancelled, reason, detail);
            let _ = step
                .contact
                .workflow
                .apply(workflow.step(), WorkflowState::NeedsReview);
        }
        LaunchStatus::Shadow => {
            let detail = Some("shadow mode: no call was made".to_owned());
            step.finish(job.job_id, JobState::Completed, "shadow_mode", detail);
            let _ = step
                .contact
                .workflow
                .apply(workflow.step(), WorkflowState::Completed);
        }
        LaunchStatus::Ambiguous | LaunchStatus::Unknown => return Ok(false),
    }
    Ok(true)
}

/// What a failure's exception names of the job.
fn subject(job: &Job) -> Subject {
    Subject {
        campaign_id: Some(job.campaign_id.clone()),
        job_id: Some(job.job_id),
        launch_id: job.launch_id,
        call_id: None,
    }
}

/// A dispatching step whose launch was not placed goes back to scheduled,
/// as a new step (the next launch is a new attempt at the contact).
fn back_to_scheduled(step: &mut Step<'_, '_>) {
    let workflow = step.contact.workflow;
    let _ = step
        .contact
        .workflow
        .apply(workflow.step(), WorkflowState::Scheduled);
}

/// A failure the same launch can never get past: the number, the caller id,
/// the provider, or the platform's refusal of the request.
fn is_permanent_refusal(reason: &str) -> bool {
    matches!(
        reason,
        "invalid_number" | "no_caller_id" | "unknown_provider"
    ) || reason.starts_with("http_4")
}

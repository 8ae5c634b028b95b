//! `launch_due` from the scheduler: the launch-time guards on the latest
//! state, and what each verdict does; and the wall-clock re-check that
//! re-plans jobs held by a pause once it lifts.
//!
//! Guarantees: a job launches at most once, under its stable operation id
//! (UUIDv5 over tenant and job id); a job that does not launch is held,
//! cancelled or replaced, always with its reason; a replacement names the
//! job it replaces and the old job names it.

use callstream_domain::failures::PermanentFailure;
use callstream_domain::restrictions::Restriction;
use callstream_domain::workflow::WorkflowState;
use callstream_runtime::ProcessError;
use callstream_schemas::{ContactCommand, JobOrigin, JobState, LaunchCommand};
use chrono::{DateTime, Utc};
use tracing::{debug, warn};
use uuid::Uuid;

use crate::emit::LeadRulesWire;
use crate::guards::{self, GuardInput, Verdict};
use crate::jobs::{NewJob, Step};
use crate::state::Job;
use crate::telemetry::DecisionKind;
use callstream_domain::calling_rules::Violation;
use callstream_domain::ids::contact as ids;
use callstream_domain::timezone::ResolvedZone;
use callstream_kit::calling_rules::LeadRules;

/// Handles `launch_due`; `Ok(false)` for a duplicate.
pub fn launch_due(step: &mut Step<'_, '_>, cmd: &ContactCommand) -> Result<bool, ProcessError> {
    let job_id = cmd
        .job_id
        .ok_or_else(|| ProcessError::Invalid("launch_due without job_id".into()))?;
    if step
        .contact
        .dedupe
        .observe(&cmd.event_id.to_string(), None)
        .is_duplicate()
    {
        step.metrics
            .duplicate(&crate::commands::ids_of(cmd), "launch_due");
        return Ok(false);
    }
    let Some(job) = step.contact.job(job_id).cloned() else {
        warn!(tenant = %cmd.tenant_id, contact = %cmd.contact_id, %job_id, "launch_due of a job this contact does not have; skipped");
        return Ok(true);
    };
    if job.state != JobState::Planned {
        // Cancelled or moved after the scheduler made it due: the later
        // decision stands.
        debug!(%job_id, state = %job.state, "launch_due of a job no longer planned; skipped");
        return Ok(true);
    }
    let slot_at = cmd.slot_at.unwrap_or(cmd.occurred_at);
    let now = step.out.at.max(slot_at);
    if let Some(j) = step.contact.job_mut(job_id) {
        j.slot_at = Some(slot_at);
    }
    let tenant = step.contact.tenant_id.clone();
    let rules = step.control.campaign(&tenant, &job.campaign_id);
    let zone = step.zone();
    let window = rules
        .window
        .for_lead(&zone)
        .map_err(|e| ProcessError::Invalid(format!("calling window: {e}")))?;
    let workflow = step.contact.workflow.state();
    let verdict = guards::check(&GuardInput {
        barred: step.contact.barred_reason(),
        has_phone: step.contact.phone.is_some(),
        hold: step.contact.hold.as_ref(),
        requested_in_call: job.requested_in_call.as_deref(),
        pause: step.control.pause(&tenant, &job.campaign_id),
        window: &window,
        move_buffer: rules.move_buffer,
        move_horizon: step.config.move_horizon,
        call_in_flight: matches!(
            workflow,
            WorkflowState::Dispatching | WorkflowState::AwaitingResult
        ),
        in_flight_delay: step.config.in_flight_delay,
        now,
    });
    match verdict {
        Verdict::Launch { expires_at } => {
            // The state calling rules, on the latest state: a cap reached or a rule come
            // into force since the scheduler placed the job moves it, naming the rule.
            let lead = step.lead_rules(&job.campaign_id);
            let horizon = now
                + chrono::TimeDelta::from_std(step.config.move_horizon)
                    .unwrap_or(chrono::TimeDelta::days(14));
            let tenant_rules = step.control.calling_rules(&tenant, &job.campaign_id);
            let rules = LeadRules::from_wire(
                &lead.jurisdictions,
                &zone.zones,
                &lead.placed_calls,
                &tenant_rules.rules,
            );
            if let Some(Err((violation, next))) = rules.map(|r| r.check(now, horizon)) {
                return replan_for_rule(step, &job, violation, next, now);
            }
            launch(step, job_id, slot_at, expires_at, &zone, lead)?;
        }
        Verdict::Cancel { reason, detail } => {
            step.cancel(job_id, reason, Some(detail), true)?;
            end_step_if_idle(step, reason)?;
        }
        Verdict::Hold { reason } => {
            let (at, cause) = (step.out.at, step.out.cause);
            if let Some(j) = step.contact.job_mut(job_id) {
                let detail = format!("held at its slot: {}", reason.replace('_', " "));
                j.set_state(JobState::Held, reason, Some(detail), at);
                j.cause = cause;
            }
            step.metrics.decision(DecisionKind::Hold, job_id, reason);
            step.recheck_pauses = true;
        }
        Verdict::Replan {
            reason,
            detail,
            earliest,
        } => {
            let origin = if reason == "outside_calling_window" {
                JobOrigin::WindowMove
            } else {
                job.origin
            };
            let new_id = step.job_id(&["replan", &job_id.to_string()]);
            step.replace(
                job_id,
                NewJob {
                    job_id: new_id,
                    campaign_id: job.campaign_id.clone(),
                    origin,
                    earliest_at: earliest.max(job.earliest_at),
                    requested_at: None,
                    replaces: Some(job_id),
                    reason: reason.to_owned(),
                    reason_detail: Some(detail),
                    requested_in_call: None,
                    attempt: Some(job.attempt),
                },
            )?;
        }
    }
    Ok(true)
}

/// A due job a state calling rule refuses now: re-planned at the first instant every rule
/// allows (the scheduler also keeps it in the campaign's window), with the rule as its
/// reason; when no instant within the move horizon is allowed, cancelled as having no
/// window opening.
fn replan_for_rule(
    step: &mut Step<'_, '_>,
    job: &Job,
    violation: Violation,
    next: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<bool, ProcessError> {
    let rule = violation.rule_id.to_string();
    let Some(earliest) = next else {
        let detail = format!("{violation}; no instant within the move horizon is allowed");
        step.cancel(job.job_id, "no_window_opening", Some(detail), true)?;
        end_step_if_idle(step, "no_window_opening")?;
        return Ok(true);
    };
    let new_id = step.job_id(&["rule_replan", &job.job_id.to_string()]);
    step.replace(
        job.job_id,
        NewJob {
            job_id: new_id,
            campaign_id: job.campaign_id.clone(),
            origin: job.origin,
            earliest_at: earliest.max(job.earliest_at).max(now),
            requested_at: job.requested_at,
            replaces: Some(job.job_id),
            reason: rule,
            reason_detail: Some(violation.detail),
            requested_in_call: job.requested_in_call.clone(),
            attempt: Some(job.attempt),
        },
    )?;
    Ok(true)
}

/// After a cancel with nothing else planned, the step is over: failed, with its
/// exception, when the contact cannot be called (barred, no phone number, no window
/// opens); else held for a person. A step with other jobs still planned goes on.
pub(crate) fn end_step_if_idle(step: &mut Step<'_, '_>, reason: &str) -> Result<(), ProcessError> {
    let workflow = step.contact.workflow;
    if workflow.state() != WorkflowState::Scheduled || !step.contact.active_jobs().is_empty() {
        return Ok(());
    }
    let failure = match reason {
        "no_phone_number" => Some(PermanentFailure::NoPhoneNumber),
        "no_window_opening" => Some(PermanentFailure::NoWindowOpening),
        _ if step.contact.barred_reason().is_some()
            && Restriction::ALL.into_iter().any(|r| r.reason() == reason) =>
        {
            Some(PermanentFailure::LeadBarred)
        }
        // Calls held for a person, or a reason this match does not know: a person
        // looks rather than the lead being given up.
        _ => None,
    };
    let Some(failure) = failure else {
        // Scheduled has an edge to needs-review within the step.
        let _ = step
            .contact
            .workflow
            .apply(workflow.step(), WorkflowState::NeedsReview);
        return Ok(());
    };
    let detail = match failure {
        PermanentFailure::NoPhoneNumber => "the contact has no phone number to call".to_owned(),
        PermanentFailure::NoWindowOpening => format!(
            "no calling window opens for the lead within {} days",
            step.config.move_horizon.as_secs() / 86_400
        ),
        _ => format!(
            "the contact may not be called: {}",
            reason.replace('_', " ")
        ),
    };
    crate::failures::fail_step(step, failure, reason, detail, Default::default())
}

/// Sends the launch of `job_id` in its slot (`expires_at`: when its calling window closes),
/// with the lead's zone and rules as the guards read them.
fn launch(
    step: &mut Step<'_, '_>,
    job_id: Uuid,
    slot_at: DateTime<Utc>,
    expires_at: Option<DateTime<Utc>>,
    zone: &ResolvedZone,
    lead: LeadRulesWire,
) -> Result<(), ProcessError> {
    let workflow = step.contact.workflow;
    if let Err(rejected) = step
        .contact
        .workflow
        .apply(workflow.step(), WorkflowState::Dispatching)
    {
        // The guards passed but the workflow cannot dispatch from where it
        // is: do not call, and say why.
        step.contact.rejected_transitions = step.contact.rejected_transitions.saturating_add(1);
        let ids = crate::telemetry::Ids {
            tenant: &step.contact.tenant_id,
            contact: &step.contact.contact_id,
            event_id: step.out.cause.event_id,
        };
        let total = step.contact.rejected_transitions;
        step.metrics
            .rejected(&ids, rejected.reason_code(), &rejected.to_string(), total);
        let reason = format!("workflow_{}", rejected.reason_code());
        return step.cancel(job_id, &reason, Some(rejected.to_string()), true);
    }
    let tenant = step.contact.tenant_id.clone();
    let slot_length = step.control.slot_length(&tenant);
    let launch_id = ids::launch(&tenant, job_id);
    let (at, cause, step_no) = (step.out.at, step.out.cause, step.contact.workflow.step());
    let phone = step.contact.phone.clone().unwrap_or_default();
    let Some(job) = step.contact.job_mut(job_id) else {
        return Ok(());
    };
    job.launch_id = Some(launch_id);
    job.launch_to = Some(phone.clone());
    job.step = step_no;
    job.set_state(JobState::Launched, "launched", None, at);
    job.cause = cause;
    let job = job.clone();
    step.metrics
        .decision(DecisionKind::Launch, job_id, "launched");
    let env = step.out.envelope(&["launch-command", &job_id.to_string()]);
    step.out.launch(&LaunchCommand {
        event_id: env.event_id,
        tenant_id: tenant,
        occurred_at: env.occurred_at,
        causation_id: Some(env.causation_id),
        correlation_id: Some(env.correlation_id),
        launch_id,
        job_id,
        contact_id: step.contact.contact_id.clone(),
        campaign_id: job.campaign_id.clone(),
        origin: job.origin,
        attempt: i32::try_from(job.attempt).unwrap_or(i32::MAX),
        to_number: phone,
        from_number: None,
        provider: None,
        slot_at,
        expires_at,
        slot_ends_at: Some(slot_end(slot_at, slot_length)),
        time_zone: Some(zone_names(zone)),
        jurisdictions: lead.jurisdictions,
        jurisdiction_source: lead.jurisdiction_source,
        placed_calls: lead.placed_calls,
    })
}

/// Every candidate zone, comma-separated, as schedule requests name them.
fn zone_names(zone: &ResolvedZone) -> String {
    zone.zones
        .iter()
        .map(|z| z.name())
        .collect::<Vec<_>>()
        .join(",")
}

/// The end of the slot that starts at `slot_at`.
fn slot_end(slot_at: DateTime<Utc>, length: std::time::Duration) -> DateTime<Utc> {
    chrono::TimeDelta::from_std(length)
        .ok()
        .and_then(|d| slot_at.checked_add_signed(d))
        .unwrap_or(slot_at)
}

/// The wall-clock re-check: re-plans every held job whose pause has lifted.
pub fn recheck_pauses(step: &mut Step<'_, '_>, now: DateTime<Utc>) -> Result<(), ProcessError> {
    let held: Vec<_> = step
        .contact
        .jobs
        .iter()
        .filter(|j| j.state == JobState::Held)
        .cloned()
        .collect();
    let tenant = step.contact.tenant_id.clone();
    for job in held {
        if step.control.pause(&tenant, &job.campaign_id).is_some() {
            step.recheck_pauses = true;
            continue;
        }
        // What the re-plan emits is caused by the launch_due that held the job.
        step.out.cause = job.cause;
        let new_id = step.job_id(&["pause_replan", &job.job_id.to_string()]);
        step.replace(
            job.job_id,
            NewJob {
                job_id: new_id,
                campaign_id: job.campaign_id.clone(),
                origin: JobOrigin::PauseReplan,
                earliest_at: now.max(job.earliest_at),
                requested_at: None,
                replaces: Some(job.job_id),
                reason: "pause_lifted".into(),
                reason_detail: Some(format!(
                    "re-planned after the pause ({}) lifted",
                    job.reason
                )),
                requested_in_call: None,
                attempt: Some(job.attempt),
            },
        )?;
    }
    Ok(())
}

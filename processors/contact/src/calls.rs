//! Call events: the shared normaliser, dedupe, the workflow, and for a
//! final outcome the next-step policy.
//!
//! Guarantees: a duplicate (same event id, or same call and outcome)
//! changes nothing and emits nothing; an event whose transition the
//! workflow rejects (backwards, of a finished step, a second result for one
//! call) is counted and logged and changes nothing else, and when it is a
//! final result it opens a `transition_rejected` exception (a call's result
//! nobody would act on); a final outcome that is accepted runs the policy
//! once, and its decisions are carried out in order (see `decisions`). A
//! lead's "stop" in an event's analysis (its flag, or the lead's words) is
//! kept on every path, the ones that change nothing else included: platforms
//! post the analysis in a webhook of its own, often after the status callback
//! has already recorded the call's result. A final result heard for a launch
//! counts as a call placed, for the frequency caps.

use callstream_domain::callback_time::{read_callback_time, Reading};
use callstream_domain::failures::PermanentFailure;
use callstream_domain::normaliser::Outcome;
use callstream_domain::policy::{decide, CallAnalysis, CallbackRequest, PolicyInput};
use callstream_domain::restrictions::{Change, Restriction};
use callstream_domain::workflow::WorkflowState;
use callstream_runtime::ProcessError;
use callstream_schemas::{CallEvent, JobState};
use chrono_tz::Tz;

use crate::decisions::{apply, CallFacts};
use crate::failures::{self, Subject};
use crate::jobs::Step;
use crate::state::Job;
use crate::telemetry::Ids;
use callstream_domain::ids::contact as ids;

/// The outcome of a call event, by the one shared rule (the raw status
/// through the shared normaliser, else the producer's stated outcome); an
/// event neither maps is invalid here (dead-lettered), never guessed.
pub fn outcome_of(event: &CallEvent) -> Result<Outcome, ProcessError> {
    event
        .normalised_outcome()
        .map_err(|e| ProcessError::Invalid(format!("call status: {e}")))
}

/// Handles one call event; `Ok(false)` when it changed nothing (a duplicate).
pub fn handle(step: &mut Step<'_, '_>, event: &CallEvent) -> Result<bool, ProcessError> {
    let outcome = outcome_of(event)?;
    let verdict = step
        .contact
        .dedupe
        .observe(&event.event_id.to_string(), Some((&event.call_id, outcome)));
    if verdict.is_duplicate() {
        step.metrics.duplicate(&ids_of(event), "call_event");
        return keep_the_leads_stop(step, event);
    }
    if let Some(zone) = event
        .reported_time_zone
        .as_deref()
        .filter(|z| !z.trim().is_empty())
    {
        step.contact.platform_zone = Some(zone.to_owned());
    }
    let job = event
        .launch_id
        .and_then(|l| step.contact.job_by_launch(l))
        .cloned();
    let event_step = job
        .as_ref()
        .map_or(step.contact.workflow.step(), |j| j.step);

    if !outcome.is_final() {
        if let Err(rejected) = step
            .contact
            .workflow
            .apply(event_step, WorkflowState::AwaitingResult)
        {
            reject(step, event, rejected.reason_code(), &rejected.to_string());
        }
        keep_the_leads_stop(step, event)?;
        return Ok(true);
    }

    if let (Some(launch_id), Some(job)) = (event.launch_id, job.as_ref()) {
        // A result heard for a launch is a call placed, even when its acceptance was lost
        // or comes later (the caps err on the side of counting); the platform's own
        // failure to place it is not.
        if outcome != Outcome::Failed {
            let subject = step.cap_subject(&job.campaign_id).to_owned();
            step.contact
                .record_placed(&subject, launch_id, event.occurred_at);
        }
    }
    if let Some(done) = job.as_ref().and_then(|j| j.outcome) {
        // Not a repeat (the dedupe saw this call and result before): the platform
        // reported two different results for one call, and an operator must say
        // which stands.
        let detail = format!(
            "call {} was reported {outcome} after its result {done} was recorded; \
             the later result was not applied",
            event.call_id
        );
        reject(step, event, "result_already_recorded", &detail);
        result_rejected(step, event, job.as_ref(), "result_already_recorded", detail)?;
        keep_the_leads_stop(step, event)?;
        return Ok(true);
    }
    let campaign = job
        .as_ref()
        .map(|j| j.campaign_id.clone())
        .or_else(|| event.campaign_id.clone())
        .or_else(|| step.contact.campaign.clone())
        .ok_or_else(|| {
            ProcessError::Invalid("final call event of no known job or campaign".into())
        })?;
    let rules = step.control.campaign(&step.contact.tenant_id, &campaign);
    let zone = step.zone();
    let (analysis, callback_note) = analysis_of(event, zone.primary());
    let input = PolicyInput {
        tenant_id: &event.tenant_id,
        contact_id: &event.contact_id,
        campaign_id: &campaign,
        call_id: &event.call_id,
        outcome,
        analysis: &analysis,
        flags: step.contact.policy_flags(),
        counters: step.contact.counters(&campaign),
        now: event.occurred_at,
        jitter: ids::jitter_of(event.event_id),
    };
    let next = decide(&rules.policy, &input)
        .map_err(|e| ProcessError::Invalid(format!("policy of campaign {campaign}: {e}")))?;

    // The transition is checked before anything is carried out: a rejected
    // one must leave no decision behind.
    let workflow = step.contact.workflow;
    // A lead barred while this call was out: the policy plans nothing, and
    // with nothing else planned the step ends there (never in dispatching).
    let barred_end = step.contact.barred_reason().is_some()
        && event_step == workflow.step()
        && matches!(
            workflow.state(),
            WorkflowState::Dispatching | WorkflowState::AwaitingResult
        )
        && step.contact.active_jobs().is_empty();
    let transition = match next.next_state {
        Some(to) => workflow.check(event_step, to).map(Some),
        None if event_step != workflow.step() => {
            workflow.check(event_step, workflow.state()).map(|_| None)
        }
        None => Ok(None),
    };
    let transition = match transition {
        Ok(t) => t,
        Err(rejected) => {
            reject(step, event, rejected.reason_code(), &rejected.to_string());
            let detail = format!(
                "call {} ended {outcome}, but the contact's workflow could not take it \
                 ({rejected}); the result was not applied",
                event.call_id
            );
            result_rejected(step, event, job.as_ref(), rejected.reason_code(), detail)?;
            keep_the_leads_stop(step, event)?;
            return Ok(true);
        }
    };
    if let Some(job) = job.as_ref().and_then(|j| step.contact.job_mut(j.job_id)) {
        job.outcome = Some(outcome);
        job.state = JobState::Completed;
        job.reason = outcome.as_str().to_owned();
        job.reason_detail = None;
        job.updated_at = step.out.at;
    }
    step.contact
        .counters
        .insert(campaign.clone(), next.counters);
    if let Some(applied) = transition {
        // Applied first, so jobs planned below belong to the step it begins.
        let _ = step.contact.workflow.apply(event_step, applied.to);
    }
    let facts = CallFacts {
        event,
        campaign_id: &campaign,
        job_id: job.as_ref().map(|j| j.job_id),
        callback_note,
    };
    apply(step, &next.decisions, &facts)?;
    if barred_end && next.next_state.is_none() {
        let reason = step.contact.barred_reason().unwrap_or("barred");
        let detail = format!(
            "the contact may not be called ({}) and nothing else is planned: the step ends \
             failed after call {}",
            reason.replace('_', " "),
            event.call_id
        );
        let subject = subject_of(event, &campaign, job.as_ref());
        failures::fail_step(step, PermanentFailure::LeadBarred, reason, detail, subject)?;
    }
    Ok(true)
}

/// A final result the workflow cannot take opens an exception: a call happened whose
/// result nobody will act on unless a person looks.
fn result_rejected(
    step: &mut Step<'_, '_>,
    event: &CallEvent,
    job: Option<&Job>,
    reason: &str,
    detail: String,
) -> Result<(), ProcessError> {
    let campaign = job
        .map(|j| j.campaign_id.clone())
        .or_else(|| event.campaign_id.clone())
        .unwrap_or_default();
    let subject = subject_of(event, &campaign, job);
    failures::open(
        step,
        PermanentFailure::ResultRejected,
        reason,
        detail,
        subject,
    )
}

fn subject_of(event: &CallEvent, campaign: &str, job: Option<&Job>) -> Subject {
    Subject {
        campaign_id: Some(campaign.to_owned()).filter(|c| !c.is_empty()),
        job_id: job.map(|j| j.job_id),
        launch_id: event.launch_id,
        call_id: Some(event.call_id.clone()),
    }
}

/// The lead's own "stop" from an event the workflow otherwise has no use for (a second
/// report of a call whose result is recorded, or one of a finished step): the sticky
/// mark is set, and if it is new every future job is cancelled and any launch in flight
/// stopped, as for a stop in the call's first report. `Ok(true)` when that changed the
/// contact.
fn keep_the_leads_stop(step: &mut Step<'_, '_>, event: &CallEvent) -> Result<bool, ProcessError> {
    if !event.analysis.as_ref().is_some_and(said_opt_out) {
        return Ok(false);
    }
    let source = step.contact.flags.sticky(Restriction::DoNotCall);
    if step.contact.flags.from_lead(Restriction::DoNotCall) != Change::Added {
        // Already barred (by the CRM): the lead's word is kept all the same, as the
        // sticky source no CRM `false` lifts.
        return Ok(step.contact.flags.sticky(Restriction::DoNotCall) != source);
    }
    let reason = Restriction::DoNotCall.reason();
    let detail = format!(
        "the lead asked not to be called again, in a later report of call {}",
        event.call_id
    );
    step.cancel_all(reason, Some(detail))?;
    crate::launch::end_step_if_idle(step, reason)?;
    step.stop_launches_in_flight(reason)?;
    Ok(true)
}

/// The lead opted out in this call: the analysis's flag, or the lead's words in any form
/// it reports them ("stop", "remove me", "do not call", "asked to be removed").
fn said_opt_out(a: &callstream_schemas::CallAnalysis) -> bool {
    a.do_not_call
        || [&a.request_phrase, &a.callback_phrase, &a.summary]
            .into_iter()
            .flatten()
            .any(|text| callstream_domain::opt_out::says_opt_out(text))
}

/// Counts and logs a rejected transition; nothing else changes.
fn reject(step: &mut Step<'_, '_>, event: &CallEvent, code: &str, detail: &str) {
    step.contact.rejected_transitions = step.contact.rejected_transitions.saturating_add(1);
    let total = step.contact.rejected_transitions;
    step.metrics.rejected(&ids_of(event), code, detail, total);
}

fn ids_of(event: &CallEvent) -> Ids<'_> {
    Ids {
        tenant: &event.tenant_id,
        contact: &event.contact_id,
        event_id: event.event_id,
    }
}

/// What the lead said, for the policy: a callback phrase is read in the
/// lead's zone at the call's time; the note says how it was read.
fn analysis_of(event: &CallEvent, zone: Tz) -> (CallAnalysis, Option<String>) {
    let Some(a) = &event.analysis else {
        return (CallAnalysis::default(), None);
    };
    let mut analysis = CallAnalysis {
        callback: None,
        call_me_later: false,
        do_not_call: said_opt_out(a),
        wants_person: a.wants_person,
        interested: a.interested,
        summary: a.summary.clone(),
    };
    let mut note = None;
    if a.callback_requested {
        match a
            .callback_phrase
            .as_deref()
            .filter(|p| !p.trim().is_empty())
        {
            Some(phrase) => {
                let read = read_callback_time(phrase, event.occurred_at, zone);
                let requested_at = match &read.reading {
                    Reading::Parsed { rule, .. } => {
                        note = Some(format!(
                            "read as {} {} ({rule:?})",
                            read.requested_local.format("%Y-%m-%d %H:%M"),
                            zone.name()
                        ));
                        Some(read.at)
                    }
                    Reading::Fallback { reason } => {
                        note = Some(format!("not read ({reason:?})"));
                        None
                    }
                };
                analysis.callback = Some(CallbackRequest {
                    requested_at,
                    phrase: phrase.to_owned(),
                });
            }
            None => analysis.call_me_later = true,
        }
    }
    (analysis, note)
}

//! Carries out the policy's decisions for one final call outcome, in the
//! order the policy gave them: plans become schedule requests, do-not-call
//! marks the contact and cancels its jobs, a person request opens an urgent
//! exception and holds calls, CRM commands go to the CRM dispatcher with
//! the policy's idempotency keys.

use callstream_domain::failures::PermanentFailure;
use std::collections::BTreeMap;

use callstream_domain::policy::{
    CallOrigin, CrmAction as PolicyCrm, CrmCommand as PolicyCrmCommand, Decision, ExceptionKind,
    PlannedCall, Reason, ReasonCode,
};
use callstream_runtime::ProcessError;
use callstream_schemas::{
    Actor, AuditResult, CallEvent, CrmAction, CrmCommand, ExceptionStatus, ExceptionType, JobOrigin,
};
use uuid::Uuid;

use crate::emit::{Audit, ExceptionCase};
use crate::jobs::{NewJob, Step};
use crate::state::Hold;

/// The call the decisions are about.
pub struct CallFacts<'a> {
    pub event: &'a CallEvent,
    pub campaign_id: &'a str,
    /// The job whose call this was, if known.
    pub job_id: Option<Uuid>,
    /// How a callback phrase was read, for the reason.
    pub callback_note: Option<String>,
}

/// The stable snake_case name of a reason code.
pub fn code(code: ReasonCode) -> String {
    serde_json::to_value(code)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{code:?}"))
}

/// The schema's origin for a policy origin.
pub fn origin(origin: CallOrigin) -> JobOrigin {
    match origin {
        CallOrigin::CampaignEntry => JobOrigin::CampaignEntry,
        CallOrigin::VoicemailRetry => JobOrigin::VoicemailRetry,
        CallOrigin::NoAnswerRetry => JobOrigin::NoAnswerRetry,
        CallOrigin::BusyRetry => JobOrigin::BusyRetry,
        // "Call me later" is a callback the lead asked for without a time;
        // the reason code tells the two apart.
        CallOrigin::Callback | CallOrigin::CallMeLater => JobOrigin::Callback,
        CallOrigin::StaleLeadAdvance => JobOrigin::StaleLeadAdvance,
        CallOrigin::ProviderFailureRetry => JobOrigin::FailureRetry,
        CallOrigin::OperatorRetry => JobOrigin::OperatorRetry,
        CallOrigin::WindowMove => JobOrigin::WindowMove,
    }
}

/// Carries out `decisions` in order.
pub fn apply(
    step: &mut Step<'_, '_>,
    decisions: &[Decision],
    call: &CallFacts<'_>,
) -> Result<(), ProcessError> {
    let mut last_exception = None;
    for (index, decision) in decisions.iter().enumerate() {
        match decision {
            Decision::PlanCall(planned) => plan(step, planned, call, index)?,
            Decision::MarkDoNotCall { .. } => {
                // The lead's own word: sticky, no CRM flag lifts it.
                let change = step
                    .contact
                    .flags
                    .from_lead(callstream_domain::restrictions::Restriction::DoNotCall);
                if change == callstream_domain::restrictions::Change::Added {
                    step.stop_launches_in_flight("do_not_call")?;
                }
            }
            Decision::CancelFutureJobs { reason } => {
                step.cancel_all(&code(reason.code), Some(reason.detail.clone()))?
            }
            Decision::OpenException {
                kind,
                urgent,
                reason,
            } => last_exception = Some(open_exception(step, *kind, *urgent, reason, call)?),
            Decision::HoldCalls { reason } => hold(step, last_exception, reason, call)?,
            Decision::AdvanceCampaign { from, to, reason } => {
                step.contact.campaign = Some(to.clone());
                step.contact.counters.insert(to.clone(), Default::default());
                let service = step.config.service_name.clone();
                step.out.audit(Audit {
                    actor: Actor::system(service),
                    action: "contact.campaign_advanced".into(),
                    command_id: None,
                    result: AuditResult::Applied,
                    reason: Some(code(reason.code)),
                    detail: Some(format!("{from} → {to}: {}", reason.detail)),
                })?;
            }
            Decision::Finish { reason } => {
                // The workflow is done: nothing planned for it may go.
                step.cancel_all(&code(reason.code), Some(reason.detail.clone()))?
            }
            Decision::Crm(command) => crm(step, command, call)?,
        }
    }
    Ok(())
}

fn plan(
    step: &mut Step<'_, '_>,
    planned: &PlannedCall,
    call: &CallFacts<'_>,
    index: usize,
) -> Result<(), ProcessError> {
    let mut detail = planned.reason.detail.clone();
    if planned.origin == CallOrigin::Callback {
        if let Some(note) = &call.callback_note {
            detail = format!("{detail}; {note}");
        }
    }
    let job_id = step.job_id(&["plan", &index.to_string()]);
    step.plan(NewJob {
        job_id,
        campaign_id: planned.campaign_id.clone(),
        origin: origin(planned.origin),
        earliest_at: planned.earliest,
        requested_at: planned.requested_at,
        replaces: call.job_id,
        reason: code(planned.reason.code),
        reason_detail: Some(detail),
        requested_in_call: planned
            .origin
            .lead_requested()
            .then(|| call.event.call_id.clone()),
        attempt: None,
    })?;
    if let Some(previous) = call.job_id.and_then(|id| step.contact.job_mut(id)) {
        // The next call of the lead continues this one's lineage.
        previous.replaced_by.get_or_insert(job_id);
    }
    Ok(())
}

fn open_exception(
    step: &mut Step<'_, '_>,
    kind: ExceptionKind,
    urgent: bool,
    reason: &Reason,
    call: &CallFacts<'_>,
) -> Result<Uuid, ProcessError> {
    let (type_, label) = match kind {
        ExceptionKind::PersonRequested => (ExceptionType::UrgentRequest, "person_requested"),
        ExceptionKind::ProviderFailuresExhausted => (
            ExceptionType::from(PermanentFailure::ProviderFailuresExhausted),
            "provider_failures_exhausted",
        ),
    };
    let exception_id =
        callstream_domain::ids::contact::derived(step.out.cause.event_id, &["exception", label]);
    let mut detail = reason.detail.clone();
    if let Some(words) = call
        .event
        .analysis
        .as_ref()
        .and_then(|a| a.request_phrase.as_deref())
        .filter(|_| kind == ExceptionKind::PersonRequested)
    {
        let words: String = words.chars().take(120).collect();
        detail = format!("{detail}: \"{words}\"");
    }
    let launch_id = call.event.launch_id;
    step.out.exception(ExceptionCase {
        exception_id,
        status: ExceptionStatus::Open,
        exception_type: type_,
        urgent,
        campaign_id: Some(call.campaign_id.to_owned()),
        job_id: call.job_id,
        launch_id,
        call_id: Some(call.event.call_id.clone()),
        reason: code(reason.code),
        detail: Some(detail),
        actor: Actor::system(step.config.service_name.clone()),
    })?;
    Ok(exception_id)
}

fn hold(
    step: &mut Step<'_, '_>,
    exception_id: Option<Uuid>,
    reason: &Reason,
    call: &CallFacts<'_>,
) -> Result<(), ProcessError> {
    let exception_id = exception_id.unwrap_or_else(|| {
        callstream_domain::ids::contact::derived(step.out.cause.event_id, &["hold"])
    });
    let reason_code = code(reason.code);
    let new = Hold {
        exception_id,
        urgent: reason.code == ReasonCode::PersonRequested,
        reason: reason_code,
        call_id: Some(call.event.call_id.clone()),
        campaign_id: Some(call.campaign_id.to_owned()),
    };
    if let Some(old) = step.contact.hold.replace(new) {
        let actor = Actor::system(step.config.service_name.clone());
        crate::commands::close_hold(step, &old, ExceptionStatus::Resolved, actor, "superseded")?;
    }
    Ok(())
}

fn crm(
    step: &mut Step<'_, '_>,
    command: &PolicyCrmCommand,
    call: &CallFacts<'_>,
) -> Result<(), ProcessError> {
    let event = call.event;
    let mut properties = BTreeMap::new();
    let (action, subject, body, due_at) = match &command.action {
        PolicyCrm::LogCall {
            campaign_id,
            outcome,
            occurred_at,
        } => {
            properties.insert("campaign_id".to_owned(), campaign_id.clone());
            properties.insert("outcome".to_owned(), outcome.as_str().to_owned());
            properties.insert("occurred_at".to_owned(), occurred_at.to_rfc3339());
            if let Some(seconds) = event.duration_seconds {
                properties.insert("duration_seconds".to_owned(), seconds.to_string());
            }
            let subject = format!("Call: {outcome}");
            (CrmAction::LogCall, Some(subject), None, None)
        }
        PolicyCrm::AddNote { summary } => (CrmAction::AddNote, None, Some(summary.clone()), None),
        PolicyCrm::UpdateLastOutcome { outcome } => {
            properties.insert(
                "callstream_last_outcome".to_owned(),
                outcome.as_str().to_owned(),
            );
            properties.insert(
                "callstream_last_call_at".to_owned(),
                event.occurred_at.to_rfc3339(),
            );
            (CrmAction::UpdateContact, None, None, None)
        }
        PolicyCrm::CreateFollowUpTask { due_at, reason } => (
            CrmAction::CreateTask,
            Some(reason.clone()),
            None,
            Some(*due_at),
        ),
    };
    let op = command.idempotency_key.to_string();
    let env = step.out.envelope(&["crm-command", &op]);
    step.out.crm(&CrmCommand {
        event_id: env.event_id,
        tenant_id: event.tenant_id.clone(),
        occurred_at: env.occurred_at,
        causation_id: Some(env.causation_id),
        correlation_id: Some(env.correlation_id),
        operation_id: command.idempotency_key,
        contact_id: event.contact_id.clone(),
        action,
        call_id: Some(command.call_id.clone()),
        campaign_id: Some(call.campaign_id.to_owned()),
        fact_at: event.occurred_at,
        properties,
        subject,
        body,
        due_at,
        owner_id: None,
    })
}

//! The records recovery writes: the replayed (or advancing) `call-event`
//! with `source = recovery`, the `completion-resolved` closing the case, the
//! exception changes, and an audit event for every recovery, advance and
//! ignore, naming its actor. Ids are derived (see `ids` and the detector's
//! `ids`), so a repeated decision writes identical records.

use callstream_domain::failures::PermanentFailure;
use callstream_domain::ids::completion_case as case_ids;
use callstream_kit::emit::timestamp;
use callstream_schemas::{
    Actor, AuditEvent, AuditResult, CallEvent, CallEventSource, CallOutcome, CompletionResolved,
    ExceptionEvent, ExceptionStatus, ExceptionType, Resolution,
};
use uuid::Uuid;

use crate::case::{Case, Next};
use crate::ids;
use crate::wire::{CallRecord, FetchResult};

/// The actor of recovery's own decisions.
pub const ACTOR: &str = "recovery";

fn call_event(case: &Case, now_ms: i64) -> CallEvent {
    CallEvent {
        event_id: Uuid::nil(),
        tenant_id: case.tenant_id.clone(),
        occurred_at: timestamp(now_ms),
        causation_id: Some(case.missing_event_id),
        correlation_id: case.correlation_id,
        provider: case.provider.clone(),
        integration_id: None,
        provider_event_id: String::new(),
        call_id: case.provider_call_id.clone(),
        contact_id: case.contact_id.clone(),
        launch_id: Some(case.launch_id),
        campaign_id: case.campaign_id.clone(),
        source: CallEventSource::Recovery,
        provider_status: String::new(),
        outcome: CallOutcome::Unknown,
        answered_by: None,
        duration_seconds: None,
        sequence_number: None,
        provider_error: None,
        reported_time_zone: None,
        received_at: timestamp(now_ms),
        analysis: None,
    }
}

/// The call event replayed from the provider's call record.
pub fn recovered(case: &Case, record: &CallRecord, outcome: CallOutcome, now_ms: i64) -> CallEvent {
    let sequence = record.sequence_number.clone().unwrap_or_default();
    let (event_id, provider_event_id) = ids::recovered_event(
        &case.tenant_id,
        &case.provider,
        &case.provider_call_id,
        &record.status,
        &sequence,
    );
    CallEvent {
        event_id,
        provider_event_id,
        occurred_at: timestamp(record.ended_at_ms.unwrap_or(now_ms)),
        provider_status: record.status.clone(),
        outcome,
        answered_by: record.answered_by.clone(),
        duration_seconds: record.duration_seconds,
        sequence_number: sequence.parse().ok(),
        ..call_event(case, now_ms)
    }
}

/// The raw status that says `outcome` in the provider's vocabulary, so the
/// contact processor, which re-normalises raw statuses, reads the same outcome.
fn status_for(provider: &str, outcome: CallOutcome) -> (String, Option<String>) {
    match (provider, outcome) {
        ("twilio", CallOutcome::Voicemail) => ("completed".into(), Some("machine_start".into())),
        ("twilio", CallOutcome::NoAnswer) => ("no-answer".into(), None),
        (_, outcome) => (outcome.as_str().to_string(), None),
    }
}

/// A call event advancing the contact without a call record (`no_answer`
/// when the platform lost the call, or what an operator chose).
pub fn advance(case: &Case, outcome: CallOutcome, now_ms: i64) -> CallEvent {
    let (event_id, provider_event_id) =
        ids::advance_event(&case.tenant_id, &case.launch_id, outcome.as_str());
    let (provider_status, answered_by) = status_for(&case.provider, outcome);
    CallEvent {
        event_id,
        provider_event_id,
        provider_status,
        answered_by,
        outcome,
        ..call_event(case, now_ms)
    }
}

/// Closes the case.
pub fn resolved(
    case: &Case,
    resolution: Resolution,
    completion: Option<&CallEvent>,
    actor: &Actor,
    now_ms: i64,
) -> CompletionResolved {
    CompletionResolved {
        event_id: case_ids::resolved_event(&case.launch_id),
        tenant_id: case.tenant_id.clone(),
        occurred_at: timestamp(now_ms),
        causation_id: completion
            .map(|c| c.event_id)
            .or(Some(case.missing_event_id)),
        correlation_id: case.correlation_id,
        launch_id: case.launch_id,
        contact_id: case.contact_id.clone(),
        provider_call_id: Some(case.provider_call_id.clone()),
        missing_event_id: case.missing_event_id,
        resolution,
        completion_event_id: completion.map(|c| c.event_id),
        outcome: completion.map(|c| c.outcome),
        actor: actor.clone(),
        late_by_ms: None,
    }
}

/// Which of a case's two exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Opened by the detector with `completion-missing`.
    Missing,
    /// Opened by recovery when it gave up.
    RecoveryFailed,
}

/// A change of one of the case's exceptions.
pub fn exception(
    case: &Case,
    which: Which,
    status: ExceptionStatus,
    actor: &Actor,
    detail: String,
    now_ms: i64,
) -> ExceptionEvent {
    let (exception_id, exception_type, reason) = match which {
        Which::Missing => (
            case_ids::missing_exception(&case.launch_id),
            ExceptionType::CompletionMissing,
            "completion_missing",
        ),
        Which::RecoveryFailed => (
            case_ids::recovery_failed_exception(&case.launch_id),
            ExceptionType::from(PermanentFailure::RecoveryGaveUp),
            "recovery_failed",
        ),
    };
    ExceptionEvent {
        event_id: case_ids::exception_event(&exception_id, status.as_str()),
        tenant_id: case.tenant_id.clone(),
        occurred_at: timestamp(now_ms),
        causation_id: Some(case.missing_event_id),
        correlation_id: case.correlation_id,
        exception_id,
        status,
        exception_type,
        urgent: false,
        contact_id: case.contact_id.clone(),
        campaign_id: case.campaign_id.clone(),
        job_id: case.job_id,
        launch_id: Some(case.launch_id),
        call_id: Some(case.provider_call_id.clone()),
        operation_id: Some(case.launch_id),
        reason: reason.to_string(),
        detail: Some(detail),
        actor: actor.clone(),
        assignee: None,
    }
}

/// What an audit event records.
#[derive(Debug, Clone, Copy)]
pub struct AuditFacts<'a> {
    pub action: &'a str,
    pub actor: &'a Actor,
    pub command_id: Option<Uuid>,
    pub result: AuditResult,
    pub reason: Option<&'a str>,
    pub detail: Option<&'a str>,
    pub now_ms: i64,
}

/// An audit event about a case.
pub fn audit(case: &Case, f: AuditFacts<'_>) -> AuditEvent {
    AuditEvent {
        event_id: ids::audit_event(&case.launch_id, f.action, f.command_id.as_ref()),
        tenant_id: case.tenant_id.clone(),
        occurred_at: timestamp(f.now_ms),
        causation_id: f.command_id.or(Some(case.missing_event_id)),
        correlation_id: case.correlation_id,
        actor: f.actor.clone(),
        action: f.action.to_string(),
        subject_type: "launch".into(),
        subject_id: case.launch_id.to_string(),
        contact_id: Some(case.contact_id.clone()),
        command_id: f.command_id,
        result: f.result,
        reason: f.reason.map(str::to_string),
        detail: f.detail.map(str::to_string),
    }
}

/// The audit event of a lookup that left its case open (`next` is a poll, a retry or a
/// failure), numbered by the case's lookups so that their count is the case's recovery
/// attempts and the latest says what was found. `None` for a lookup that closes the case:
/// the closing audit says that.
pub fn lookup(case: &Case, next: &Next, result: &FetchResult, now_ms: i64) -> Option<AuditEvent> {
    let reason = match next {
        Next::Recovered { .. } | Next::AdvanceNoAnswer => return None,
        Next::Poll { .. } => "in_progress",
        Next::Retry { .. } => "lookup_failed",
        Next::Fail { .. } => "gave_up",
    };
    let found = match result {
        FetchResult::Found { record } => format!("the call is {}", record.status),
        FetchResult::NotFound => "no such call".to_string(),
        FetchResult::Failed { reason, .. } => format!("failed: {reason}"),
    };
    let detail = format!("lookup {}: {found}", case.fetches);
    let facts = AuditFacts {
        action: callstream_schemas::AUDIT_RECOVERY_LOOKUP,
        actor: &case.actor,
        command_id: case.command_id,
        result: AuditResult::Applied,
        reason: Some(reason),
        detail: Some(&detail),
        now_ms,
    };
    Some(AuditEvent {
        event_id: ids::lookup_audit(&case.launch_id, case.fetches),
        ..audit(case, facts)
    })
}

//! The records the dispatcher emits: a `crm-result` for every command it
//! settles, an `exception` opened for every one that failed for good (and
//! its closing, when an operator retries it or it settles otherwise), both
//! keyed by contact, and an `audit` event (keyed by tenant) for every
//! operator retry; with the schemas' headers, the event id header and the
//! trace context.
//!
//! Event ids are UUIDv5 over the operation id and the ordinal of the
//! result (or exception) for that operation, which the ledger counts: a
//! step repeated after an aborted transaction emits the same ids, and a
//! command that comes again (a replay) gets new ones. A closing's id is
//! derived from the exception's id (an exception closes once), an audit
//! event's from the operator command's.

use callstream_domain::failures::PermanentFailure;
use callstream_runtime::{header, Output};
use callstream_schemas::{
    Actor, AuditEvent, AuditResult, ContactCommand, CrmCommand, CrmResult, CrmResultStatus,
    EncodeError, Event, ExceptionEvent, ExceptionStatus, ExceptionType,
};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Physical names of the topics written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputTopics {
    pub results: String,
    pub exceptions: String,
    pub audit: String,
}

use callstream_domain::ids::crm_dispatcher::event as event_id;
pub use callstream_domain::ids::crm_dispatcher::exception as exception_id;

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// What a result says besides the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub status: CrmResultStatus,
    pub object_type: Option<String>,
    pub object_id: Option<String>,
    pub attempts: u32,
    pub http_status: Option<u16>,
    pub error: Option<String>,
}

/// The `crm-result` for `command`, the `ordinal`-th for its operation.
pub fn result(
    topics: &OutputTopics,
    command: &CrmCommand,
    report: &Report,
    ordinal: u32,
    now_ms: i64,
    traceparent: Option<&str>,
) -> Result<Output, EncodeError> {
    let event = CrmResult {
        event_id: event_id(&command.operation_id, "result", ordinal),
        tenant_id: command.tenant_id.clone(),
        occurred_at: at(now_ms),
        causation_id: Some(command.event_id),
        correlation_id: Some(command.correlation_id.unwrap_or(command.event_id)),
        operation_id: command.operation_id,
        contact_id: command.contact_id.clone(),
        action: command.action,
        status: report.status,
        crm_object_type: report.object_type.clone(),
        crm_object_id: report.object_id.clone(),
        attempts: i32::try_from(report.attempts).unwrap_or(i32::MAX),
        http_status: report.http_status.map(i32::from),
        error: report.error.clone(),
    };
    output(&topics.results, &command.contact_id, &event, traceparent)
}

/// The exception opened for `command`, which failed for `reason`.
#[allow(clippy::too_many_arguments)]
pub fn exception(
    topics: &OutputTopics,
    command: &CrmCommand,
    reason: &str,
    last_error: &str,
    ordinal: u32,
    now_ms: i64,
    actor: &str,
    traceparent: Option<&str>,
) -> Result<Output, EncodeError> {
    let action = command.action.as_str();
    let event = ExceptionEvent {
        event_id: event_id(&command.operation_id, "exception-event", ordinal),
        tenant_id: command.tenant_id.clone(),
        occurred_at: at(now_ms),
        causation_id: Some(command.event_id),
        correlation_id: Some(command.correlation_id.unwrap_or(command.event_id)),
        exception_id: exception_id(&command.operation_id, ordinal),
        status: ExceptionStatus::Open,
        exception_type: ExceptionType::from(PermanentFailure::CrmWriteFailed),
        urgent: false,
        contact_id: command.contact_id.clone(),
        campaign_id: command.campaign_id.clone(),
        job_id: None,
        launch_id: None,
        call_id: command.call_id.clone(),
        operation_id: Some(command.operation_id),
        reason: reason.to_owned(),
        detail: Some(format!("{action} failed: {last_error}")),
        actor: Actor::system(actor),
        assignee: command.owner_id.clone(),
    };
    output(&topics.exceptions, &command.contact_id, &event, traceparent)
}

/// How an open exception is closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closing {
    pub exception_id: Uuid,
    /// Who closed it: the operator who retried, or this service.
    pub actor: Actor,
    /// What closed it (`retried`, `superseded`, `settled`).
    pub reason: String,
    pub detail: Option<String>,
    /// The event that closed it: the operator's command or the command.
    pub causation_id: Uuid,
}

/// The `resolved` change of the exception opened for `command`.
pub fn exception_resolved(
    topics: &OutputTopics,
    command: &CrmCommand,
    closing: &Closing,
    now_ms: i64,
    traceparent: Option<&str>,
) -> Result<Output, EncodeError> {
    let event = ExceptionEvent {
        event_id: event_id(&closing.exception_id, "closed", 0),
        tenant_id: command.tenant_id.clone(),
        occurred_at: at(now_ms),
        causation_id: Some(closing.causation_id),
        correlation_id: Some(command.correlation_id.unwrap_or(command.event_id)),
        exception_id: closing.exception_id,
        status: ExceptionStatus::Resolved,
        exception_type: ExceptionType::CrmFailed,
        urgent: false,
        contact_id: command.contact_id.clone(),
        campaign_id: command.campaign_id.clone(),
        job_id: None,
        launch_id: None,
        call_id: command.call_id.clone(),
        operation_id: Some(command.operation_id),
        reason: closing.reason.clone(),
        detail: closing.detail.clone(),
        actor: closing.actor.clone(),
        assignee: command.owner_id.clone(),
    };
    output(&topics.exceptions, &command.contact_id, &event, traceparent)
}

/// The audit event of an operator's retry of the exception it names:
/// carried out or refused, with the reason code; the operator's own words
/// are its detail.
pub fn retry_audit(
    topics: &OutputTopics,
    request: &ContactCommand,
    result: AuditResult,
    reason: &str,
    now_ms: i64,
    traceparent: Option<&str>,
) -> Result<Output, EncodeError> {
    let event = AuditEvent {
        event_id: event_id(&request.event_id, "audit", 0),
        tenant_id: request.tenant_id.clone(),
        occurred_at: at(now_ms),
        causation_id: Some(request.event_id),
        correlation_id: Some(request.correlation_id.unwrap_or(request.event_id)),
        actor: request.actor.clone(),
        action: RETRY_ACTION.to_owned(),
        subject_type: "exception".to_owned(),
        subject_id: request
            .exception_id
            .map(|e| e.to_string())
            .unwrap_or_default(),
        contact_id: Some(request.contact_id.clone()),
        command_id: Some(request.event_id),
        result,
        reason: Some(reason.to_owned()),
        detail: request.reason.clone(),
    };
    output(&topics.audit, &request.tenant_id, &event, traceparent)
}

/// The audit action of an operator's retry of a failed CRM command.
pub const RETRY_ACTION: &str = "crm.retry";

fn output<E: Event>(
    topic: &str,
    key: &str,
    event: &E,
    traceparent: Option<&str>,
) -> Result<Output, EncodeError> {
    let output = callstream_kit::emit::output(topic, key, event)?;
    Ok(match traceparent {
        Some(trace) => output.header(header::TRACEPARENT, trace.to_owned()),
        None => output,
    })
}

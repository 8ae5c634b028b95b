//! The records the dispatcher emits: `call-launch` (keyed by contact),
//! `exception` for failed launches (keyed by contact) and `audit` for what
//! reconciliation found (keyed by tenant).
//!
//! Event ids are UUIDv5 over the launch id and what the event says, so a
//! step that is replayed after an aborted transaction emits the same ids
//! and downstream deduplication holds. A launch emits each status at most
//! once (the state machine sees to it), so `(launch, status)` is unique.

use callstream_domain::failures::PermanentFailure;
use callstream_domain::ids::launch_dispatcher::event as event_id;
use callstream_runtime::{header, Output};
use callstream_schemas::{
    Actor, AuditEvent, AuditResult, CallLaunch, EncodeError, Event, ExceptionEvent,
    ExceptionStatus, ExceptionType, LaunchStatus,
};
use chrono::{DateTime, Utc};

use crate::ledger::{Entry, Failure, FailureKind, Outcome};

/// The service name in `actor` fields.
pub const ACTOR: &str = "launch-dispatcher";

/// Physical names of the topics written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputTopics {
    pub call_launches: String,
    pub exceptions: String,
    pub audit: String,
}

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// What a `call-launch` says besides the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchReport<'a> {
    pub status: LaunchStatus,
    pub call_id: Option<&'a str>,
    pub reconciled: bool,
    pub reason: Option<&'a str>,
    pub detail: Option<&'a str>,
    pub not_before_ms: Option<i64>,
}

impl<'a> LaunchReport<'a> {
    /// The report of a final outcome.
    pub fn of(outcome: &'a Outcome) -> Self {
        match outcome {
            Outcome::Accepted {
                call_id,
                reconciled,
            } => Self {
                status: LaunchStatus::Accepted,
                call_id: Some(call_id),
                reconciled: *reconciled,
                reason: None,
                detail: None,
                not_before_ms: None,
            },
            Outcome::Failed { failure } => Self {
                status: LaunchStatus::Failed,
                call_id: None,
                reconciled: false,
                reason: Some(&failure.reason),
                detail: failure.detail.as_deref(),
                not_before_ms: None,
            },
            Outcome::Held {
                reason,
                detail,
                not_before_ms,
            } => Self {
                status: LaunchStatus::Held,
                call_id: None,
                reconciled: false,
                reason: Some(reason),
                detail: Some(detail),
                not_before_ms: *not_before_ms,
            },
            Outcome::Shadow => Self {
                status: LaunchStatus::Shadow,
                call_id: None,
                reconciled: false,
                reason: None,
                detail: None,
                not_before_ms: None,
            },
        }
    }
}

/// The `call-launch` record for `entry` as of now.
pub fn call_launch(
    topics: &OutputTopics,
    provider: &str,
    entry: &Entry,
    report: &LaunchReport<'_>,
    now_ms: i64,
) -> Result<Output, EncodeError> {
    let launch = &entry.launch;
    let event = CallLaunch {
        event_id: event_id(&launch.launch_id, report.status.as_str()),
        tenant_id: launch.tenant_id.clone(),
        occurred_at: at(now_ms),
        causation_id: Some(launch.command_id),
        correlation_id: Some(launch.correlation_id.unwrap_or(launch.command_id)),
        launch_id: launch.launch_id,
        job_id: launch.job_id,
        contact_id: launch.contact_id.clone(),
        campaign_id: launch.campaign_id.clone(),
        status: report.status,
        provider: provider.to_owned(),
        provider_call_id: report.call_id.map(str::to_owned),
        attempts: i32::try_from(entry.attempts).unwrap_or(i32::MAX),
        requested_at: at(entry.requested_at_ms.unwrap_or(now_ms)),
        reconciled: report.reconciled,
        reason: report.reason.map(str::to_owned),
        reason_detail: report.detail.map(str::to_owned),
        not_before: report.not_before_ms.map(at),
    };
    output(&topics.call_launches, &launch.contact_id, &event, entry)
}

/// The exception a failed launch opens.
pub fn exception(
    topics: &OutputTopics,
    entry: &Entry,
    failure: &Failure,
    now_ms: i64,
) -> Result<Output, EncodeError> {
    let launch = &entry.launch;
    let event = ExceptionEvent {
        event_id: event_id(&launch.launch_id, "exception/open"),
        tenant_id: launch.tenant_id.clone(),
        occurred_at: at(now_ms),
        causation_id: Some(launch.command_id),
        correlation_id: Some(launch.correlation_id.unwrap_or(launch.command_id)),
        exception_id: event_id(&launch.launch_id, "exception"),
        status: ExceptionStatus::Open,
        exception_type: match failure.kind {
            FailureKind::Launch => ExceptionType::from(PermanentFailure::LaunchRefused),
            FailureKind::Provider | FailureKind::Unresolved => {
                ExceptionType::from(PermanentFailure::ProviderFailed)
            }
        },
        urgent: false,
        contact_id: launch.contact_id.clone(),
        campaign_id: Some(launch.campaign_id.clone()),
        job_id: Some(launch.job_id),
        launch_id: Some(launch.launch_id),
        call_id: None,
        operation_id: None,
        reason: failure.reason.clone(),
        detail: failure.detail.clone(),
        actor: Actor::system(ACTOR),
        assignee: None,
    };
    output(&topics.exceptions, &launch.contact_id, &event, entry)
}

/// The audit record of what a reconciliation found.
pub fn reconciled(
    topics: &OutputTopics,
    entry: &Entry,
    detail: &str,
    now_ms: i64,
) -> Result<Output, EncodeError> {
    let launch = &entry.launch;
    let event = AuditEvent {
        // One reconciliation result per sequence number.
        event_id: event_id(&launch.launch_id, &format!("audit/{}", entry.seq)),
        tenant_id: launch.tenant_id.clone(),
        occurred_at: at(now_ms),
        causation_id: Some(launch.command_id),
        correlation_id: Some(launch.correlation_id.unwrap_or(launch.command_id)),
        actor: Actor::system(ACTOR),
        action: "launch.reconciled".into(),
        subject_type: "launch".into(),
        subject_id: launch.launch_id.to_string(),
        contact_id: Some(launch.contact_id.clone()),
        command_id: None,
        result: AuditResult::Applied,
        reason: None,
        detail: Some(detail.to_owned()),
    };
    output(&topics.audit, &launch.tenant_id, &event, entry)
}

fn output<E: Event>(
    topic: &str,
    key: &str,
    event: &E,
    entry: &Entry,
) -> Result<Output, EncodeError> {
    let output = callstream_kit::emit::output(topic, key, event)?;
    Ok(match entry.launch.traceparent.as_deref() {
        Some(trace) => output.header(header::TRACEPARENT, trace.to_owned()),
        None => output,
    })
}

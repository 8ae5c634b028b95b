//! The records the detector writes: `completion-missing`, `completion-resolved`
//! (late), the exception case they open and close, and delivery alerts.
//! Every id is derived (`callstream_domain::ids::completion_case`), so a
//! replay writes the same records.

use callstream_domain::failures::PermanentFailure;
use callstream_domain::ids::completion_case as ids;
use callstream_kit::emit::timestamp;
use callstream_schemas::{
    Actor, Alert, AlertKind, AlertStatus, CompletionMissing, CompletionResolved, ExceptionEvent,
    ExceptionStatus, ExceptionType, Resolution,
};
use uuid::Uuid;

use crate::state::{Completion, Launch};

/// Who the detector's records name as their actor.
pub const ACTOR: &str = "completion-detector";

fn correlation(launch: &Launch) -> Option<Uuid> {
    launch.correlation_id.or(Some(launch.event_id))
}

/// `completion-missing` for a launch whose window closed.
pub fn missing(launch: &Launch, contact_id: &str, now_ms: i64) -> CompletionMissing {
    CompletionMissing {
        event_id: ids::missing_event(&launch.launch_id),
        tenant_id: launch.tenant_id.clone(),
        occurred_at: timestamp(now_ms),
        causation_id: Some(launch.event_id),
        correlation_id: correlation(launch),
        launch_id: launch.launch_id,
        job_id: Some(launch.job_id),
        contact_id: contact_id.to_string(),
        campaign_id: Some(launch.campaign_id.clone()),
        provider: launch.provider.clone(),
        provider_call_id: launch.provider_call_id.clone(),
        accepted_at: timestamp(launch.accepted_at_ms),
        deadline_at: timestamp(launch.deadline_ms()),
        window_ms: launch.window_ms,
        grace_ms: launch.grace_ms,
        trigger: launch
            .missing
            .unwrap_or(callstream_schemas::MissingTrigger::Unknown),
    }
}

/// The exception case of a missing completion, opened (`status = Open`) or
/// closed by a late completion (`Resolved`).
pub fn missing_exception(
    launch: &Launch,
    contact_id: &str,
    status: ExceptionStatus,
    now_ms: i64,
    detail: String,
) -> ExceptionEvent {
    let exception_id = ids::missing_exception(&launch.launch_id);
    ExceptionEvent {
        event_id: ids::exception_event(&exception_id, status.as_str()),
        tenant_id: launch.tenant_id.clone(),
        occurred_at: timestamp(now_ms),
        causation_id: Some(ids::missing_event(&launch.launch_id)),
        correlation_id: correlation(launch),
        exception_id,
        status,
        exception_type: ExceptionType::from(PermanentFailure::CompletionMissing),
        urgent: false,
        contact_id: contact_id.to_string(),
        campaign_id: Some(launch.campaign_id.clone()),
        job_id: Some(launch.job_id),
        launch_id: Some(launch.launch_id),
        call_id: Some(launch.provider_call_id.clone()),
        operation_id: Some(launch.launch_id),
        reason: "completion_missing".to_string(),
        detail: Some(detail),
        actor: Actor::system(ACTOR),
        assignee: None,
    }
}

/// `completion-resolved` for a completion that came after the deadline.
pub fn late(
    launch: &Launch,
    completion: &Completion,
    contact_id: &str,
    now_ms: i64,
) -> CompletionResolved {
    CompletionResolved {
        event_id: ids::resolved_event(&launch.launch_id),
        tenant_id: launch.tenant_id.clone(),
        occurred_at: timestamp(now_ms),
        causation_id: Some(completion.event_id),
        correlation_id: correlation(launch),
        launch_id: launch.launch_id,
        contact_id: contact_id.to_string(),
        provider_call_id: Some(launch.provider_call_id.clone()),
        missing_event_id: ids::missing_event(&launch.launch_id),
        resolution: Resolution::LateCompletion,
        completion_event_id: Some(completion.event_id),
        outcome: Some(completion.outcome),
        actor: Actor::system(ACTOR),
        late_by_ms: Some(completion.arrived_at_ms - launch.deadline_ms()),
    }
}

/// What a delivery alert reports.
#[derive(Debug, Clone, Copy)]
pub struct AlertFacts<'a> {
    pub tenant: &'a str,
    pub alert_id: Uuid,
    pub status: AlertStatus,
    pub bucket_start_ms: i64,
    pub bucket_ms: i64,
    pub launches: u64,
    pub delivered: u64,
    pub rate: f64,
    pub threshold: f64,
    pub now_ms: i64,
}

pub fn alert(f: AlertFacts<'_>) -> Alert {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    Alert {
        event_id: ids::alert_event(&f.alert_id, f.status.as_str()),
        tenant_id: f.tenant.to_string(),
        occurred_at: timestamp(f.now_ms),
        causation_id: None,
        correlation_id: Some(f.alert_id),
        alert_id: f.alert_id,
        kind: AlertKind::DeliveryRateLow,
        status: f.status,
        bucket_start: timestamp(f.bucket_start_ms),
        bucket_ms: f.bucket_ms,
        launches: count(f.launches),
        completions: count(f.delivered),
        rate: f.rate,
        threshold: f.threshold,
        detail: Some(format!(
            "{} of {} launches had their completion delivered by the platform",
            f.delivered, f.launches
        )),
        subject: None,
    }
}

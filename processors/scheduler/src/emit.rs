//! The records the scheduler emits, built from a job: schedule events
//! (keyed by tenant), LaunchDue contact commands and exceptions (keyed by
//! contact). Each carries the event's headers (type, fingerprint,
//! causation, correlation) and its id as `event-id`, so processors
//! downstream inherit the causation chain.

use callstream_domain::failures::PermanentFailure;
use callstream_schemas::{
    Actor, ContactCommand, ContactCommandKind, ExceptionEvent, ExceptionStatus, ExceptionType,
    ScheduleEvent, ScheduleEventKind, Timestamp,
};
use chrono::DateTime;
use uuid::Uuid;

use crate::jobs::Job;
use callstream_domain::ids::scheduler as ids;

/// The actor id the scheduler acts as.
pub const ACTOR: &str = "scheduler";

fn at_ms(ms: Option<i64>) -> Option<Timestamp> {
    ms.and_then(DateTime::from_timestamp_millis)
}

pub use callstream_kit::emit::output_or_refuse as output;

/// What a schedule event says beyond the job itself.
pub struct Decision<'a> {
    pub kind: ScheduleEventKind,
    pub event_id: Uuid,
    pub causation_id: Option<Uuid>,
    pub correlation_id: Option<Uuid>,
    pub occurred_at: Timestamp,
    pub reason: &'a str,
    pub detail: Option<String>,
}

/// A schedule event about `job`.
pub fn schedule_event(job: &Job, decision: Decision<'_>) -> ScheduleEvent {
    ScheduleEvent {
        event_id: decision.event_id,
        tenant_id: job.tenant_id.clone(),
        occurred_at: decision.occurred_at,
        causation_id: decision.causation_id,
        correlation_id: decision.correlation_id,
        kind: decision.kind,
        job_id: job.job_id,
        contact_id: job.contact_id.clone(),
        campaign_id: job.campaign_id.clone(),
        origin: job.origin,
        slot: job.slot.and_then(|s| i64::try_from(s).ok()),
        slot_at: at_ms(job.slot_at_ms),
        earliest_at: at_ms(job.earliest_at_ms),
        requested_at: at_ms(job.requested_at_ms),
        replaces_job_id: job.replaces_job_id,
        time_zone: job.time_zone.clone(),
        time_zone_source: job.time_zone_source,
        reason: decision.reason.to_owned(),
        reason_detail: decision.detail.filter(|d| !d.is_empty()),
    }
}

/// The LaunchDue command for a job whose slot came due at `due`.
pub fn launch_due(job: &Job, slot: u64, due: Timestamp) -> ContactCommand {
    ContactCommand {
        event_id: ids::for_slot("launch_due_command", &job.tenant_id, job.job_id, slot),
        tenant_id: job.tenant_id.clone(),
        occurred_at: due,
        causation_id: Some(job.decision_event_id),
        correlation_id: job.correlation_id,
        kind: ContactCommandKind::LaunchDue,
        contact_id: job.contact_id.clone(),
        actor: Actor::system(ACTOR),
        request_id: None,
        campaign_id: Some(job.campaign_id.clone()),
        job_id: Some(job.job_id),
        launch_id: None,
        exception_id: None,
        origin: Some(job.origin),
        slot: i64::try_from(slot).ok(),
        slot_at: at_ms(job.slot_at_ms),
        requested_at: at_ms(job.requested_at_ms),
        contact: None,
        reason: Some("slot_due".to_owned()),
    }
}

/// The exception a refused job opens (one case per job).
pub fn no_slot_exception(
    job: &Job,
    request_event: Uuid,
    occurred_at: Timestamp,
    reason: &str,
    detail: &str,
) -> ExceptionEvent {
    ExceptionEvent {
        event_id: ids::derived("exception", request_event),
        tenant_id: job.tenant_id.clone(),
        occurred_at,
        causation_id: Some(job.decision_event_id),
        correlation_id: job.correlation_id,
        exception_id: ids::for_job("no_slot_case", &job.tenant_id, job.job_id),
        status: ExceptionStatus::Open,
        exception_type: ExceptionType::from(PermanentFailure::NoSlot),
        urgent: false,
        contact_id: job.contact_id.clone(),
        campaign_id: Some(job.campaign_id.clone()),
        job_id: Some(job.job_id),
        launch_id: None,
        call_id: None,
        operation_id: None,
        reason: reason.to_owned(),
        detail: Some(detail.to_owned()).filter(|d| !d.is_empty()),
        actor: Actor::system(ACTOR),
        assignee: None,
    }
}

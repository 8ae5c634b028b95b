//! The scheduler's record of each job (store `jobs`, key = tenant and job
//! id), kept after the job finishes for `job_retention`, so a duplicate
//! request for the same job id changes nothing.

use callstream_runtime::{Context, ProcessError};
use callstream_schemas::{JobOrigin, ScheduleRequest, ZoneSource};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub const JOBS_STORE: &str = "jobs";

/// Where a job is in its life at the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Holds a slot; its launch timer is set.
    Booked,
    /// Its slot came due and LaunchDue went out.
    Launched,
    Cancelled,
    Refused,
}

/// One job as the scheduler keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub job_id: Uuid,
    pub tenant_id: String,
    pub contact_id: String,
    pub campaign_id: String,
    pub origin: JobOrigin,
    pub state: JobState,
    pub slot: Option<u64>,
    pub slot_at_ms: Option<i64>,
    pub earliest_at_ms: Option<i64>,
    pub requested_at_ms: Option<i64>,
    pub replaces_job_id: Option<Uuid>,
    pub time_zone: Option<String>,
    pub time_zone_source: Option<ZoneSource>,
    pub attempt: Option<i32>,
    /// The allocation (or refusal) event: the cause of what follows.
    pub decision_event_id: Uuid,
    pub correlation_id: Option<Uuid>,
}

impl Job {
    /// A new job from its plan request, before its slot is known.
    pub fn from_request(request: &ScheduleRequest, decision_event_id: Uuid) -> Self {
        Self {
            job_id: request.job_id,
            tenant_id: request.tenant_id.clone(),
            contact_id: request.contact_id.clone(),
            campaign_id: request.campaign_id.clone(),
            origin: request.origin,
            state: JobState::Refused,
            slot: None,
            slot_at_ms: None,
            earliest_at_ms: request.earliest_at.map(|t| t.timestamp_millis()),
            requested_at_ms: request.requested_at.map(|t| t.timestamp_millis()),
            replaces_job_id: request.replaces_job_id,
            time_zone: request.time_zone.clone(),
            time_zone_source: request.time_zone_source,
            attempt: request.attempt,
            decision_event_id,
            correlation_id: request.correlation_id.or(Some(request.event_id)),
        }
    }
}

/// The store key of a job: tenant length (u16 BE), tenant, job id.
pub fn job_key(tenant: &str, job: Uuid) -> Vec<u8> {
    let bytes = tenant.as_bytes();
    let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
    let mut key = Vec::with_capacity(2 + bytes.len() + 16);
    key.extend_from_slice(&len.to_be_bytes());
    key.extend_from_slice(&bytes[..usize::from(len)]);
    key.extend_from_slice(job.as_bytes());
    key
}

pub fn load(ctx: &Context<'_>, key: &[u8]) -> Result<Option<Job>, ProcessError> {
    ctx.get_json(JOBS_STORE, key)
        .map_err(|e| ProcessError::Invalid(format!("stored job is corrupt: {e}")))
}

pub fn save(ctx: &mut Context<'_>, key: &[u8], job: &Job) -> Result<(), ProcessError> {
    ctx.put_json(JOBS_STORE, key.to_vec(), job)
        .map_err(|e| ProcessError::Invalid(format!("job cannot be stored: {e}")))
}

//! What the API answers: rows of the views as JSON, with their OpenAPI schemas.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// A planned call.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct Job {
    pub job_id: Uuid,
    pub contact_id: String,
    pub campaign_id: Option<String>,
    /// Why the call was planned (campaign_entry, voicemail_retry, callback, ...).
    pub origin: Option<String>,
    pub attempt: Option<i32>,
    /// requested, scheduled, due, dispatching, launched, ambiguous, completed, failed,
    /// shadow, refused, cancelled, replaced.
    pub state: String,
    pub state_at: DateTime<Utc>,
    /// Why it is in its state.
    pub reason: Option<String>,
    pub reason_detail: Option<String>,
    /// Why it was planned.
    pub plan_reason: Option<String>,
    /// The call's outcome, once completed.
    pub outcome: Option<String>,
    pub earliest_at: Option<DateTime<Utc>>,
    /// The time the lead asked for.
    pub requested_at: Option<DateTime<Utc>>,
    pub slot: Option<i64>,
    pub slot_at: Option<DateTime<Utc>>,
    /// Sort key: the slot time, else the earliest time, else when first seen.
    pub planned_at: DateTime<Utc>,
    pub time_zone: Option<String>,
    pub time_zone_source: Option<String>,
    pub replaces_job_id: Option<Uuid>,
    pub replaced_by_job_id: Option<Uuid>,
    pub launch_id: Option<Uuid>,
    pub provider_call_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Columns of [`Job`], for queries.
pub const JOB_COLUMNS: &str = "job_id, contact_id, campaign_id, origin, attempt, state, state_at, \
    reason, reason_detail, plan_reason, outcome, earliest_at, requested_at, slot, slot_at, \
    planned_at, time_zone, time_zone_source, replaces_job_id, replaced_by_job_id, launch_id, \
    provider_call_id, created_at, updated_at";

/// A page of results; `next_cursor` fetches the next one.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// A job with the chain of jobs it belongs to (the ones it replaced and that replaced it).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct JobDetail {
    pub job: Job,
    /// Oldest first, this job included.
    pub lineage: Vec<Job>,
}

/// An exception case.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct Exception {
    pub exception_id: Uuid,
    pub exception_type: String,
    /// open, resolved or ignored.
    pub status: String,
    pub urgent: bool,
    pub contact_id: String,
    pub campaign_id: Option<String>,
    pub job_id: Option<Uuid>,
    pub launch_id: Option<Uuid>,
    pub call_id: Option<String>,
    pub reason: String,
    pub detail: Option<String>,
    pub assignee: Option<String>,
    pub opened_at: Option<DateTime<Utc>>,
    pub opened_by: Option<String>,
    pub resolved_at: Option<DateTime<Utc>>,
    /// `kind:id` of who resolved or ignored it.
    pub resolved_by: Option<String>,
    pub first_seen_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The assignee is an operator's latest assignment when there is one, else the one the
/// exception was opened with (a CRM owner, say).
pub const EXCEPTION_COLUMNS: &str = "exception_id, exception_type, status, urgent, contact_id, \
    campaign_id, job_id, launch_id, call_id, reason, detail, \
    COALESCE((SELECT a.assignee FROM exception_assignments a \
        WHERE a.tenant_id = exceptions.tenant_id AND a.exception_id = exceptions.exception_id), \
        assignee) AS assignee, \
    opened_at, opened_by, resolved_at, resolved_by, first_seen_at, updated_at";

/// One entry of the audit log: an operator's or a service's action, with its result.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct AuditEntry {
    pub event_id: Uuid,
    pub occurred_at: DateTime<Utc>,
    /// `operator`, `service` or `system`.
    pub actor_kind: String,
    /// Who: the operator's token subject, or the service's name.
    pub actor_id: String,
    /// What was done (`control.system_pause`, `command.retry_now`, ...).
    pub action: String,
    /// What it was done to (`tenant`, `campaign`, `contact`, `job`, ...) and its id.
    pub subject_type: String,
    pub subject_id: String,
    pub contact_id: Option<String>,
    /// The command it belongs to, when it came from one.
    pub command_id: Option<Uuid>,
    /// `requested`, `applied` or `rejected`.
    pub result: String,
    /// Why, in the actor's words.
    pub reason: Option<String>,
    pub detail: Option<String>,
}

pub const AUDIT_COLUMNS: &str = "event_id, occurred_at, actor_kind, actor_id, action, \
    subject_type, subject_id, contact_id, command_id, result, reason, detail";

/// Occupancy of one slot of the grid.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct SlotOccupancy {
    /// Slot index from the grid's epoch.
    pub slot: i64,
    pub slot_at: Option<DateTime<Utc>>,
    /// Jobs booked and not cancelled.
    pub booked: i64,
    /// Bookings cancelled (their place is free).
    pub cancelled: i64,
}

/// The slots of a time range.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Slots {
    pub from: DateTime<Utc>,
    /// The end of the range answered (the one asked for; at most 7 days after `from`).
    pub to: DateTime<Utc>,
    /// Launches a slot may hold (the tenant's grid setting, default 1).
    pub capacity: i64,
    pub slots: Vec<SlotOccupancy>,
}

/// A launch whose completion did not arrive in its window.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct MissingLaunch {
    pub launch_id: Uuid,
    pub job_id: Option<Uuid>,
    pub contact_id: String,
    pub campaign_id: Option<String>,
    pub provider: Option<String>,
    pub provider_call_id: Option<String>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub deadline_at: Option<DateTime<Utc>>,
    pub missing_at: DateTime<Utc>,
    /// Lookups recovery has made for this case that left it open (its `recovery.lookup`
    /// audits): the call still in progress, or the lookup failed.
    pub recovery_attempts: i64,
    /// What the latest of those lookups found, and when.
    pub last_lookup: Option<String>,
    pub last_lookup_at: Option<DateTime<Utc>>,
}

pub const MISSING_COLUMNS: &str = "launch_id, job_id, contact_id, campaign_id, provider, \
    provider_call_id, accepted_at, deadline_at, missing_at";

/// Delivery of one 10-minute bucket of accepted launches.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DeliveryBucket {
    pub bucket_start: DateTime<Utc>,
    pub accepted: i64,
    /// Completions the voice platform delivered itself.
    pub delivered: i64,
    /// Completions recovered by looking the call up.
    pub recovered: i64,
    /// Launches that went missing (whether recovered later or not).
    pub missing: i64,
    /// `delivered / accepted`.
    pub delivery_rate: f64,
}

/// One event of a contact's timeline.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct TimelineEntry {
    pub event_id: Uuid,
    pub occurred_at: DateTime<Utc>,
    /// The event type, for example `ScheduleEvent`.
    pub event_type: String,
    /// What happened: its kind, status, outcome or action.
    pub what: Option<String>,
    /// Why.
    pub reason: Option<String>,
    /// The event that caused it.
    pub causation_id: Option<Uuid>,
    pub correlation_id: Option<Uuid>,
    /// The whole event.
    #[schema(value_type = Object)]
    pub event: serde_json::Value,
}

/// A current runtime setting.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct ControlSetting {
    /// system_pause, campaign_pause, campaign_settings, grid_settings, shadow_mode,
    /// crm_writes, completion_window.
    pub setting: String,
    /// Empty for settings that are not campaign-scoped.
    pub campaign_id: String,
    pub enabled: Option<bool>,
    #[schema(value_type = Object)]
    pub value: serde_json::Value,
    pub changed_at: DateTime<Utc>,
    pub actor_kind: String,
    pub actor_id: String,
    pub reason: Option<String>,
}

/// What became of an operator command.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct CommandStatus {
    pub command_id: Uuid,
    pub kind: Option<String>,
    pub contact_id: Option<String>,
    pub actor_id: Option<String>,
    pub requested_at: Option<DateTime<Utc>>,
    /// pending, applied or rejected.
    pub status: String,
    pub status_at: Option<DateTime<Utc>>,
    /// Why it was rejected.
    pub reason: Option<String>,
}

/// The answer to an action: the command is on Kafka.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Accepted {
    pub command_id: Uuid,
    /// pending until the projection shows it applied or rejected (see `?wait=`).
    pub status: String,
    pub reason: Option<String>,
    /// Where to follow it.
    pub status_url: String,
}

/// How many of one kind (an exception type, a hold's reason).
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct Count {
    pub key: String,
    pub count: i64,
}

/// What needs a person now: the counts the console's Today page links from.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Summary {
    /// Open exceptions by type, most first.
    pub open_exceptions: Vec<Count>,
    /// Launches whose completion is missing and not yet resolved.
    pub missing_completions: i64,
    /// Calls held (by a pause or a guard), by the reason that holds them, most first.
    pub held_calls: Vec<Count>,
    /// Dead letters not replayed yet.
    pub dead_letters: i64,
}

/// A record a processor could not handle, parked on the dead-letter topic.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
pub struct DeadLetter {
    pub letter_id: Uuid,
    /// When it was parked.
    pub dead_at: DateTime<Utc>,
    /// The processor that parked it.
    pub app: Option<String>,
    /// What failed: `record`, `timer` or `effect`.
    pub kind: Option<String>,
    /// Where it came from: `topic/partition/offset` for a record.
    pub source: Option<String>,
    /// Why it failed.
    pub reason: Option<String>,
    /// The event it carries (`ContactCommand`, ...), when its value is one.
    pub event_type: Option<String>,
    pub event_id: Option<Uuid>,
    pub contact_id: Option<String>,
    /// Only a record can be sent again (a timer's or an effect's letter cannot).
    pub replayable: bool,
    /// The latest replay, if any.
    pub replayed_at: Option<DateTime<Utc>>,
    pub replayed_by: Option<String>,
}

/// Columns of [`DeadLetter`], over `dead_letters d LEFT JOIN dead_letter_replays r`.
pub const DEAD_LETTER_COLUMNS: &str = "d.letter_id, d.dead_at, d.app, d.kind, d.source, \
    d.reason, d.event_type, d.event_id, d.contact_id, \
    (d.kind = 'record' AND d.payload IS NOT NULL) AS replayable, r.replayed_at, r.replayed_by";

//! `schedule_request.avsc` and `schedule_event.avsc`: the only way onto the slot grid, and the
//! scheduler's decisions.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{CallingWindow, JobOrigin, Timestamp, ZoneSource};

avro_enum! {
    /// Plan a job, or cancel it.
    ScheduleRequestKind = "io.callstream.events.ScheduleRequestKind" {
        Plan => "plan",
        Cancel => "cancel",
    }
}

/// Ask the scheduler to plan or cancel a call (`io.callstream.events.ScheduleRequest`, topic
/// `schedule-requests`, keyed by tenant). For `Plan`, `earliest_at`, `time_zone` and
/// `time_zone_source` are required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRequest {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    pub kind: ScheduleRequestKind,
    #[serde(with = "crate::serde_util::uuid_str")]
    pub job_id: Uuid,
    pub contact_id: String,
    pub campaign_id: String,
    pub origin: JobOrigin,
    /// Never placed earlier than this.
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub earliest_at: Option<Timestamp>,
    /// The time the lead asked for, kept on the job.
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub requested_at: Option<Timestamp>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub replaces_job_id: Option<Uuid>,
    /// Machine-readable reason code.
    pub reason: String,
    pub reason_detail: Option<String>,
    pub time_zone: Option<String>,
    pub time_zone_source: Option<ZoneSource>,
    /// Empty: the campaign's windows from `control`.
    pub windows: Vec<CallingWindow>,
    pub attempt: Option<i32>,
    /// US states whose calling rules apply to the lead (empty: the federal floor only).
    #[serde(default)]
    pub jurisdictions: Vec<String>,
    /// Where the first jurisdiction came from.
    #[serde(default)]
    pub jurisdiction_source: Option<String>,
    /// Calls placed to this person on the same subject, oldest first (what caps count).
    #[serde(default, with = "crate::serde_util::ts_millis_vec")]
    pub placed_calls: Vec<Timestamp>,
}

avro_enum! {
    /// A scheduler decision.
    ScheduleEventKind = "io.callstream.events.ScheduleEventKind" {
        Allocated => "allocated",
        Cancelled => "cancelled",
        Refused => "refused",
        LaunchDue => "launch_due",
    }
}

/// A scheduler decision (`io.callstream.events.ScheduleEvent`, topic `schedule-events`, keyed
/// by tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleEvent {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    pub kind: ScheduleEventKind,
    #[serde(with = "crate::serde_util::uuid_str")]
    pub job_id: Uuid,
    pub contact_id: String,
    pub campaign_id: String,
    pub origin: JobOrigin,
    /// Slot index from the fixed epoch; `None` when refused.
    pub slot: Option<i64>,
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub slot_at: Option<Timestamp>,
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub earliest_at: Option<Timestamp>,
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub requested_at: Option<Timestamp>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub replaces_job_id: Option<Uuid>,
    pub time_zone: Option<String>,
    pub time_zone_source: Option<ZoneSource>,
    pub reason: String,
    pub reason_detail: Option<String>,
}

//! `contact_state.avsc`: the contact processor's view of one contact, published as a compacted
//! table (`contact-state`, keyed by contact) after every change.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{CallOutcome, JobOrigin, Timestamp, ZoneSource};

avro_enum! {
    /// Where a contact is in its workflow.
    WorkflowState = "io.callstream.events.WorkflowState" {
        Received => "received",
        NeedsReview => "needs_review",
        Scheduled => "scheduled",
        Dispatching => "dispatching",
        AwaitingResult => "awaiting_result",
        Completed => "completed",
        Failed => "failed",
    }
}

avro_enum! {
    /// What became of a planned call.
    JobState = "io.callstream.events.JobState" {
        Planned => "planned",
        Held => "held",
        Launched => "launched",
        Completed => "completed",
        Cancelled => "cancelled",
        Replaced => "replaced",
    }
}

/// One contact's state (`io.callstream.events.ContactState`, topic `contact-state`, compacted,
/// keyed by contact). The latest record per contact is the current state; `version` orders them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContactState {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    pub contact_id: String,
    /// Changes applied so far; a reader keeps the highest.
    pub version: i64,
    pub phone_number: Option<String>,
    /// The primary zone (spoken times are read in it).
    pub time_zone: Option<String>,
    pub time_zone_source: Option<ZoneSource>,
    pub candidate_time_zones: Vec<String>,
    pub do_not_call: bool,
    pub blocked: bool,
    pub enrolled_student: bool,
    pub spam: bool,
    pub urgent_request_open: bool,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub hold_exception_id: Option<Uuid>,
    pub hold_reason: Option<String>,
    pub workflow_state: WorkflowState,
    pub workflow_step: i64,
    pub campaign_id: Option<String>,
    pub attempts: Vec<CampaignAttempts>,
    pub rejected_transitions: i64,
    /// Newest last.
    pub jobs: Vec<ContactJob>,
}

/// The contact's counters in one campaign (`io.callstream.events.CampaignAttempts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignAttempts {
    pub campaign_id: String,
    pub attempts: i32,
    pub consecutive_provider_failures: i32,
}

/// One planned call and what became of it (`io.callstream.events.ContactJob`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContactJob {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub job_id: Uuid,
    pub campaign_id: String,
    pub origin: JobOrigin,
    pub state: JobState,
    pub attempt: i32,
    pub step: i64,
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub earliest_at: Option<Timestamp>,
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub requested_at: Option<Timestamp>,
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub slot_at: Option<Timestamp>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub launch_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub replaces_job_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub replaced_by_job_id: Option<Uuid>,
    pub reason: String,
    pub reason_detail: Option<String>,
    pub outcome: Option<CallOutcome>,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub updated_at: Timestamp,
}

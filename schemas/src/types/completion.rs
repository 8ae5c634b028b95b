//! `completion_missing.avsc` and `completion_resolved.avsc`: the missing-completion case.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Actor, CallOutcome, Timestamp};

avro_enum! {
    /// Which clock passed the deadline first.
    MissingTrigger = "io.callstream.events.MissingTrigger" {
        StreamTime => "stream_time",
        WallClock => "wall_clock",
    }
}

/// An accepted launch without a completion within window plus grace
/// (`io.callstream.events.CompletionMissing`, topic `completion-missing`, keyed by contact).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionMissing {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::uuid_str")]
    pub launch_id: Uuid,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub job_id: Option<Uuid>,
    pub contact_id: String,
    pub campaign_id: Option<String>,
    pub provider: String,
    pub provider_call_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub accepted_at: Timestamp,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub deadline_at: Timestamp,
    pub window_ms: i64,
    pub grace_ms: i64,
    pub trigger: MissingTrigger,
}

avro_enum! {
    /// How a missing-completion case closed.
    Resolution = "io.callstream.events.Resolution" {
        LateCompletion => "late_completion",
        Recovered => "recovered",
        AdvancedNoAnswer => "advanced_no_answer",
        AdvancedVoicemail => "advanced_voicemail",
        Ignored => "ignored",
    }
}

/// Closes a missing-completion case (`io.callstream.events.CompletionResolved`, topic
/// `completion-missing`, keyed by contact).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionResolved {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::uuid_str")]
    pub launch_id: Uuid,
    pub contact_id: String,
    pub provider_call_id: Option<String>,
    /// The completion-missing event this closes.
    #[serde(with = "crate::serde_util::uuid_str")]
    pub missing_event_id: Uuid,
    pub resolution: Resolution,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub completion_event_id: Option<Uuid>,
    pub outcome: Option<CallOutcome>,
    pub actor: Actor,
    pub late_by_ms: Option<i64>,
}

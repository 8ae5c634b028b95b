//! `call_event.avsc`: what the voice platform reported about a call (live or recovered).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Timestamp;

avro_enum! {
    /// How callstream learned a call fact.
    CallEventSource = "io.callstream.events.CallEventSource" {
        Live => "live",
        Recovery => "recovery",
    }
}

avro_enum! {
    /// callstream's own call outcome, produced only by the shared status normaliser.
    CallOutcome = "io.callstream.events.CallOutcome" {
        Queued => "queued",
        Ringing => "ringing",
        InProgress => "in_progress",
        Answered => "answered",
        Voicemail => "voicemail",
        NoAnswer => "no_answer",
        Busy => "busy",
        Failed => "failed",
        Canceled => "canceled",
    }
}

impl CallOutcome {
    /// Whether the call is over: a completion for the missing-completion detector.
    /// `Unknown` is not final, so an unmapped status never closes a launch.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Self::Answered
                | Self::Voicemail
                | Self::NoAnswer
                | Self::Busy
                | Self::Failed
                | Self::Canceled
        )
    }
}

/// A fact about a call (`io.callstream.events.CallEvent`, topic `call-events`, keyed by contact).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallEvent {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    pub provider: String,
    pub integration_id: Option<String>,
    pub provider_event_id: String,
    pub call_id: String,
    pub contact_id: String,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub launch_id: Option<Uuid>,
    pub campaign_id: Option<String>,
    pub source: CallEventSource,
    /// The provider's raw status, verbatim.
    pub provider_status: String,
    pub outcome: CallOutcome,
    pub answered_by: Option<String>,
    pub duration_seconds: Option<i32>,
    pub sequence_number: Option<i64>,
    pub provider_error: Option<String>,
    pub reported_time_zone: Option<String>,
    /// When callstream received or fetched it (processing time).
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub received_at: Timestamp,
    pub analysis: Option<CallAnalysis>,
}

/// What the lead said (`io.callstream.events.CallAnalysis`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CallAnalysis {
    pub summary: Option<String>,
    pub interested: Option<bool>,
    pub callback_requested: bool,
    /// The lead's own words, read later in the lead's time zone.
    pub callback_phrase: Option<String>,
    pub do_not_call: bool,
    pub wants_person: bool,
    pub request_phrase: Option<String>,
}

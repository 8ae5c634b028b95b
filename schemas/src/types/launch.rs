//! `launch_command.avsc` and `call_launch.avsc`: a call leaving callstream, and what the voice
//! platform said to it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{JobOrigin, Timestamp};

/// Place exactly one call (`io.callstream.events.LaunchCommand`, topic `launch-commands`, keyed
/// by tenant and phone number: `callstream_kit::keys::phone_key`). `launch_id` is the stable
/// operation id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchCommand {
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
    #[serde(with = "crate::serde_util::uuid_str")]
    pub job_id: Uuid,
    pub contact_id: String,
    pub campaign_id: String,
    pub origin: JobOrigin,
    pub attempt: i32,
    pub to_number: String,
    pub from_number: Option<String>,
    pub provider: Option<String>,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub slot_at: Timestamp,
    /// Do not dial after this.
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub expires_at: Option<Timestamp>,
    /// No create after this: the end of the launch's slot.
    #[serde(default, with = "chrono::serde::ts_milliseconds_option")]
    pub slot_ends_at: Option<Timestamp>,
    /// The lead's zone(s), comma-separated, as the job was planned in.
    #[serde(default)]
    pub time_zone: Option<String>,
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
    /// Outcome of dispatching a launch.
    LaunchStatus = "io.callstream.events.LaunchStatus" {
        Accepted => "accepted",
        Failed => "failed",
        Ambiguous => "ambiguous",
        Shadow => "shadow",
        Held => "held",
    }
}

/// What the voice platform said to a launch (`io.callstream.events.CallLaunch`, topic
/// `call-launches`, keyed by contact).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallLaunch {
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
    #[serde(with = "crate::serde_util::uuid_str")]
    pub job_id: Uuid,
    pub contact_id: String,
    pub campaign_id: String,
    pub status: LaunchStatus,
    pub provider: String,
    /// Set when accepted.
    pub provider_call_id: Option<String>,
    pub attempts: i32,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub requested_at: Timestamp,
    /// Found by looking the call up at the provider, not from the create response.
    pub reconciled: bool,
    pub reason: Option<String>,
    pub reason_detail: Option<String>,
    /// Held by a calling rule: the earliest instant the rules allowed a call again.
    #[serde(default, with = "chrono::serde::ts_milliseconds_option")]
    pub not_before: Option<Timestamp>,
}

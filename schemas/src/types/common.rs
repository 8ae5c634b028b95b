//! Types that appear in several schemas. Each is defined identically in every `.avsc` file that
//! uses it (a test checks), so Java or other code generators see one type per name.

use serde::{Deserialize, Serialize};

/// An event time: UTC, millisecond precision (Avro `timestamp-millis`). Sub-millisecond parts
/// are dropped on encoding.
pub type Timestamp = chrono::DateTime<chrono::Utc>;

avro_enum! {
    /// What kind of actor did something.
    ActorKind = "io.callstream.events.ActorKind" {
        System => "system",
        Operator => "operator",
        Integration => "integration",
    }
}

/// Who did something (`io.callstream.events.Actor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    pub kind: ActorKind,
    /// Service name, token subject or integration id.
    pub id: String,
}

impl Actor {
    /// A callstream service acting on its own.
    pub fn system(service: impl Into<String>) -> Self {
        Self {
            kind: ActorKind::System,
            id: service.into(),
        }
    }

    /// A person acting through the operator API.
    pub fn operator(subject: impl Into<String>) -> Self {
        Self {
            kind: ActorKind::Operator,
            id: subject.into(),
        }
    }
}

avro_enum! {
    /// Why a call was planned.
    JobOrigin = "io.callstream.events.JobOrigin" {
        CampaignEntry => "campaign_entry",
        VoicemailRetry => "voicemail_retry",
        NoAnswerRetry => "no_answer_retry",
        BusyRetry => "busy_retry",
        FailureRetry => "failure_retry",
        Callback => "callback",
        StaleLeadAdvance => "stale_lead_advance",
        OperatorRetry => "operator_retry",
        WindowMove => "window_move",
        PauseReplan => "pause_replan",
    }
}

avro_enum! {
    /// Where the lead's time zone came from, in resolution order.
    ZoneSource = "io.callstream.events.ZoneSource" {
        Contact => "contact",
        Provider => "provider",
        AreaCode => "area_code",
        TenantDefault => "tenant_default",
    }
}

/// A calling window in the lead's local time (`io.callstream.events.CallingWindow`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallingWindow {
    /// ISO days: 1 = Monday ... 7 = Sunday.
    pub days_of_week: Vec<i32>,
    /// Minutes after local midnight, 0..1439.
    pub start_minute: i32,
    /// Minutes after local midnight, 1..1440; not after `start_minute` crosses midnight.
    pub end_minute: i32,
}

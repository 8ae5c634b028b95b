//! `control_change.avsc`: runtime configuration, read by every processor as a table.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Actor, CallingWindow, Timestamp};

avro_enum! {
    /// Which setting a control change is about; it says which part of the value is set.
    ControlSetting = "io.callstream.events.ControlSetting" {
        SystemPause => "system_pause",
        CampaignPause => "campaign_pause",
        CampaignSettings => "campaign_settings",
        GridSettings => "grid_settings",
        ShadowMode => "shadow_mode",
        CrmWrites => "crm_writes",
        CompletionWindow => "completion_window",
        NotificationRoutes => "notification_routes",
        /// The tenant's state calling rules beyond the statutory ones.
        CallingRules => "calling_rules",
    }
}

/// A change of one setting (`io.callstream.events.ControlChange`, topic `control`, compacted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlChange {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    pub setting: ControlSetting,
    /// For campaign-scoped settings.
    pub campaign_id: Option<String>,
    pub new_value: ControlValue,
    pub old_value: Option<ControlValue>,
    pub actor: Actor,
    pub reason: Option<String>,
}

impl ControlChange {
    /// The record key on the compacted `control` topic: one key per tenant, setting and
    /// campaign, so compaction keeps the latest value of each.
    pub fn record_key(&self) -> String {
        match &self.campaign_id {
            Some(campaign) => format!("{}/{}/{campaign}", self.tenant_id, self.setting),
            None => format!("{}/{}", self.tenant_id, self.setting),
        }
    }
}

/// A setting's value; only the part for the setting is set (`io.callstream.events.ControlValue`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ControlValue {
    /// Pauses: paused; shadow mode: on; CRM writes: allowed.
    pub enabled: Option<bool>,
    pub campaign: Option<CampaignSettings>,
    pub grid: Option<GridSettings>,
    pub completion: Option<CompletionSettings>,
    pub notifications: Option<NotificationRoutes>,
    /// Boxed: most values are not calling rules, and every control change holds two values.
    #[serde(default)]
    pub calling_rules: Option<Box<CallingRules>>,
}

/// A tenant's state calling rules beyond the statutory ones (`io.callstream.events.CallingRules`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CallingRules {
    pub rules: Vec<TenantCallingRule>,
    pub overrides: Vec<RuleOverride>,
    /// `campaign` or `tenant`.
    pub cap_subject: String,
    /// The state whose rules apply when neither the record nor the area code says.
    #[serde(default)]
    pub default_state: Option<String>,
}

/// `io.callstream.events.TenantCallingRule`: a rule of the tenant's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantCallingRule {
    pub id: String,
    pub kind: String,
    pub params: String,
    pub states: Vec<String>,
}

/// `io.callstream.events.RuleOverride`: a statutory rule switched off, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleOverride {
    pub rule: String,
    pub reason: String,
}

/// `io.callstream.events.CampaignSettings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignSettings {
    pub windows: Vec<CallingWindow>,
    /// Delay before the n-th retry; the last one repeats.
    pub retry_delays_minutes: Vec<i32>,
    pub max_attempts: i32,
    pub next_campaign_id: Option<String>,
    pub move_buffer_minutes: i32,
}

/// `io.callstream.events.GridSettings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridSettings {
    pub slot_seconds: i32,
    pub launches_per_slot: i32,
    pub default_time_zone: String,
}

/// `io.callstream.events.CompletionSettings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionSettings {
    pub window_ms: i64,
    pub grace_ms: i64,
}

/// Where a tenant's notifications go (`io.callstream.events.NotificationRoutes`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NotificationRoutes {
    pub routes: Vec<NotificationRoute>,
    pub quiet_hours: Option<QuietHours>,
    pub digest_seconds: i32,
}

/// `io.callstream.events.NotificationRoute`: these kinds go to this channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationRoute {
    pub kinds: Vec<String>,
    pub channel: String,
    pub urgent: bool,
}

/// `io.callstream.events.QuietHours`: local `HH:MM` to `HH:MM` in `time_zone`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuietHours {
    pub time_zone: String,
    pub start: String,
    pub end: String,
}

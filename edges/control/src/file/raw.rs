//! The control file as TOML reads it, before validation. Unknown fields
//! are refused (a typo must not silently fall back to a default).

use std::collections::BTreeMap;

use callstream_domain::calling_window::Days;
use serde::Deserialize;

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub system: Option<RawSystem>,
    #[serde(default)]
    pub tenants: BTreeMap<String, RawTenant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSystem {
    #[serde(default)]
    pub paused: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTenant {
    #[serde(default)]
    pub paused: bool,
    #[serde(default)]
    pub shadow_mode: bool,
    #[serde(default = "yes")]
    pub crm_writes: bool,
    pub grid: Option<RawGrid>,
    pub completion: Option<RawCompletion>,
    pub campaign_defaults: Option<RawCampaignSettings>,
    #[serde(default)]
    pub campaigns: BTreeMap<String, RawCampaign>,
    pub notifications: Option<RawNotifications>,
    pub calling_rules: Option<RawCallingRules>,
}

/// `[tenants.<id>.calling_rules]` (or a campaign's, which replaces the tenant's for that
/// campaign): rules of the tenant's own (stricter only), statutory rules it switches off
/// (each with a reason), what frequency caps count within, and the state whose rules apply
/// when nothing else says where a lead is.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCallingRules {
    #[serde(default)]
    pub rules: Vec<RawTenantRule>,
    #[serde(default)]
    pub overrides: Vec<RawOverride>,
    #[serde(default = "default_cap_subject")]
    pub cap_subject: String,
    pub default_state: Option<String>,
}

fn default_cap_subject() -> String {
    "campaign".to_owned()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTenantRule {
    pub id: String,
    pub kind: String,
    pub params: String,
    #[serde(default)]
    pub states: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOverride {
    pub rule: String,
    pub reason: String,
}

/// `[tenants.<id>.notifications]`: routes to the notifier's channels, quiet hours, digest.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNotifications {
    #[serde(default)]
    pub routes: Vec<RawRoute>,
    pub quiet_hours: Option<RawQuietHours>,
    #[serde(default = "default_digest_seconds")]
    pub digest_seconds: i64,
}

fn default_digest_seconds() -> i64 {
    300
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRoute {
    pub kinds: Vec<String>,
    pub channel: String,
    #[serde(default)]
    pub urgent: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawQuietHours {
    pub time_zone: String,
    pub start: String,
    pub end: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGrid {
    #[serde(default = "default_slot_seconds")]
    pub slot_seconds: i64,
    #[serde(default = "default_launches")]
    pub launches_per_slot: i64,
    pub default_time_zone: String,
}

fn default_slot_seconds() -> i64 {
    75
}

fn default_launches() -> i64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCompletion {
    pub window_minutes: i64,
    #[serde(default)]
    pub grace_minutes: i64,
}

/// A campaign: its pause, its settings and its completion window. The
/// settings fields are repeated from `RawCampaignSettings` because serde's
/// `flatten` does not combine with `deny_unknown_fields`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCampaign {
    #[serde(default)]
    pub paused: bool,
    pub windows: Option<Vec<RawWindow>>,
    pub retry_delays_minutes: Option<Vec<i64>>,
    pub max_attempts: Option<i64>,
    pub next_campaign: Option<String>,
    pub move_buffer_minutes: Option<i64>,
    pub completion: Option<RawCompletion>,
    pub calling_rules: Option<RawCallingRules>,
}

impl RawCampaign {
    pub fn settings(&self) -> RawCampaignSettings {
        RawCampaignSettings {
            windows: self.windows.clone(),
            retry_delays_minutes: self.retry_delays_minutes.clone(),
            max_attempts: self.max_attempts,
            next_campaign: self.next_campaign.clone(),
            move_buffer_minutes: self.move_buffer_minutes,
        }
    }
}

/// Absent fields take the built-in campaign defaults.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCampaignSettings {
    pub windows: Option<Vec<RawWindow>>,
    pub retry_delays_minutes: Option<Vec<i64>>,
    pub max_attempts: Option<i64>,
    pub next_campaign: Option<String>,
    pub move_buffer_minutes: Option<i64>,
}

/// `{ days = "weekdays", start = "09:00", end = "20:00" }`; `days` is one
/// name or shorthand (`weekdays`, `weekends`, `every_day`) or a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWindow {
    pub days: Days,
    pub start: String,
    pub end: String,
}

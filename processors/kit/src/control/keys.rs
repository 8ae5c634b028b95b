//! Keys of the compacted `control` topic: `tenant/setting` or
//! `tenant/setting/campaign`, exactly as [`ControlChange::record_key`]
//! writes them, so compaction keeps the latest value of each setting.
//!
//! Tenant and campaign ids may not contain `/` (the file validation
//! refuses them), so a key names one setting and can be parsed back.

use callstream_schemas::{ControlChange, ControlSetting};

/// The pseudo-tenant of settings that apply to every tenant. Only the
/// system pause may be set for it: "stop everything" is one switch.
pub const ALL_TENANTS: &str = "*";

/// Which setting a key names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SettingKey {
    pub tenant: String,
    pub setting: ControlSetting,
    pub campaign: Option<String>,
}

impl SettingKey {
    pub fn new(tenant: &str, setting: ControlSetting, campaign: Option<&str>) -> Self {
        Self {
            tenant: tenant.to_owned(),
            setting,
            campaign: campaign.map(str::to_owned),
        }
    }

    /// The record key, as [`ControlChange::record_key`] builds it.
    pub fn record_key(&self) -> String {
        record_key(&self.tenant, self.setting, self.campaign.as_deref())
    }

    /// The key a change was (or will be) written under.
    pub fn of(change: &ControlChange) -> Self {
        Self {
            tenant: change.tenant_id.clone(),
            setting: change.setting,
            campaign: change.campaign_id.clone(),
        }
    }

    /// Parses a record key; `None` for keys this version cannot read.
    pub fn parse(key: &str) -> Option<Self> {
        let mut parts = key.splitn(3, '/');
        let tenant = parts.next().filter(|t| !t.is_empty())?;
        let setting_name = parts.next()?;
        let setting = ControlSetting::ALL
            .iter()
            .copied()
            .find(|s| *s != ControlSetting::Unknown && s.as_str() == setting_name)?;
        let campaign = parts.next().filter(|c| !c.is_empty());
        Some(Self::new(tenant, setting, campaign))
    }
}

/// Ordered by tenant, then setting name, then campaign: the order `show`
/// prints in and a plan is published in.
impl Ord for SettingKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.tenant, self.setting.as_str(), &self.campaign).cmp(&(
            &other.tenant,
            other.setting.as_str(),
            &other.campaign,
        ))
    }
}

impl PartialOrd for SettingKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// `tenant/setting[/campaign]`.
pub fn record_key(tenant: &str, setting: ControlSetting, campaign: Option<&str>) -> String {
    match campaign {
        Some(campaign) => format!("{tenant}/{}/{campaign}", setting.as_str()),
        None => format!("{tenant}/{}", setting.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_the_schema_crate_and_parse_back() {
        let cases = [
            (
                "acme",
                ControlSetting::SystemPause,
                None,
                "acme/system_pause",
            ),
            (
                "acme",
                ControlSetting::CampaignSettings,
                Some("enrol"),
                "acme/campaign_settings/enrol",
            ),
            ("*", ControlSetting::SystemPause, None, "*/system_pause"),
        ];
        for (tenant, setting, campaign, expected) in cases {
            let key = SettingKey::new(tenant, setting, campaign);
            assert_eq!(key.record_key(), expected);
            assert_eq!(SettingKey::parse(expected), Some(key));
        }
        for bad in ["", "acme", "acme/nonsense", "/system_pause", "acme/unknown"] {
            assert_eq!(SettingKey::parse(bad), None, "{bad}");
        }
    }
}

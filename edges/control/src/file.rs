//! The control file: the settings of some tenants, in TOML, as an operator
//! writes them (see `example-control.toml`).
//!
//! Guarantees: [`ControlFile::parse`] accepts only files whose every value
//! the processors can use (the same conversions the view applies), and
//! reports every problem at once, each with its path in the file
//! (`tenants.acme.campaigns.enrol.windows[1].start: ...`); a syntax error
//! or unknown field carries TOML's line and column. The desired state it
//! yields ([`ControlFile::desired`]) is a pure function of the file.
//!
//! Scope: a file is the whole truth for the tenants it names (a setting of
//! such a tenant that the file no longer holds is reset to its default),
//! and says nothing about the others. `[system]` names the all-tenants
//! switch.

use std::collections::{BTreeMap, BTreeSet};

use callstream_schemas::{
    CallingRules, CampaignSettings, CompletionSettings, ControlSetting, ControlValue, GridSettings,
    NotificationRoutes,
};

use callstream_kit::control::keys::{SettingKey, ALL_TENANTS};

mod raw;
mod validate;

/// One problem of a control file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where, as a dotted path (`tenants.acme.grid.slot_seconds`).
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Why a control file was refused. Nothing was published.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Not TOML, or a field of the wrong type or name (with line and column).
    #[error("{0}")]
    Syntax(#[from] toml::de::Error),
    /// Well-formed, but some values cannot be used.
    #[error("{} problem(s):\n{}", .0.len(), list(.0))]
    Invalid(Vec<Problem>),
}

fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  - {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A validated control file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ControlFile {
    /// The all-tenants system pause, when the file has a `[system]` table.
    pub system_paused: Option<bool>,
    pub tenants: BTreeMap<String, TenantFile>,
}

/// One tenant's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantFile {
    pub paused: bool,
    pub shadow_mode: bool,
    pub crm_writes: bool,
    pub grid: Option<GridSettings>,
    pub completion: Option<CompletionSettings>,
    /// Settings of campaigns that have none of their own.
    pub campaign_defaults: Option<CampaignSettings>,
    pub campaigns: BTreeMap<String, CampaignFile>,
    /// Where the tenant's notifications go.
    pub notifications: Option<NotificationRoutes>,
    /// The tenant's own calling rules, overrides and cap subject.
    pub calling_rules: Option<CallingRules>,
}

/// One campaign's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignFile {
    pub paused: bool,
    pub settings: CampaignSettings,
    pub completion: Option<CompletionSettings>,
    /// The campaign's calling rules, in place of the tenant's for its calls.
    pub calling_rules: Option<CallingRules>,
}

impl ControlFile {
    /// Parses and validates a file's text.
    pub fn parse(text: &str) -> Result<Self, FileError> {
        let raw: raw::RawFile = toml::from_str(text)?;
        validate::validate(raw).map_err(FileError::Invalid)
    }

    /// The tenants this file speaks for (`*` when it has `[system]`).
    pub fn scope(&self) -> BTreeSet<String> {
        let mut scope: BTreeSet<String> = self.tenants.keys().cloned().collect();
        if self.system_paused.is_some() {
            scope.insert(ALL_TENANTS.to_owned());
        }
        scope
    }

    /// Every setting the file sets, with its value.
    pub fn desired(&self) -> BTreeMap<SettingKey, ControlValue> {
        let mut out = BTreeMap::new();
        let flag = |on: bool| ControlValue {
            enabled: Some(on),
            ..ControlValue::default()
        };
        if let Some(paused) = self.system_paused {
            out.insert(
                SettingKey::new(ALL_TENANTS, ControlSetting::SystemPause, None),
                flag(paused),
            );
        }
        for (tenant, t) in &self.tenants {
            let key = |setting, campaign: Option<&str>| SettingKey::new(tenant, setting, campaign);
            out.insert(key(ControlSetting::SystemPause, None), flag(t.paused));
            out.insert(key(ControlSetting::ShadowMode, None), flag(t.shadow_mode));
            out.insert(key(ControlSetting::CrmWrites, None), flag(t.crm_writes));
            if let Some(grid) = &t.grid {
                out.insert(
                    key(ControlSetting::GridSettings, None),
                    ControlValue {
                        grid: Some(grid.clone()),
                        ..ControlValue::default()
                    },
                );
            }
            if let Some(completion) = &t.completion {
                out.insert(
                    key(ControlSetting::CompletionWindow, None),
                    completion_value(completion),
                );
            }
            if let Some(routes) = &t.notifications {
                out.insert(
                    key(ControlSetting::NotificationRoutes, None),
                    ControlValue {
                        notifications: Some(routes.clone()),
                        ..ControlValue::default()
                    },
                );
            }
            if let Some(rules) = &t.calling_rules {
                out.insert(key(ControlSetting::CallingRules, None), rules_value(rules));
            }
            if let Some(defaults) = &t.campaign_defaults {
                out.insert(
                    key(ControlSetting::CampaignSettings, None),
                    campaign_value(defaults),
                );
            }
            for (campaign, c) in &t.campaigns {
                let c_key = |setting| key(setting, Some(campaign));
                out.insert(c_key(ControlSetting::CampaignPause), flag(c.paused));
                out.insert(
                    c_key(ControlSetting::CampaignSettings),
                    campaign_value(&c.settings),
                );
                if let Some(completion) = &c.completion {
                    out.insert(
                        c_key(ControlSetting::CompletionWindow),
                        completion_value(completion),
                    );
                }
                if let Some(rules) = &c.calling_rules {
                    out.insert(c_key(ControlSetting::CallingRules), rules_value(rules));
                }
            }
        }
        out
    }
}

fn campaign_value(settings: &CampaignSettings) -> ControlValue {
    ControlValue {
        campaign: Some(settings.clone()),
        ..ControlValue::default()
    }
}

fn rules_value(rules: &CallingRules) -> ControlValue {
    ControlValue {
        calling_rules: Some(Box::new(rules.clone())),
        ..ControlValue::default()
    }
}

fn completion_value(settings: &CompletionSettings) -> ControlValue {
    ControlValue {
        completion: Some(settings.clone()),
        ..ControlValue::default()
    }
}

#[cfg(test)]
mod tests;

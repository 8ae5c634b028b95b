//! A typed, read-only view of the `control` table for processors.
//!
//! A processor keeps one [`ControlTable`] (it holds the topic name and a
//! memo of decoded values) and asks it for a [`ControlView`] over the
//! runtime context of the record at hand, so a change on the topic applies
//! from the next record on, without a restart.
//!
//! Guarantees:
//! - Cheap per record: a lookup is one key build, one global-table get and
//!   a byte comparison with the memoised raw value; a value is Avro-decoded
//!   and converted once per distinct raw value, not per record.
//! - Total: every question has an answer. An absent setting (or one reset
//!   to unset) reads as its built-in default (see `settings`). A value that
//!   cannot be read is logged once and reads as the *safe* choice: paused,
//!   shadow mode on, CRM writes off, the built-in campaign and grid
//!   settings. Holding a call can be undone; placing one cannot.
//! - Lookups are scoped by tenant; the system pause also honours the
//!   all-tenants switch ([`ALL_TENANTS`]).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use callstream_runtime::Context;
use callstream_schemas::{ControlChange, ControlSetting, ControlValue, DecodeError, Event};

use crate::calling_rules::TenantCallingRules;
use crate::control::keys::{record_key, SettingKey, ALL_TENANTS};
use crate::control::settings::{
    CampaignConfig, CompletionWindow, NotificationPolicy, Origin, SettingError, TenantGrid,
};

/// Why a call may not go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pause {
    /// The tenant's (or everyone's) system pause is on.
    System,
    /// The call's campaign is paused.
    Campaign,
}

impl Pause {
    /// A stable reason code for events.
    pub fn reason(self) -> &'static str {
        match self {
            Pause::System => "system_paused",
            Pause::Campaign => "campaign_paused",
        }
    }
}

/// The latest raw value of every key of the control topic, for code that
/// reads the topic itself (the CLI, tests) rather than through the runtime.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControlSnapshot {
    entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl ControlSnapshot {
    /// Applies one record of the topic; `None` (a tombstone) deletes.
    pub fn apply(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        match value {
            Some(value) => self.entries.insert(key, value),
            None => self.entries.remove(&key),
        };
    }

    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.entries.get(key).map(Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry decoded, in key order; keys this version cannot parse are skipped.
    pub fn changes(&self) -> Vec<(SettingKey, Result<ControlChange, DecodeError>)> {
        self.entries
            .iter()
            .filter_map(|(key, value)| {
                let key = SettingKey::parse(std::str::from_utf8(key).ok()?)?;
                Some((key, ControlChange::decode(value)))
            })
            .collect()
    }
}

impl FromIterator<(Vec<u8>, Vec<u8>)> for ControlSnapshot {
    fn from_iter<I: IntoIterator<Item = (Vec<u8>, Vec<u8>)>>(iter: I) -> Self {
        Self {
            entries: iter.into_iter().collect(),
        }
    }
}

/// A decoded value, in the form its setting needs.
#[derive(Debug, Clone)]
enum Typed {
    /// Pauses, shadow mode, CRM writes; `None` = unset.
    Flag(Option<bool>),
    Campaign(Option<Arc<CampaignConfig>>),
    Grid(Option<TenantGrid>),
    Completion(Option<CompletionWindow>),
    Notify(Option<Arc<NotificationPolicy>>),
    Rules(Option<Arc<TenantCallingRules>>),
    /// Undecodable, or not a usable value of its setting (logged once).
    Unusable,
}

#[derive(Debug)]
struct Memo {
    raw: Vec<u8>,
    change: Option<Arc<ControlChange>>,
    typed: Typed,
}

/// The processor-side handle of the `control` table: its topic and the
/// memo of decoded values. Keep one per processor (it is `Send`).
#[derive(Debug)]
pub struct ControlTable {
    topic: String,
    memo: RefCell<HashMap<String, Memo>>,
    builtin_campaign: Arc<CampaignConfig>,
    statutory_only: Arc<TenantCallingRules>,
    decodes: Cell<u64>,
}

impl ControlTable {
    /// `topic` is the physical name of the control topic (declare it with
    /// `ProcessorSpec::global_table`).
    pub fn new(topic: impl Into<String>) -> Self {
        Self {
            topic: topic.into(),
            memo: RefCell::new(HashMap::new()),
            builtin_campaign: Arc::new(CampaignConfig::builtin()),
            statutory_only: Arc::new(TenantCallingRules::default()),
            decodes: Cell::new(0),
        }
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// How many raw values were decoded so far (each distinct value once).
    pub fn decoded_values(&self) -> u64 {
        self.decodes.get()
    }

    /// The table as the runtime holds it while `ctx`'s record is handled.
    pub fn view<'a>(&'a self, ctx: &'a Context<'a>) -> ControlView<'a> {
        ControlView {
            table: self,
            source: Source::Context(ctx),
        }
    }

    /// The table as read from the topic into `snapshot`.
    pub fn view_of<'a>(&'a self, snapshot: &'a ControlSnapshot) -> ControlView<'a> {
        ControlView {
            table: self,
            source: Source::Snapshot(snapshot),
        }
    }
}

#[derive(Clone, Copy)]
enum Source<'a> {
    Context(&'a Context<'a>),
    Snapshot(&'a ControlSnapshot),
}

/// Answers about the control table at one moment. Short-lived: take the
/// answers (owned values) and drop the view before writing to the context.
#[derive(Clone, Copy)]
pub struct ControlView<'a> {
    table: &'a ControlTable,
    source: Source<'a>,
}

impl ControlView<'_> {
    fn raw(&self, key: &str) -> Option<&[u8]> {
        match self.source {
            Source::Context(ctx) => ctx.global(&self.table.topic, key.as_bytes()),
            Source::Snapshot(snapshot) => snapshot.get(key.as_bytes()),
        }
    }

    /// The typed value of a key, decoding only when its bytes changed.
    fn typed(&self, tenant: &str, setting: ControlSetting, campaign: Option<&str>) -> Typed {
        let key = record_key(tenant, setting, campaign);
        let Some(raw) = self.raw(&key) else {
            return unset(setting);
        };
        let mut memo = self.table.memo.borrow_mut();
        if let Some(hit) = memo.get(&key).filter(|m| m.raw == raw) {
            return hit.typed.clone();
        }
        self.table.decodes.set(self.table.decodes.get() + 1);
        let (change, typed) = decode(&key, setting, campaign, raw);
        memo.insert(
            key,
            Memo {
                raw: raw.to_vec(),
                change,
                typed: typed.clone(),
            },
        );
        typed
    }

    fn flag(&self, tenant: &str, setting: ControlSetting, campaign: Option<&str>) -> FlagValue {
        match self.typed(tenant, setting, campaign) {
            Typed::Flag(Some(on)) => FlagValue::Set(on),
            Typed::Flag(None) => FlagValue::Unset,
            _ => FlagValue::Unusable,
        }
    }

    /// Whether calls of `tenant` are held by a system pause (its own, or everyone's).
    pub fn system_paused(&self, tenant: &str) -> bool {
        [tenant, ALL_TENANTS].iter().any(|t| {
            self.flag(t, ControlSetting::SystemPause, None)
                .or_safe(false, true)
        })
    }

    /// Whether `campaign` of `tenant` is paused.
    pub fn campaign_paused(&self, tenant: &str, campaign: &str) -> bool {
        self.flag(tenant, ControlSetting::CampaignPause, Some(campaign))
            .or_safe(false, true)
    }

    /// What holds a call of `campaign` now, if anything; the system pause first.
    pub fn pause(&self, tenant: &str, campaign: &str) -> Option<Pause> {
        if crate::control::broken_for_test(crate::control::TestBreak::IgnorePauses) {
            return None;
        }
        if self.system_paused(tenant) {
            Some(Pause::System)
        } else if self.campaign_paused(tenant, campaign) {
            Some(Pause::Campaign)
        } else {
            None
        }
    }

    /// The settings of `campaign`: its own, else the tenant's campaign
    /// defaults, else the built-in ones.
    pub fn campaign(&self, tenant: &str, campaign: &str) -> Arc<CampaignConfig> {
        for scope in [Some(campaign), None] {
            if let Typed::Campaign(Some(config)) =
                self.typed(tenant, ControlSetting::CampaignSettings, scope)
            {
                return config;
            }
        }
        self.table.builtin_campaign.clone()
    }

    /// The tenant's grid settings and default zone.
    pub fn grid(&self, tenant: &str) -> TenantGrid {
        match self.typed(tenant, ControlSetting::GridSettings, None) {
            Typed::Grid(Some(grid)) => grid,
            _ => TenantGrid::builtin(),
        }
    }

    /// Whether the tenant's CRM commands are only logged, not carried out.
    pub fn shadow_mode(&self, tenant: &str) -> bool {
        self.flag(tenant, ControlSetting::ShadowMode, None)
            .or_safe(false, true)
    }

    /// Whether CRM writes are allowed for the tenant.
    pub fn crm_writes(&self, tenant: &str) -> bool {
        self.flag(tenant, ControlSetting::CrmWrites, None)
            .or_safe(true, false)
    }

    /// The completion window of `campaign` (if given and set), else the tenant's, else built-in.
    pub fn completion_window(&self, tenant: &str, campaign: Option<&str>) -> CompletionWindow {
        let scopes = [campaign, None];
        let scopes = if campaign.is_some() {
            &scopes[..]
        } else {
            &scopes[1..]
        };
        for scope in scopes {
            if let Typed::Completion(Some(window)) =
                self.typed(tenant, ControlSetting::CompletionWindow, *scope)
            {
                return window;
            }
        }
        CompletionWindow::builtin()
    }

    /// The notification routes of `tenant` (`*` for the deployment's own), or none. An
    /// unusable value routes nothing and is logged: a notification is not sent somewhere
    /// nobody chose.
    pub fn notifications(&self, tenant: &str) -> Option<Arc<NotificationPolicy>> {
        match self.typed(tenant, ControlSetting::NotificationRoutes, None) {
            Typed::Notify(policy) => policy,
            _ => None,
        }
    }

    /// The calling rules of `campaign` of `tenant`: the campaign's own setting when it has
    /// one, else the tenant's (rules of its own, overrides, cap subject, default state). A
    /// value that cannot be used is skipped (logged), so an unreadable campaign setting
    /// falls back to the tenant's; unset everywhere: the statutory rules only, per
    /// campaign — the law is kept whatever control holds.
    pub fn calling_rules(&self, tenant: &str, campaign: &str) -> Arc<TenantCallingRules> {
        for scope in [Some(campaign), None] {
            if let Typed::Rules(Some(rules)) =
                self.typed(tenant, ControlSetting::CallingRules, scope)
            {
                return rules;
            }
        }
        self.table.statutory_only.clone()
    }

    /// The latest change stored under `key`, decoded (who, when, old and new value).
    pub fn change(&self, key: &SettingKey) -> Option<Arc<ControlChange>> {
        let record_key = key.record_key();
        let raw = self.raw(&record_key)?;
        // Fills the memo if this raw value was not seen yet.
        self.typed(&key.tenant, key.setting, key.campaign.as_deref());
        let memo = self.table.memo.borrow();
        memo.get(&record_key)
            .filter(|m| m.raw == raw)
            .and_then(|m| m.change.clone())
    }
}

enum FlagValue {
    Set(bool),
    Unset,
    Unusable,
}

impl FlagValue {
    fn or_safe(self, default: bool, safe: bool) -> bool {
        match self {
            FlagValue::Set(on) => on,
            FlagValue::Unset => default,
            FlagValue::Unusable => safe,
        }
    }
}

fn unset(setting: ControlSetting) -> Typed {
    match setting {
        ControlSetting::CampaignSettings => Typed::Campaign(None),
        ControlSetting::GridSettings => Typed::Grid(None),
        ControlSetting::CompletionWindow => Typed::Completion(None),
        ControlSetting::NotificationRoutes => Typed::Notify(None),
        ControlSetting::CallingRules => Typed::Rules(None),
        _ => Typed::Flag(None),
    }
}

/// Decodes and converts one raw value; logs (once per raw value) what is unusable.
fn decode(
    key: &str,
    setting: ControlSetting,
    campaign: Option<&str>,
    raw: &[u8],
) -> (Option<Arc<ControlChange>>, Typed) {
    let change = match ControlChange::decode(raw) {
        Ok(change) => change,
        Err(error) => {
            tracing::warn!(key, %error, "control value cannot be decoded; using the safe default");
            return (None, Typed::Unusable);
        }
    };
    let typed = match typed_value(setting, campaign, &change) {
        Ok(typed) => typed,
        Err(error) => {
            tracing::warn!(key, %error, "control value is not usable; using the safe default");
            Typed::Unusable
        }
    };
    (Some(Arc::new(change)), typed)
}

fn typed_value(
    setting: ControlSetting,
    campaign: Option<&str>,
    change: &ControlChange,
) -> Result<Typed, SettingError> {
    if change.setting != setting {
        return Err(SettingError::Missing(setting.as_str()));
    }
    let value: &ControlValue = &change.new_value;
    Ok(match setting {
        ControlSetting::CampaignSettings => match &value.campaign {
            None => Typed::Campaign(None),
            Some(wire) => {
                let mut config = CampaignConfig::from_wire(campaign.unwrap_or(""), wire)?;
                if campaign.is_none() {
                    config.origin = Origin::TenantDefault;
                }
                Typed::Campaign(Some(Arc::new(config)))
            }
        },
        ControlSetting::GridSettings => {
            Typed::Grid(value.grid.as_ref().map(TenantGrid::from_wire).transpose()?)
        }
        ControlSetting::CompletionWindow => Typed::Completion(
            value
                .completion
                .as_ref()
                .map(CompletionWindow::from_wire)
                .transpose()?,
        ),
        ControlSetting::NotificationRoutes => Typed::Notify(
            value
                .notifications
                .as_ref()
                .map(|n| NotificationPolicy::from_wire(n).map(Arc::new))
                .transpose()?,
        ),
        ControlSetting::CallingRules => Typed::Rules(
            value
                .calling_rules
                .as_ref()
                .map(|r| TenantCallingRules::from_wire(r).map(Arc::new))
                .transpose()?,
        ),
        _ => Typed::Flag(value.enabled),
    })
}

#[cfg(test)]
mod tests;

//! What applying a file changes: the pure comparison of the desired
//! settings with the table, and the `ControlChange` events that record it.
//!
//! Guarantees: a setting whose value is already in force yields nothing,
//! so applying the same file twice publishes nothing the second time; an
//! unset value (all parts empty) and an absent key are the same; every
//! change carries the old value (`None` when there was none); the plan is
//! in key order, so the same inputs give the same events.

use std::collections::{BTreeMap, BTreeSet};

use callstream_schemas::{Actor, ControlChange, ControlValue, Timestamp};
use uuid::Uuid;

use callstream_kit::control::keys::SettingKey;

/// One setting to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedChange {
    pub key: SettingKey,
    pub old: Option<ControlValue>,
    /// An empty value resets the setting to its default.
    pub new: ControlValue,
}

/// Whether a value sets nothing (a reset).
pub fn is_unset(value: &ControlValue) -> bool {
    *value == ControlValue::default()
}

/// The changes that make the table say what `desired` says, for the
/// tenants in `scope`. A setting of an in-scope tenant that `desired` no
/// longer holds is reset; other tenants' settings are left alone.
pub fn plan_changes(
    desired: &BTreeMap<SettingKey, ControlValue>,
    scope: &BTreeSet<String>,
    current: &BTreeMap<SettingKey, ControlValue>,
) -> Vec<PlannedChange> {
    let in_force = |key: &SettingKey| current.get(key).filter(|v| !is_unset(v)).cloned();
    let mut plan: Vec<PlannedChange> = desired
        .iter()
        .filter_map(|(key, new)| {
            let old = in_force(key);
            let same = match &old {
                Some(old) => old == new,
                None => is_unset(new),
            };
            (!same).then(|| PlannedChange {
                key: key.clone(),
                old,
                new: new.clone(),
            })
        })
        .collect();
    plan.extend(
        current
            .iter()
            .filter(|(key, value)| {
                scope.contains(&key.tenant) && !desired.contains_key(key) && !is_unset(value)
            })
            .map(|(key, value)| PlannedChange {
                key: key.clone(),
                old: Some(value.clone()),
                new: ControlValue::default(),
            }),
    );
    plan.sort_by(|a, b| a.key.cmp(&b.key));
    plan
}

/// Who applies, when and why: shared by every event of one apply.
#[derive(Debug, Clone)]
pub struct ApplyMeta {
    /// The id of this apply: the causation and correlation of its events.
    pub apply_id: Uuid,
    pub actor: Actor,
    pub at: Timestamp,
    pub reason: Option<String>,
}

/// The events of a plan. Event ids are UUIDv5 over the apply id and the
/// key, so a retried publish of the same apply carries the same ids.
pub fn change_events(plan: &[PlannedChange], meta: &ApplyMeta) -> Vec<ControlChange> {
    plan.iter()
        .map(|change| {
            let key = change.key.record_key();
            ControlChange {
                event_id: callstream_domain::ids::control::change(&meta.apply_id, &key),
                tenant_id: change.key.tenant.clone(),
                occurred_at: meta.at,
                causation_id: Some(meta.apply_id),
                correlation_id: Some(meta.apply_id),
                setting: change.key.setting,
                campaign_id: change.key.campaign.clone(),
                new_value: change.new.clone(),
                old_value: change.old.clone(),
                actor: meta.actor.clone(),
                reason: meta.reason.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use callstream_schemas::ControlSetting;

    fn flag(on: bool) -> ControlValue {
        ControlValue {
            enabled: Some(on),
            ..ControlValue::default()
        }
    }

    fn key(tenant: &str, setting: ControlSetting) -> SettingKey {
        SettingKey::new(tenant, setting, None)
    }

    #[test]
    fn only_differences_are_planned_and_dropped_settings_are_reset_in_scope() {
        let pause = |t| key(t, ControlSetting::SystemPause);
        let shadow = |t| key(t, ControlSetting::ShadowMode);
        let desired = BTreeMap::from([(pause("a"), flag(true)), (shadow("a"), flag(false))]);
        let current = BTreeMap::from([
            (shadow("a"), flag(false)),                         // same: nothing
            (key("a", ControlSetting::CrmWrites), flag(false)), // dropped: reset
            (key("b", ControlSetting::CrmWrites), flag(false)), // other tenant: kept
            (
                key("a", ControlSetting::GridSettings),
                ControlValue::default(),
            ), // already unset
        ]);
        let scope = BTreeSet::from(["a".to_owned()]);
        let plan = plan_changes(&desired, &scope, &current);
        assert_eq!(
            plan,
            vec![
                PlannedChange {
                    key: key("a", ControlSetting::CrmWrites),
                    old: Some(flag(false)),
                    new: ControlValue::default()
                },
                PlannedChange {
                    key: pause("a"),
                    old: None,
                    new: flag(true)
                },
            ]
        );
        // Once applied, the same desired state plans nothing.
        let mut after = current.clone();
        for change in &plan {
            after.insert(change.key.clone(), change.new.clone());
        }
        assert!(plan_changes(&desired, &scope, &after).is_empty());
    }

    #[test]
    fn events_carry_who_when_old_and_new_with_deterministic_ids() {
        let plan = vec![PlannedChange {
            key: SettingKey::new("a", ControlSetting::CampaignPause, Some("c1")),
            old: Some(flag(false)),
            new: flag(true),
        }];
        let meta = ApplyMeta {
            apply_id: Uuid::from_u128(7),
            actor: Actor::operator("alice"),
            at: chrono::DateTime::from_timestamp_millis(1_700_000_000_000).unwrap_or_default(),
            reason: Some("storm".into()),
        };
        let events = change_events(&plan, &meta);
        assert_eq!(events, change_events(&plan, &meta));
        let e = &events[0];
        assert_eq!(e.record_key(), "a/campaign_pause/c1");
        assert_eq!(e.actor, Actor::operator("alice"));
        assert_eq!(
            (e.old_value.clone(), e.new_value.clone()),
            (Some(flag(false)), flag(true))
        );
        assert_eq!(e.causation_id, Some(meta.apply_id));
        assert_eq!(e.occurred_at, meta.at);
    }
}

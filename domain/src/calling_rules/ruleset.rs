//! Which rules apply to a lead: the statutory rows of its state(s), plus
//! the tenant's own stricter rules, minus the statutory rules the tenant
//! overrode explicitly (each override names a rule id or family and gives
//! a reason, so it can be audited).
//!
//! Why there is no other way to loosen anything: every rule only removes
//! instants (all rules must allow a call), so adding rules can only make
//! calling stricter; the single way to drop a statutory rule is an
//! [`Override`], and the [`RuleSet`] keeps the list of what was dropped and
//! why, for the decision that uses it.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use super::table::{self, parse_body, RuleTable};
use super::{
    CapWindow, Jurisdiction, Jurisdictions, Origin, Rule, RuleBody, RuleId, RuleWindow, RulesError,
};
use crate::timezone::ResolvedZone;

/// A tenant's own rule, as control stores it: same kinds and parameter
/// grammar as the statutory table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantRuleSpec {
    /// `tenant:<name>`, e.g. `tenant:7_per_7d`.
    pub id: String,
    /// `hours`, `holiday` or `frequency_cap`.
    pub kind: String,
    /// As in the table, e.g. `max=7; window=7d`.
    pub params: String,
    /// States it applies to (`US-FL`, `FL`); empty for every lead.
    #[serde(default)]
    pub states: Vec<String>,
}

/// A statutory rule (or family, such as `state_holiday:MS`) a tenant
/// switched off, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Override {
    pub rule: RuleId,
    pub reason: String,
}

/// A tenant's additions and overrides, checked against the table.
#[derive(Debug, Clone, Default)]
pub struct TenantRules {
    /// Each added rule with the states it is limited to (empty: all).
    added: Vec<(Arc<Rule>, Vec<Jurisdiction>)>,
    overrides: Vec<Override>,
}

impl TenantRules {
    /// No additions, no overrides: the statutory rules only.
    pub fn none() -> TenantRules {
        TenantRules::default()
    }

    /// Checks the tenant's settings against the statutory table.
    pub fn new(
        specs: &[TenantRuleSpec],
        overrides: &[Override],
    ) -> Result<TenantRules, RulesError> {
        TenantRules::against(table::statutory(), specs, overrides)
    }

    /// As [`TenantRules::new`], against any table.
    pub fn against(
        table: &RuleTable,
        specs: &[TenantRuleSpec],
        overrides: &[Override],
    ) -> Result<TenantRules, RulesError> {
        let mut added = Vec::with_capacity(specs.len());
        for spec in specs {
            let id = RuleId::parse(&spec.id)?;
            let name_ok = id
                .as_str()
                .strip_prefix("tenant:")
                .is_some_and(|name| !name.is_empty());
            if !name_ok {
                return Err(RulesError::TenantRuleName(super::clip(&spec.id)));
            }
            if added.iter().any(|(r, _): &(Arc<Rule>, _)| r.id == id) {
                return Err(RulesError::Duplicate(id.to_string()));
            }
            let states = spec
                .states
                .iter()
                .map(|s| Jurisdiction::parse(s))
                .collect::<Result<Vec<_>, _>>()?;
            let rule = Rule {
                id,
                jurisdiction: None,
                body: parse_body(&spec.kind, &spec.params)?,
                effective: None,
                origin: Origin::Tenant,
                citation: String::new(),
                reviewed: None,
                note: String::new(),
            };
            added.push((Arc::new(rule), states));
        }
        for o in overrides {
            if o.reason.trim().is_empty() {
                return Err(RulesError::OverrideWithoutReason(o.rule.to_string()));
            }
            if !table.rules().iter().any(|r| r.id.is_in(&o.rule)) {
                return Err(RulesError::UnknownOverride(o.rule.to_string()));
            }
        }
        Ok(TenantRules {
            added,
            overrides: overrides.to_vec(),
        })
    }

    pub fn overrides(&self) -> &[Override] {
        &self.overrides
    }
}

/// The rules that apply to one lead.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    rules: Vec<Arc<Rule>>,
    /// Statutory rules of the lead's states that an override removed.
    overridden: Vec<(RuleId, Override)>,
}

impl RuleSet {
    /// The statutory rules of the lead's states, the tenant's additions
    /// that cover them, minus the overridden ones.
    pub fn for_lead(jurisdictions: &Jurisdictions, tenant: &TenantRules) -> RuleSet {
        RuleSet::from_table(table::statutory(), jurisdictions, tenant)
    }

    /// As [`RuleSet::for_lead`], from any table.
    pub fn from_table(
        table: &RuleTable,
        jurisdictions: &Jurisdictions,
        tenant: &TenantRules,
    ) -> RuleSet {
        let mut set = RuleSet::default();
        for rule in table.rules() {
            if !rule.jurisdiction.is_some_and(|j| jurisdictions.contains(j)) {
                continue;
            }
            match tenant.overrides.iter().find(|o| rule.id.is_in(&o.rule)) {
                Some(o) => set.overridden.push((rule.id.clone(), o.clone())),
                None => set.rules.push(Arc::clone(rule)),
            }
        }
        for (rule, states) in &tenant.added {
            if states.is_empty() || states.iter().any(|s| jurisdictions.contains(*s)) {
                set.rules.push(Arc::clone(rule));
            }
        }
        set
    }

    /// A set of exactly these rules (tests, tools).
    pub fn of(rules: Vec<Rule>) -> RuleSet {
        RuleSet {
            rules: rules.into_iter().map(Arc::new).collect(),
            overridden: Vec::new(),
        }
    }

    pub fn rules(&self) -> &[Arc<Rule>] {
        &self.rules
    }

    /// The statutory rules left out, each with the override that did it.
    pub fn overridden(&self) -> &[(RuleId, Override)] {
        &self.overridden
    }

    /// Whether any frequency cap applies (if not, call history is not needed).
    pub fn has_caps(&self) -> bool {
        self.rules
            .iter()
            .any(|r| matches!(r.body, RuleBody::FrequencyCap(_)))
    }

    /// The time rules (hours, holidays) placed in the lead's zone(s).
    pub fn in_zones(&self, zones: Vec<Tz>) -> Result<RuleWindow, RulesError> {
        RuleWindow::new(&self.rules, zones)
    }

    /// The time rules in a resolved zone (which always has a zone).
    pub fn for_zone(&self, zone: &ResolvedZone) -> RuleWindow {
        let zones = if zone.zones.is_empty() {
            vec![zone.primary()]
        } else {
            zone.zones.clone()
        };
        RuleWindow::build(&self.rules, zones)
    }

    /// The caps over the calls already placed to the person, in any order.
    pub fn caps(&self, placed: &[DateTime<Utc>]) -> CapWindow {
        CapWindow::new(&self.rules, placed)
    }
}

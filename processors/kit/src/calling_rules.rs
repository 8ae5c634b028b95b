//! The state calling rules of one lead (`callstream_domain::calling_rules`) as the events
//! carry them: the contact processor resolves the lead's states and counts the calls placed
//! to it, and puts both on every schedule request and launch command; the scheduler plans
//! with them and the launch dispatcher checks them again immediately before the create.
//! Every refusal names its rule (`state_hours:FL`, `frequency_cap:FL:3_per_24h`).

use callstream_domain::calling_rules::{
    CapWindow, Jurisdiction, JurisdictionEntry, JurisdictionSource, Jurisdictions, Override,
    RuleId, RuleSet, RuleWindow, TenantRuleSpec, TenantRules, Violation,
};
use callstream_schemas::CallingRules;

use crate::control::settings::SettingError;
use callstream_domain::Availability;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

/// How long placed calls are remembered: longer than any cap's window (the statutory
/// caps count 24 hours; a tenant's own, such as Regulation F's 7 in 7 days, a week).
pub const PLACED_CALLS_KEPT: chrono::TimeDelta = chrono::TimeDelta::days(31);
/// At most this many placed calls per subject are kept (the newest).
pub const MAX_PLACED_CALLS: usize = 64;

/// Keeps of `calls` what a cap can still count, oldest first: those placed within
/// [`PLACED_CALLS_KEPT`] of the newest, at most [`MAX_PLACED_CALLS`] of them (the newest).
/// The contact processor's count per lead and the launch dispatcher's per number both
/// keep their calls this way.
pub fn keep_countable<T>(calls: &mut Vec<T>, at_ms: impl Fn(&T) -> i64) {
    calls.sort_by_key(&at_ms);
    let Some(newest) = calls.last().map(&at_ms) else {
        return;
    };
    let kept = PLACED_CALLS_KEPT.num_milliseconds();
    calls.retain(|c| newest - at_ms(c) <= kept);
    let extra = calls.len().saturating_sub(MAX_PLACED_CALLS);
    calls.drain(..extra);
}

/// What frequency caps count within: the calls of one campaign (the default), or every
/// call of the tenant to the lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CapSubject {
    #[default]
    Campaign,
    Tenant,
}

impl CapSubject {
    /// The key the contact processor counts placed calls under, for a call of `campaign`.
    pub fn key(self, campaign: &str) -> &str {
        match self {
            CapSubject::Campaign => campaign,
            CapSubject::Tenant => "*",
        }
    }
}

/// A tenant's calling rules from `control`: its own rules and overrides, checked against
/// the statutory table, and the cap subject. Unset: the statutory rules only, per campaign.
#[derive(Debug, Clone, Default)]
pub struct TenantCallingRules {
    pub rules: TenantRules,
    pub cap_subject: CapSubject,
    /// The state (two-letter code) whose rules apply when neither the contact record nor
    /// the area code says where the lead is.
    pub default_state: Option<String>,
}

impl TenantCallingRules {
    /// Reads and checks the wire value (`control apply` checks it the same way first).
    pub fn from_wire(wire: &CallingRules) -> Result<TenantCallingRules, SettingError> {
        let specs: Vec<TenantRuleSpec> = wire
            .rules
            .iter()
            .map(|r| TenantRuleSpec {
                id: r.id.clone(),
                kind: r.kind.clone(),
                params: r.params.clone(),
                states: r.states.clone(),
            })
            .collect();
        let overrides = wire
            .overrides
            .iter()
            .map(|o| {
                Ok(Override {
                    rule: RuleId::parse(&o.rule)?,
                    reason: o.reason.clone(),
                })
            })
            .collect::<Result<Vec<_>, SettingError>>()?;
        let cap_subject = match wire.cap_subject.trim() {
            "" | "campaign" => CapSubject::Campaign,
            "tenant" => CapSubject::Tenant,
            other => return Err(SettingError::CapSubject(other.to_owned())),
        };
        let default_state = wire
            .default_state
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                callstream_domain::input::normal_state(s)
                    .map_err(|_| SettingError::DefaultState(s.to_owned()))
            })
            .transpose()?;
        Ok(TenantCallingRules {
            rules: TenantRules::new(&specs, &overrides)?,
            cap_subject,
            default_state,
        })
    }
}

/// How the events name where a lead's state came from.
pub fn source_name(source: JurisdictionSource) -> &'static str {
    match source {
        JurisdictionSource::Contact => "contact_record",
        JurisdictionSource::AreaCode => "area_code",
        JurisdictionSource::TenantDefault => "tenant_default",
    }
}

/// The states of `jurisdictions` as the events carry them (two-letter codes, the
/// resolution's choice first) and where the first came from.
pub fn to_wire(jurisdictions: &Jurisdictions) -> (Vec<String>, Option<String>) {
    let states = jurisdictions
        .states()
        .map(|s| s.code().to_owned())
        .collect();
    (states, Some(source_name(jurisdictions.source()).to_owned()))
}

/// The time rules and caps of one lead.
#[derive(Debug, Clone)]
pub struct LeadRules {
    pub window: RuleWindow,
    pub caps: CapWindow,
}

impl LeadRules {
    /// The rules of the states an event names (and the tenant's own, minus what it
    /// overrode), in the lead's zone(s), over the calls placed to it; `None` when no rule
    /// applies (or no zone is given): the federal floor and the campaign's window are all
    /// that apply. A state the table does not know is left out (the contact processor
    /// only writes codes it resolved).
    pub fn from_wire(
        jurisdictions: &[String],
        zones: &[Tz],
        placed: &[DateTime<Utc>],
        tenant: &TenantRules,
    ) -> Option<LeadRules> {
        let entries: Vec<JurisdictionEntry> = jurisdictions
            .iter()
            .filter_map(|s| Jurisdiction::parse(s).ok())
            .map(|state| JurisdictionEntry {
                state,
                source: JurisdictionSource::Contact,
            })
            .collect();
        let states = Jurisdictions {
            entries,
            skipped: Vec::new(),
        };
        let set = RuleSet::for_lead(&states, tenant);
        if set.rules().is_empty() {
            return None;
        }
        let window = set.in_zones(zones.to_vec()).ok()?;
        Some(LeadRules {
            window,
            caps: set.caps(placed),
        })
    }

    /// The first rule a call at `at` breaks, if any (no search for the next instant).
    pub fn violation(&self, at: DateTime<Utc>) -> Option<Violation> {
        match (self.window.check(at), self.caps.check(at)) {
            (Ok(()), Ok(())) => None,
            (Err(v), _) => Some(v),
            (Ok(()), Err(hit)) => Some(hit.violation),
        }
    }

    /// `Ok` if a call at `at` breaks no rule; else the first rule it breaks, and the
    /// earliest instant at or after `at` that every rule allows (by `horizon`).
    pub fn check(
        &self,
        at: DateTime<Utc>,
        horizon: DateTime<Utc>,
    ) -> Result<(), (Violation, Option<DateTime<Utc>>)> {
        match self.violation(at) {
            None => Ok(()),
            Some(violation) => Err((violation, self.next_allowed(at, horizon))),
        }
    }
}

impl Availability for LeadRules {
    fn is_allowed(&self, at: DateTime<Utc>) -> bool {
        self.window.is_allowed(at) && self.caps.is_allowed(at)
    }

    fn next_allowed(&self, at: DateTime<Utc>, horizon: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let parts: [&dyn Availability; 2] = [&self.window, &self.caps];
        callstream_domain::calling_rules::AllOf(&parts).next_allowed(at, horizon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_florida_lead_is_held_to_florida_hours_and_named_rule() {
        let zones = [chrono_tz::America::New_York];
        let rules = LeadRules::from_wire(&["FL".to_owned()], &zones, &[], &TenantRules::none())
            .expect("rules");
        // 20:30 in New York on a Tuesday: federal hours allow it, Florida's do not.
        let late = Utc.with_ymd_and_hms(2026, 3, 10, 0, 30, 0).unwrap();
        let horizon = late + chrono::TimeDelta::days(3);
        let (violation, next) = rules.check(late, horizon).unwrap_err();
        assert_eq!(violation.rule_id.as_str(), "state_hours:FL");
        // 08:00 the next morning, in New York (EDT since 8 March).
        assert_eq!(
            next,
            Some(Utc.with_ymd_and_hms(2026, 3, 10, 12, 0, 0).unwrap())
        );
        assert!(LeadRules::from_wire(&[], &zones, &[], &TenantRules::none()).is_none());
    }

    #[test]
    fn a_fourth_call_in_24_hours_waits_for_the_oldest_to_age_out() {
        let zones = [chrono_tz::America::New_York];
        let t = |h| Utc.with_ymd_and_hms(2026, 3, 10, h, 0, 0).unwrap();
        let placed = [t(13), t(15), t(17)];
        let rules = LeadRules::from_wire(&["FL".to_owned()], &zones, &placed, &TenantRules::none())
            .expect("rules");
        let (violation, next) = rules
            .check(t(19), t(19) + chrono::TimeDelta::days(3))
            .unwrap_err();
        assert_eq!(violation.rule_id.as_str(), "frequency_cap:FL:3_per_24h");
        assert_eq!(next, Some(t(13) + chrono::TimeDelta::days(1)));
    }
}

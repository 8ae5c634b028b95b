//! The state calling rules of one lead (`callstream_domain::calling_rules`) as the events
//! carry them: the contact processor resolves the lead's states and counts the calls placed
//! to it, and puts both on every schedule request and launch command; the scheduler plans
//! with them and the launch dispatcher checks them again immediately before the create.
//! Every refusal names its rule (`state_hours:FL`, `frequency_cap:FL:3_per_24h`).

use callstream_domain::calling_rules::{
    CapWindow, Jurisdiction, JurisdictionEntry, JurisdictionSource, Jurisdictions, RuleSet,
    RuleWindow, TenantRules, Violation,
};
use callstream_domain::Availability;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

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
    /// The rules of the states an event names, in the lead's zone(s), over the calls
    /// placed to it; `None` when no state (or no zone) is given: the federal floor and
    /// the campaign's window are all that apply. A state the table does not know is left
    /// out (the contact processor only writes codes it resolved).
    pub fn from_wire(
        jurisdictions: &[String],
        zones: &[Tz],
        placed: &[DateTime<Utc>],
    ) -> Option<LeadRules> {
        let entries: Vec<JurisdictionEntry> = jurisdictions
            .iter()
            .filter_map(|s| Jurisdiction::parse(s).ok())
            .map(|state| JurisdictionEntry {
                state,
                source: JurisdictionSource::Contact,
            })
            .collect();
        if entries.is_empty() {
            return None;
        }
        let states = Jurisdictions {
            entries,
            skipped: Vec::new(),
        };
        let set = RuleSet::for_lead(&states, &TenantRules::none());
        let window = set.in_zones(zones.to_vec()).ok()?;
        Some(LeadRules {
            window,
            caps: set.caps(placed),
        })
    }

    /// `Ok` if a call at `at` breaks no rule; else the first rule it breaks, and the
    /// earliest instant at or after `at` that every rule allows (by `horizon`).
    pub fn check(
        &self,
        at: DateTime<Utc>,
        horizon: DateTime<Utc>,
    ) -> Result<(), (Violation, Option<DateTime<Utc>>)> {
        let violation = match (self.window.check(at), self.caps.check(at)) {
            (Ok(()), Ok(())) => return Ok(()),
            (Err(v), _) => v,
            (Ok(()), Err(hit)) => hit.violation,
        };
        Err((violation, self.next_allowed(at, horizon)))
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
        let rules = LeadRules::from_wire(&["FL".to_owned()], &zones, &[]).expect("rules");
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
        assert!(LeadRules::from_wire(&[], &zones, &[]).is_none());
    }

    #[test]
    fn a_fourth_call_in_24_hours_waits_for_the_oldest_to_age_out() {
        let zones = [chrono_tz::America::New_York];
        let t = |h| Utc.with_ymd_and_hms(2026, 3, 10, h, 0, 0).unwrap();
        let placed = [t(13), t(15), t(17)];
        let rules = LeadRules::from_wire(&["FL".to_owned()], &zones, &placed).expect("rules");
        let (violation, next) = rules
            .check(t(19), t(19) + chrono::TimeDelta::days(3))
            .unwrap_err();
        assert_eq!(violation.rule_id.as_str(), "frequency_cap:FL:3_per_24h");
        assert_eq!(next, Some(t(13) + chrono::TimeDelta::days(1)));
    }
}

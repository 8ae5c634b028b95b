//! Properties over random leads, rule sets and instants: `next_allowed`
//! never returns an instant that breaks an applicable rule, is never
//! earlier than asked, and skips no allowed instant; a Florida lead never
//! gets a fourth call within any rolling 24 hours.

use super::*;
use crate::area_codes;
use chrono::{Datelike, Timelike};
use proptest::prelude::*;

const STATES: [&str; 13] = [
    "FL", "OK", "MD", "KY", "AL", "LA", "MS", "RI", "UT", "PA", "GA", "TX", "CA",
];
/// Overrides the tests may draw; dropping a state's hours leaves its
/// holidays as the only time rule, so holiday handling is not masked.
const OVERRIDABLE: [&str; 8] = [
    "state_holiday:MS",
    "state_hours:PA",
    "state_hours:AL",
    "state_hours:LA",
    "state_hours:RI",
    "state_hours:UT",
    "frequency_cap:FL",
    "state_holiday:LA:mardi_gras",
];

/// US area codes (with their zones) from the table.
fn us_codes() -> Vec<&'static area_codes::AreaCodeEntry> {
    area_codes::entries()
        .iter()
        .filter(|e| e.region.starts_with("US-"))
        .collect()
}

#[derive(Debug, Clone)]
struct Lead {
    contact: Option<&'static str>,
    area_code: u16,
    zones: Vec<Tz>,
    tenant_cap: bool,
    tenant_hours: Option<(u32, u32)>,
    overrides: Vec<&'static str>,
}

impl Lead {
    fn rules(&self) -> RuleSet {
        let phone = format!("+1{}5550100", self.area_code);
        let lead = resolve_jurisdictions(&JurisdictionInputs {
            contact_state: self.contact,
            phone: Some(&phone),
            tenant_default: Some("GA"),
        })
        .unwrap();
        let mut specs = Vec::new();
        if self.tenant_cap {
            specs.push(TenantRuleSpec {
                id: "tenant:7_per_7d".into(),
                kind: "frequency_cap".into(),
                params: "max=7; window=7d".into(),
                states: vec![],
            });
        }
        if let Some((open, close)) = self.tenant_hours {
            specs.push(TenantRuleSpec {
                id: "tenant:hours".into(),
                kind: "hours".into(),
                params: format!("mon-sat {open:02}:00-{close:02}:00; sun closed"),
                states: vec![],
            });
        }
        let overrides: Vec<Override> = self
            .overrides
            .iter()
            .map(|id| Override {
                rule: RuleId::parse(id).unwrap(),
                reason: "property test".into(),
            })
            .collect();
        RuleSet::for_lead(&lead, &TenantRules::new(&specs, &overrides).unwrap())
    }
}

fn arb_lead() -> impl Strategy<Value = Lead> {
    let codes = us_codes();
    (
        prop::option::of(0..STATES.len()),
        0..codes.len(),
        any::<bool>(),
        prop::option::of((8u32..12, 14u32..21)),
        prop::collection::vec(0..OVERRIDABLE.len(), 0..3),
    )
        .prop_map(
            move |(contact, code, tenant_cap, tenant_hours, overrides)| Lead {
                contact: contact.map(|i| STATES[i]),
                area_code: codes[code].area_code.get(),
                zones: codes[code].zones.clone(),
                tenant_cap,
                tenant_hours,
                overrides: overrides.into_iter().map(|i| OVERRIDABLE[i]).collect(),
            },
        )
}

/// Instants from 2025 to 2034 on a five-minute grid (every rule boundary
/// lies on it), crossing every DST change of the decade; half of them
/// within a day or two of some state's holiday, which uniform instants
/// would rarely hit.
fn arb_instant() -> impl Strategy<Value = DateTime<Utc>> {
    let uniform =
        (0i64..(10 * 365 * 288)).prop_map(|i| utc(2025, 1, 1, 0, 0) + TimeDelta::minutes(5 * i));
    let holidays: Vec<HolidaySpec> = statutory()
        .rules()
        .iter()
        .filter_map(|r| match &r.body {
            RuleBody::Holiday(spec) => Some(spec.clone()),
            _ => None,
        })
        .collect();
    let near_holiday = (
        0..holidays.len(),
        2025i32..2035,
        0usize..3,
        -288i64..(3 * 288),
    )
        .prop_map(move |(h, year, pick, offset)| {
            let dates = holidays[h].dates(year);
            let day = dates
                .get(pick % dates.len().max(1))
                .map_or(date(year, 6, 1), |(d, _)| *d);
            day.and_time(NaiveTime::MIN).and_utc() + TimeDelta::minutes(5 * offset)
        });
    prop_oneof![uniform, near_holiday]
}

/// An independent reading of the time rules: local wall-clock comparison
/// (every hour here is daytime, away from 02:00 DST changes) and
/// `HolidaySpec::falls_on` (not the window's cache).
fn oracle_allows(rules: &RuleSet, zones: &[Tz], at: DateTime<Utc>) -> bool {
    zones.iter().all(|&tz| {
        let local = at.with_timezone(&tz).naive_local();
        rules.rules().iter().all(|rule| {
            if rule.effective.is_some_and(|from| local.date() < from) {
                return true;
            }
            match &rule.body {
                RuleBody::Hours(hours) => match hours.day(local.weekday()) {
                    DayHours::Closed => false,
                    DayHours::Open { start, end } => start <= local.time() && local.time() < end,
                },
                RuleBody::Holiday(spec) => !spec.falls_on(local.date()),
                RuleBody::FrequencyCap(_) => true,
            }
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn next_allowed_breaks_no_rule_and_skips_no_allowed_instant(
        lead in arb_lead(),
        at in arb_instant(),
        days in 0i64..8,
    ) {
        let rules = lead.rules();
        let window = rules.in_zones(lead.zones.clone()).unwrap();
        let horizon = at + TimeDelta::days(days) + TimeDelta::hours(7);
        let found = window.next_allowed(at, horizon);
        if let Some(t) = found {
            prop_assert!(t >= at && t <= horizon);
            prop_assert_eq!(window.check(t), Ok(()));
            prop_assert!(oracle_allows(&rules, &lead.zones, t), "{:?} at {}", lead, t);
            if t > at {
                prop_assert!(!window.is_allowed(t - TimeDelta::nanoseconds(1)));
            }
        }
        // No grid instant before the answer (or before the horizon, if
        // none) is allowed, by the oracle; scanned up to three days.
        let end = found.unwrap_or(horizon).min(at + TimeDelta::days(3));
        let mut probe = at;
        while probe < end {
            prop_assert!(!oracle_allows(&rules, &lead.zones, probe), "{:?}: {} allowed before {:?}", lead, probe, found);
            probe += TimeDelta::minutes(5);
        }
        // `check` agrees with `is_allowed`, and names a rule of the set.
        match window.check(at) {
            Ok(()) => prop_assert!(window.is_allowed(at)),
            Err(v) => prop_assert!(rules.rules().iter().any(|r| r.id == v.rule_id)),
        }
    }

    #[test]
    fn the_intersection_with_a_campaign_window_and_caps_is_respected(
        lead in arb_lead(),
        at in arb_instant(),
        history in prop::collection::vec(-(3 * 24 * 12)..(3 * 24 * 12i64), 0..9),
        start in 6u32..12,
    ) {
        let rules = lead.rules();
        let window = rules.in_zones(lead.zones.clone()).unwrap();
        let placed: Vec<_> = history.iter().map(|m| at + TimeDelta::minutes(5 * m)).collect();
        let caps = rules.caps(&placed);
        let campaign = CampaignWindow::daily(
            Days::EVERY_DAY,
            NaiveTime::from_hms_opt(start, 0, 0).unwrap(),
            NaiveTime::from_hms_opt(20, 30, 0).unwrap(),
        )
        .unwrap()
        .in_zones(lead.zones.clone())
        .unwrap();
        let horizon = at + TimeDelta::days(30);
        match place(&campaign, &window, &caps, at, horizon) {
            RulePlacement::Allowed { at: t } => prop_assert_eq!(t, at),
            RulePlacement::Moved { at: t, .. } => {
                prop_assert!(t > at && t <= horizon);
                prop_assert!(campaign.is_allowed(t));
                prop_assert_eq!(window.check(t), Ok(()));
                prop_assert_eq!(caps.check(t), Ok(()));
                prop_assert!(oracle_allows(&rules, &lead.zones, t));
            }
            RulePlacement::NoOpening { .. } => {}
        }
    }

    /// Requests in any order, each placed at the first instant Florida's
    /// hours and cap allow given the calls placed so far: no four of the
    /// resulting calls ever fall within 24 hours, and none is early.
    #[test]
    fn no_fourth_call_to_a_florida_lead_in_any_rolling_24_hours(
        requests in prop::collection::vec(0i64..(7 * 24 * 12), 1..14),
        base in arb_instant(),
    ) {
        let lead = Jurisdictions::single(state("FL"), JurisdictionSource::AreaCode);
        let set = RuleSet::for_lead(&lead, &TenantRules::none());
        let window = set.in_zones(vec![New_York]).unwrap();
        let mut placed: Vec<DateTime<Utc>> = Vec::new();
        for r in requests {
            let asked = base + TimeDelta::minutes(5 * r);
            let caps = set.caps(&placed);
            let parts: [&dyn Availability; 2] = [&window, &caps];
            let Some(t) = AllOf(&parts).next_allowed(asked, asked + TimeDelta::days(30)) else {
                continue;
            };
            prop_assert!(t >= asked);
            prop_assert_eq!(caps.check(t), Ok(()));
            let local = t.with_timezone(&New_York);
            prop_assert!((8..20).contains(&local.hour()), "{}", local);
            placed.push(t);
        }
        placed.sort();
        for four in placed.windows(4) {
            prop_assert!(four[3] - four[0] >= TimeDelta::hours(24), "{:?}", four);
        }
    }
}

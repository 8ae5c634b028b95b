//! Properties of calling windows over random rules, zones and instants.

use super::*;
use chrono::{TimeZone, Timelike};
use proptest::prelude::*;

/// Candidate zone sets: single zones and the sets of real spanning area codes.
fn zone_sets() -> Vec<Vec<Tz>> {
    use chrono_tz::America::*;
    let mut sets: Vec<Vec<Tz>> = [Chicago, Phoenix, New_York, Los_Angeles, Anchorage, St_Johns]
        .iter()
        .map(|z| vec![*z])
        .collect();
    sets.push(vec![chrono_tz::Pacific::Honolulu]);
    for e in crate::area_codes::entries()
        .iter()
        .filter(|e| e.spans_zones())
    {
        sets.push(e.zones.clone());
    }
    sets
}

fn arb_rule() -> impl Strategy<Value = WindowRule> {
    // Times on a five-minute grid so the brute-force scan below is exact.
    (1u8..128, 0u32..288, 0u32..288).prop_map(|(bits, s, e)| {
        let time =
            |i: u32| NaiveTime::from_hms_opt(i / 12, (i % 12) * 5, 0).unwrap_or(NaiveTime::MIN);
        WindowRule::new(Days::from_bits(bits), time(s), time(e))
    })
}

fn arb_window() -> impl Strategy<Value = CallingWindow> {
    let sets = zone_sets();
    (prop::collection::vec(arb_rule(), 1..4), 0..sets.len()).prop_map(move |(rules, z)| {
        CampaignWindow::new(rules)
            .and_then(|c| c.in_zones(sets[z].clone()))
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

/// Instants from 2025 to 2028 on a five-minute grid, so DST changes of
/// several years are crossed.
fn arb_instant() -> impl Strategy<Value = DateTime<Utc>> {
    (0i64..(4 * 365 * 288)).prop_map(|i| {
        Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap() + TimeDelta::minutes(5 * i)
    })
}

fn within_federal_hours(tz: Tz, at: DateTime<Utc>) -> bool {
    let local = at.with_timezone(&tz).time();
    local >= FEDERAL_EARLIEST && local < FEDERAL_LATEST
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Never allowed outside 08:00-21:00 local in any candidate zone.
    #[test]
    fn is_allowed_respects_federal_hours_in_every_zone(w in arb_window(), at in arb_instant()) {
        if w.is_allowed(at) {
            for &tz in w.zones() {
                prop_assert!(within_federal_hours(tz, at), "{} at {}", tz, at.with_timezone(&tz));
            }
        }
    }

    /// next_allowed returns an allowed instant in [at, horizon], and there is
    /// no allowed instant between `at` and it (checked on the 5-minute grid
    /// and just before it).
    #[test]
    fn next_allowed_is_the_first_allowed_instant(w in arb_window(), at in arb_instant(), days in 0i64..4) {
        let horizon = at + TimeDelta::days(days) + TimeDelta::hours(7);
        match w.next_allowed(at, horizon) {
            Some(found) => {
                prop_assert!(found >= at);
                prop_assert!(found <= horizon);
                prop_assert!(w.is_allowed(found));
                if found > at {
                    prop_assert!(!w.is_allowed(found - TimeDelta::nanoseconds(1)));
                }
                let mut probe = at;
                while probe < found {
                    prop_assert!(!w.is_allowed(probe), "allowed earlier at {}", probe);
                    probe += TimeDelta::minutes(5);
                }
            }
            None => {
                let mut probe = at;
                while probe <= horizon {
                    prop_assert!(!w.is_allowed(probe), "missed {}", probe);
                    probe += TimeDelta::minutes(5);
                }
            }
        }
    }

    /// Moving a call never makes it earlier, and lands inside the window.
    #[test]
    fn place_never_moves_earlier(w in arb_window(), at in arb_instant(), buffer_min in 0u64..240) {
        let horizon = at + TimeDelta::days(30);
        match w.place(at, std::time::Duration::from_secs(buffer_min * 60), horizon) {
            Placement::InWindow { at: kept } => {
                prop_assert_eq!(kept, at);
                prop_assert!(w.is_allowed(at));
            }
            Placement::Moved { at: moved, opening } => {
                prop_assert!(!w.is_allowed(at));
                prop_assert!(opening >= at);
                prop_assert!(moved >= opening + TimeDelta::minutes(buffer_min as i64));
                prop_assert!(moved <= horizon);
                prop_assert!(w.is_allowed(moved));
            }
            Placement::NoOpening => prop_assert!(w.next_allowed(at, horizon).is_none() || buffer_min > 0),
        }
    }

    /// Phoenix keeps one clock all year: an everyday window opens at the
    /// same UTC time of day on every date.
    #[test]
    fn phoenix_ignores_dst(day in 0i64..(3 * 365)) {
        let w = CampaignWindow::daily(Days::EVERY_DAY, NaiveTime::MIN, NaiveTime::MIN)
            .and_then(|c| c.in_zones(vec![chrono_tz::America::Phoenix]))
            .unwrap();
        // Local midnight in Phoenix is 07:00 UTC every day of the year.
        let midnight = Utc.with_ymd_and_hms(2025, 1, 1, 7, 0, 0).unwrap() + TimeDelta::days(day);
        prop_assert_eq!(midnight.with_timezone(&chrono_tz::America::Phoenix).hour(), 0);
        let opening = w.next_allowed(midnight, midnight + TimeDelta::days(2)).unwrap();
        prop_assert_eq!((opening.hour(), opening.minute()), (15, 0));
        let close = opening + TimeDelta::hours(13);
        prop_assert!(w.is_allowed(close - TimeDelta::seconds(1)));
        prop_assert!(!w.is_allowed(close));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The day table answers exactly as the rules do: the same allowed
    /// instants, the same next allowed instant and the same next opening,
    /// asked in any order on one window (so the table holds earlier days).
    #[test]
    fn day_table_answers_as_the_rules(
        w in arb_window(),
        asks in prop::collection::vec((arb_instant(), 0i64..(40 * 24)), 1..12),
    ) {
        for (at, hours) in asks {
            let horizon = at + TimeDelta::hours(hours);
            prop_assert_eq!(w.is_allowed(at), w.allowed_from_rules(at), "is_allowed {}", at);
            prop_assert_eq!(
                w.next_allowed(at, horizon),
                w.scan(at, horizon, |iv| (iv.end > at).then(|| iv.start.max(at))),
                "next_allowed {} {}", at, horizon
            );
            prop_assert_eq!(
                w.next_opening(at, horizon),
                w.scan(at, horizon, |iv| (iv.start >= at).then_some(iv.start)),
                "next_opening {} {}", at, horizon
            );
        }
        // A clone starts with an empty table and still equals the original.
        prop_assert_eq!(w.clone(), w);
    }
}

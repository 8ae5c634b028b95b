//! Examples: the table, state hours, DST, placement. Holidays are in
//! `tests/holidays.rs`, caps in `tests/caps.rs`, jurisdictions, tenant
//! rules and overrides in `tests/leads.rs`, properties in `tests/props.rs`.

use super::*;
use crate::calling_window::{CampaignWindow, Days};
use crate::timezone::resolve_local;
use crate::Availability;
use chrono::{DateTime, NaiveDate, NaiveTime, TimeDelta, TimeZone, Utc};
use chrono_tz::America::{Chicago, Denver, New_York};
use chrono_tz::Tz;

mod caps;
mod holidays;
mod leads;
mod props;

/// A local date as (year, month, day).
pub(super) type Ymd = (i32, u32, u32);

pub(super) fn state(code: &str) -> Jurisdiction {
    Jurisdiction::parse(code).unwrap()
}

pub(super) fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

pub(super) fn local(tz: Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    resolve_local(
        tz,
        date(y, mo, d).and_time(NaiveTime::from_hms_opt(h, mi, 0).unwrap()),
    )
}

pub(super) fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

/// The statutory time rules of one state, in one zone.
pub(super) fn window_for(code: &str, tz: Tz) -> RuleWindow {
    let lead = Jurisdictions::single(state(code), JurisdictionSource::Contact);
    RuleSet::for_lead(&lead, &TenantRules::none())
        .in_zones(vec![tz])
        .unwrap()
}

fn far(at: DateTime<Utc>) -> DateTime<Utc> {
    at + TimeDelta::days(60)
}

#[test]
fn every_row_of_the_table_parses() {
    assert_eq!(table_errors(), &[] as &[(usize, RulesError)]);
    let rules = statutory().rules();
    assert!(rules.len() >= 80, "{} rules", rules.len());
    for id in [
        "state_hours:FL",
        "state_hours:OK",
        "state_hours:MD",
        "state_hours:KY",
        "state_hours:PA",
        "state_holiday:LA:mardi_gras",
        "state_holiday:RI:victory_day",
        "state_holiday:UT:pioneer_day",
        "state_holiday:MS:confederate_memorial_day",
        "state_holiday:AL:mlk_robert_e_lee_day",
        "frequency_cap:FL:3_per_24h",
        "frequency_cap:OK:3_per_24h",
        "frequency_cap:MD:3_per_24h",
    ] {
        let rule = statutory().get(&RuleId::parse(id).unwrap());
        let rule = rule.unwrap_or_else(|| panic!("{id} missing"));
        assert!(!rule.citation.is_empty(), "{id} has no citation");
        assert!(rule.reviewed.is_some(), "{id} has no review date");
    }
}

#[test]
fn bad_rows_are_reported_with_their_line() {
    let text = "\
state_hours:FL | US-FL | hours | all 08:00-20:00 | - | x | 2026-01-01 |
state_hours:XX | US-XX | hours | all 08:00-20:00 | - | x | 2026-01-01 |
state_hours:FL | US-GA | hours | all 08:00-20:00 | - | x | 2026-01-01 |
state_hours:GA | US-GA | hours | mon-fri 08:00-20:00 | - | x | 2026-01-01 |
state_hours:GA | US-GA | hours | all 20:00-08:00 | - | x | 2026-01-01 |
state_holiday:GA:x | US-GA | holiday | on=13-01 | - | x | 2026-01-01 |
state_holiday:GA:y | US-GA | holiday | on=6th mon jan | - | x | 2026-01-01 |
frequency_cap:GA:0 | US-GA | frequency_cap | max=0; window=24h | - | x | 2026-01-01 |
frequency_cap:GA:1 | US-GA | frequency_cap | max=3; window=24m | - | x | 2026-01-01 |
state_hours:FL | US-FL | hours | all 08:00-20:00 | - | x | 2026-01-01 |
state_hours:GA | US-GA | hours | all 08:00-20:00 | 2026/01/01 | x | 2026-01-01 |
state_hours:GA | US-GA | hours | all 08:00-20:00 | - | x
";
    let table = RuleTable::parse(text);
    assert_eq!(table.rules().len(), 1);
    let lines: Vec<usize> = table.rejected().iter().map(|(n, _)| *n).collect();
    assert_eq!(lines, (2..=12).collect::<Vec<_>>());
    assert!(matches!(table.rejected()[8].1, RulesError::Duplicate(_)));
}

/// (state, zone, local date-time, refusing rule or None). The week of
/// 14-20 September 2026 has no holiday in any of these states.
#[test]
fn state_hours_table() {
    const MON: Ymd = (2026, 9, 14);
    const SAT: Ymd = (2026, 9, 19);
    const SUN: Ymd = (2026, 9, 20);
    type Case = (&'static str, Tz, Ymd, (u32, u32), Option<&'static str>);
    let cases: &[Case] = &[
        ("FL", New_York, MON, (8, 0), None),
        ("FL", New_York, MON, (19, 59), None),
        ("FL", New_York, MON, (20, 0), Some("state_hours:FL")),
        ("FL", New_York, SUN, (12, 0), None),
        ("OK", Chicago, SAT, (20, 30), Some("state_hours:OK")),
        ("OK", Chicago, SAT, (7, 59), Some("state_hours:OK")),
        ("MD", New_York, SUN, (19, 0), None),
        ("MD", New_York, SUN, (20, 15), Some("state_hours:MD")),
        ("KY", New_York, MON, (9, 59), Some("state_hours:KY")),
        ("KY", New_York, MON, (10, 0), None),
        ("KY", Chicago, MON, (20, 59), None),
        ("AL", Chicago, SAT, (19, 59), None),
        ("AL", Chicago, SAT, (20, 0), Some("state_hours:AL")),
        ("AL", Chicago, SUN, (12, 0), Some("state_hours:AL")),
        ("LA", Chicago, SUN, (12, 0), Some("state_hours:LA")),
        ("LA", Chicago, MON, (8, 0), None),
        ("MS", Chicago, SUN, (12, 0), Some("state_hours:MS")),
        ("MS", Chicago, SAT, (20, 30), None),
        ("RI", New_York, MON, (8, 30), Some("state_hours:RI")),
        ("RI", New_York, MON, (17, 59), None),
        ("RI", New_York, MON, (18, 0), Some("state_hours:RI")),
        ("RI", New_York, SAT, (9, 59), Some("state_hours:RI")),
        ("RI", New_York, SAT, (16, 0), None),
        ("RI", New_York, SUN, (12, 0), Some("state_hours:RI")),
        ("UT", Denver, SUN, (12, 0), Some("state_hours:UT")),
        ("UT", Denver, SAT, (20, 0), None),
        ("PA", New_York, SAT, (11, 59), None),
        ("PA", New_York, SAT, (12, 0), Some("state_hours:PA")),
        ("PA", New_York, SUN, (10, 0), Some("state_hours:PA")),
        ("PA", New_York, MON, (20, 30), None),
        // A state without rules of its own: only the federal floor, which
        // is the calling window's business, not this module's.
        ("GA", New_York, SUN, (22, 0), None),
    ];
    for &(code, tz, (y, m, d), (h, mi), expected) in cases {
        let at = local(tz, y, m, d, h, mi);
        let got = window_for(code, tz)
            .check(at)
            .err()
            .map(|v| v.rule_id.to_string());
        assert_eq!(
            got.as_deref(),
            expected,
            "{code} {y}-{m}-{d} {h:02}:{mi:02}"
        );
    }
}

#[test]
fn next_allowed_moves_to_the_next_opening_and_never_earlier() {
    // (state, zone, from (day, hour, minute), expected), September 2026.
    type Dhm = (u32, u32, u32);
    let cases: &[(&str, Tz, Dhm, Dhm)] = &[
        // Florida after 20:00 Monday: 08:00 Tuesday.
        ("FL", New_York, (14, 20, 0), (15, 8, 0)),
        // Kentucky at 08:30: 10:00 the same day.
        ("KY", New_York, (14, 8, 30), (14, 10, 0)),
        // Alabama on Saturday evening: Monday 08:00 (Sunday closed).
        ("AL", Chicago, (19, 20, 30), (21, 8, 0)),
        // Pennsylvania Saturday afternoon: Monday 08:00.
        ("PA", New_York, (19, 12, 0), (21, 8, 0)),
        // Rhode Island Friday 18:00: Saturday 10:00.
        ("RI", New_York, (18, 18, 0), (19, 10, 0)),
        // Already allowed: unchanged.
        ("FL", New_York, (16, 9, 17), (16, 9, 17)),
    ];
    for &(code, tz, (d, h, mi), (ed, eh, emi)) in cases {
        let from = local(tz, 2026, 9, d, h, mi);
        let w = window_for(code, tz);
        let got = w.next_allowed(from, far(from));
        assert_eq!(got, Some(local(tz, 2026, 9, ed, eh, emi)), "{code}");
        assert!(got.unwrap() >= from);
        assert_eq!(w.check(got.unwrap()), Ok(()));
    }
    // Nothing before the horizon.
    let from = local(Chicago, 2026, 9, 19, 20, 30);
    assert_eq!(
        window_for("AL", Chicago).next_allowed(from, from + TimeDelta::hours(30)),
        None
    );
}

#[test]
fn dst_transitions_in_new_york_and_chicago() {
    // Spring forward: Sunday 8 March 2026 (02:00 -> 03:00). Fall back:
    // Sunday 1 November 2026 (02:00 -> 01:00).
    let fl = window_for("FL", New_York);
    // 08:00 EDT is 12:00 UTC on the spring day, 13:00 UTC the day before.
    assert_eq!(
        fl.next_allowed(utc(2026, 3, 8, 6, 0), utc(2026, 3, 9, 0, 0)),
        Some(utc(2026, 3, 8, 12, 0))
    );
    assert_eq!(
        fl.check(utc(2026, 3, 7, 12, 30))
            .map_err(|v| v.rule_id.to_string()),
        Err("state_hours:FL".into())
    );
    assert_eq!(fl.check(utc(2026, 3, 8, 12, 30)), Ok(()));
    // 20:00 EDT (00:00 UTC) closes; next is 08:00 EDT Monday.
    assert!(fl.check(utc(2026, 3, 8, 23, 59)).is_ok());
    assert!(fl.check(utc(2026, 3, 9, 0, 0)).is_err());
    // Fall back: 08:00 EST is 13:00 UTC; 12:30 UTC is 07:30 EST.
    assert!(fl.check(utc(2026, 11, 1, 12, 30)).is_err());
    assert_eq!(
        fl.next_allowed(utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 0, 0)),
        Some(utc(2026, 11, 1, 13, 0))
    );
    // Chicago: Alabama is closed on both Sundays; Monday 08:00 CDT is 13:00
    // UTC in March, 08:00 CST is 14:00 UTC in November.
    let al = window_for("AL", Chicago);
    assert_eq!(
        al.next_allowed(utc(2026, 3, 8, 7, 0), utc(2026, 3, 20, 0, 0)),
        Some(utc(2026, 3, 9, 13, 0))
    );
    assert_eq!(
        al.next_allowed(utc(2026, 11, 1, 6, 30), utc(2026, 11, 20, 0, 0)),
        Some(utc(2026, 11, 2, 14, 0))
    );
    // Kentucky's 10:00 in Chicago on the fall-back Sunday is 16:00 UTC.
    let ky = window_for("KY", Chicago);
    assert_eq!(
        ky.next_allowed(utc(2026, 11, 1, 7, 0), utc(2026, 11, 2, 0, 0)),
        Some(utc(2026, 11, 1, 16, 0))
    );
}

#[test]
fn place_keeps_allowed_calls_and_names_the_rule_that_moved_one() {
    let campaign = CampaignWindow::daily(
        Days::EVERY_DAY,
        NaiveTime::from_hms_opt(9, 0, 0).unwrap(),
        NaiveTime::from_hms_opt(20, 30, 0).unwrap(),
    )
    .unwrap()
    .in_zones(vec![Chicago])
    .unwrap();
    let lead = Jurisdictions::single(state("AL"), JurisdictionSource::AreaCode);
    let set = RuleSet::for_lead(&lead, &TenantRules::none());
    let rules = set.in_zones(vec![Chicago]).unwrap();
    let caps = set.caps(&[]);
    let keep = local(Chicago, 2026, 9, 16, 10, 0);
    assert_eq!(
        place(&campaign, &rules, &caps, keep, far(keep)),
        RulePlacement::Allowed { at: keep }
    );
    // Saturday 20:10: the campaign allows it, Alabama does not; Sunday is
    // closed; Monday opens at 08:00 for Alabama but 09:00 for the campaign.
    let planned = local(Chicago, 2026, 9, 19, 20, 10);
    match place(&campaign, &rules, &caps, planned, far(planned)) {
        RulePlacement::Moved { at, because } => {
            assert_eq!(at, local(Chicago, 2026, 9, 21, 9, 0));
            assert_eq!(because.unwrap().rule_id.as_str(), "state_hours:AL");
        }
        other => panic!("{other:?}"),
    }
    // Only the campaign refuses: moved with no rule as the reason.
    let early = local(Chicago, 2026, 9, 16, 8, 30);
    assert_eq!(
        place(&campaign, &rules, &caps, early, far(early)),
        RulePlacement::Moved {
            at: local(Chicago, 2026, 9, 16, 9, 0),
            because: None
        }
    );
}

#[test]
fn all_of_intersects_windows_and_rules() {
    let campaign = CampaignWindow::daily(
        Days::WEEKDAYS,
        NaiveTime::from_hms_opt(19, 0, 0).unwrap(),
        NaiveTime::from_hms_opt(21, 0, 0).unwrap(),
    )
    .unwrap()
    .in_zones(vec![New_York])
    .unwrap();
    let fl = window_for("FL", New_York);
    let parts: [&dyn Availability; 2] = [&campaign, &fl];
    let both = AllOf(&parts);
    let from = local(New_York, 2026, 9, 14, 20, 0);
    // Monday 20:00 is after Florida's close: Tuesday 19:00.
    assert_eq!(
        both.next_allowed(from, far(from)),
        Some(local(New_York, 2026, 9, 15, 19, 0))
    );
    assert!(!both.is_allowed(local(New_York, 2026, 9, 15, 20, 0)));
    assert!(both.is_allowed(local(New_York, 2026, 9, 15, 19, 59)));
}

//! Holidays: the computed calendar against hand-made tables (a decade of
//! dates written out here, not computed), observance rules, and holidays
//! refusing calls through a rule window.

use super::*;

/// Every date `state` blocks in `year` for the holiday named `name`.
fn dates_of(code: &str, name: &str, year: i32) -> Vec<NaiveDate> {
    let id = format!("state_holiday:{code}:{name}");
    holidays_in_year(state(code), year)
        .into_iter()
        .filter(|h| h.rule_id.as_str() == id)
        .map(|h| h.date)
        .collect()
}

fn parse_dates(list: &[&str]) -> Vec<NaiveDate> {
    list.iter()
        .map(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap())
        .collect()
}

/// (state, holiday, [dates blocked in 2025, 2026, ..., 2034]).
#[rustfmt::skip]
const DECADE: &[(&str, &str, [&[&str]; 10])] = &[
    ("LA", "mardi_gras", [
        &["2025-03-04"], &["2026-02-17"], &["2027-02-09"], &["2028-02-29"], &["2029-02-13"],
        &["2030-03-05"], &["2031-02-25"], &["2032-02-10"], &["2033-03-01"], &["2034-02-21"],
    ]),
    ("LA", "good_friday", [
        &["2025-04-18"], &["2026-04-03"], &["2027-03-26"], &["2028-04-14"], &["2029-03-30"],
        &["2030-04-19"], &["2031-04-11"], &["2032-03-26"], &["2033-04-15"], &["2034-04-07"],
    ]),
    ("AL", "mardi_gras", [
        &["2025-03-04"], &["2026-02-17"], &["2027-02-09"], &["2028-02-29"], &["2029-02-13"],
        &["2030-03-05"], &["2031-02-25"], &["2032-02-10"], &["2033-03-01"], &["2034-02-21"],
    ]),
    ("AL", "confederate_memorial_day", [
        &["2025-04-28"], &["2026-04-27"], &["2027-04-26"], &["2028-04-24"], &["2029-04-23"],
        &["2030-04-22"], &["2031-04-28"], &["2032-04-26"], &["2033-04-25"], &["2034-04-24"],
    ]),
    ("AL", "jefferson_davis_birthday", [
        &["2025-06-02"], &["2026-06-01"], &["2027-06-07"], &["2028-06-05"], &["2029-06-04"],
        &["2030-06-03"], &["2031-06-02"], &["2032-06-07"], &["2033-06-06"], &["2034-06-05"],
    ]),
    // Saturday -> also the Friday before, Sunday -> also the Monday after.
    ("AL", "independence_day", [
        &["2025-07-04"], &["2026-07-03", "2026-07-04"], &["2027-07-04", "2027-07-05"],
        &["2028-07-04"], &["2029-07-04"], &["2030-07-04"], &["2031-07-04"],
        &["2032-07-04", "2032-07-05"], &["2033-07-04"], &["2034-07-04"],
    ]),
    ("AL", "christmas_day", [
        &["2025-12-25"], &["2026-12-25"], &["2027-12-24", "2027-12-25"], &["2028-12-25"],
        &["2029-12-25"], &["2030-12-25"], &["2031-12-25"], &["2032-12-24", "2032-12-25"],
        &["2033-12-25", "2033-12-26"], &["2034-12-25"],
    ]),
    ("RI", "victory_day", [
        &["2025-08-11"], &["2026-08-10"], &["2027-08-09"], &["2028-08-14"], &["2029-08-13"],
        &["2030-08-12"], &["2031-08-11"], &["2032-08-09"], &["2033-08-08"], &["2034-08-14"],
    ]),
    // State rule (weekend -> Monday) and federal rule (Saturday -> Friday) together.
    ("RI", "independence_day", [
        &["2025-07-04"], &["2026-07-03", "2026-07-04", "2026-07-06"], &["2027-07-04", "2027-07-05"],
        &["2028-07-04"], &["2029-07-04"], &["2030-07-04"], &["2031-07-04"],
        &["2032-07-04", "2032-07-05"], &["2033-07-04"], &["2034-07-04"],
    ]),
    ("RI", "christmas_day", [
        &["2025-12-25"], &["2026-12-25"], &["2027-12-24", "2027-12-25", "2027-12-27"],
        &["2028-12-25"], &["2029-12-25"], &["2030-12-25"], &["2031-12-25"],
        &["2032-12-24", "2032-12-25", "2032-12-27"], &["2033-12-25", "2033-12-26"], &["2034-12-25"],
    ]),
    // Even years only.
    ("RI", "election_day", [
        &[], &["2026-11-03"], &[], &["2028-11-07"], &[],
        &["2030-11-05"], &[], &["2032-11-02"], &[], &["2034-11-07"],
    ]),
    // Tue-Fri -> the Monday before; Sat/Sun -> the Monday after.
    ("UT", "juneteenth", [
        &["2025-06-16", "2025-06-19"], &["2026-06-15", "2026-06-19"], &["2027-06-19", "2027-06-21"],
        &["2028-06-19"], &["2029-06-18", "2029-06-19"], &["2030-06-17", "2030-06-19"],
        &["2031-06-16", "2031-06-19"], &["2032-06-19", "2032-06-21"], &["2033-06-19", "2033-06-20"],
        &["2034-06-19"],
    ]),
    ("UT", "pioneer_day", [
        &["2025-07-24"], &["2026-07-24"], &["2027-07-23", "2027-07-24"], &["2028-07-24"],
        &["2029-07-24"], &["2030-07-24"], &["2031-07-24"], &["2032-07-23", "2032-07-24"],
        &["2033-07-24", "2033-07-25"], &["2034-07-24"],
    ]),
    ("MS", "confederate_memorial_day", [
        &["2025-04-28"], &["2026-04-27"], &["2027-04-26"], &["2028-04-24"], &["2029-04-30"],
        &["2030-04-29"], &["2031-04-28"], &["2032-04-26"], &["2033-04-25"], &["2034-04-24"],
    ]),
];

#[test]
fn a_decade_of_holiday_dates_matches_the_hand_made_table() {
    for (code, name, years) in DECADE {
        for (i, expected) in years.iter().enumerate() {
            let year = 2025 + i as i32;
            assert_eq!(
                dates_of(code, name, year),
                parse_dates(expected),
                "{code} {name} {year}"
            );
        }
    }
}

#[test]
fn observed_days_cross_the_year_boundary() {
    // New Year's Day 2028 is a Saturday: federally (RI) and in Utah it is
    // also kept on Friday 31 December 2027; in RI also Monday 3 January.
    assert_eq!(
        dates_of("RI", "new_years_day", 2027),
        parse_dates(&["2027-01-01", "2027-12-31"])
    );
    assert_eq!(
        dates_of("RI", "new_years_day", 2028),
        parse_dates(&["2028-01-01", "2028-01-03"])
    );
    assert_eq!(
        dates_of("UT", "new_years_day", 2027),
        parse_dates(&["2027-01-01", "2027-12-31"])
    );
    // Mississippi: only a Sunday date moves (2034-01-01 is a Sunday).
    assert_eq!(
        dates_of("MS", "new_years_day", 2028),
        parse_dates(&["2028-01-01"])
    );
    assert_eq!(
        dates_of("MS", "new_years_day", 2034),
        parse_dates(&["2034-01-01", "2034-01-02"])
    );
}

#[test]
fn rules_not_yet_in_force_have_no_dates() {
    // Utah's Good Friday applies from 6 May 2026: none in 2026 (3 April), one in 2027.
    assert_eq!(dates_of("UT", "good_friday", 2026), vec![]);
    assert_eq!(
        dates_of("UT", "good_friday", 2027),
        parse_dates(&["2027-03-26"])
    );
    // Pennsylvania's holiday bar started 3 December 2019.
    assert_eq!(dates_of("PA", "thanksgiving_day", 2019), vec![]);
    assert_eq!(
        dates_of("PA", "christmas_day", 2019),
        parse_dates(&["2019-12-25"])
    );
}

/// One holiday per state, refused through a rule window at local noon on a
/// weekday that the state's hours would allow.
#[test]
fn holidays_refuse_calls_all_day_and_reopen_after() {
    let cases: &[(&str, Tz, Ymd, &str)] = &[
        ("LA", Chicago, (2026, 2, 17), "state_holiday:LA:mardi_gras"),
        ("LA", Chicago, (2026, 9, 7), "state_holiday:LA:labor_day"),
        (
            "AL",
            Chicago,
            (2026, 4, 27),
            "state_holiday:AL:confederate_memorial_day",
        ),
        (
            "AL",
            Chicago,
            (2026, 1, 19),
            "state_holiday:AL:mlk_robert_e_lee_day",
        ),
        (
            "MS",
            Chicago,
            (2026, 5, 25),
            "state_holiday:MS:memorial_day_jefferson_davis",
        ),
        (
            "RI",
            New_York,
            (2026, 8, 10),
            "state_holiday:RI:victory_day",
        ),
        (
            "RI",
            New_York,
            (2026, 7, 6),
            "state_holiday:RI:independence_day",
        ),
        ("UT", Denver, (2026, 7, 24), "state_holiday:UT:pioneer_day"),
        ("PA", New_York, (2026, 6, 15), "state_holiday:PA:flag_day"),
        (
            "PA",
            New_York,
            (2026, 11, 3),
            "state_holiday:PA:election_day",
        ),
    ];
    for &(code, tz, (y, m, d), id) in cases {
        let w = window_for(code, tz);
        let noon = local(tz, y, m, d, 12, 0);
        assert_eq!(
            w.check(noon).unwrap_err().rule_id.as_str(),
            id,
            "{code} {y}-{m}-{d}"
        );
        let next = w.next_allowed(local(tz, y, m, d, 0, 0), far(noon)).unwrap();
        assert!(next > local(tz, y, m, d, 23, 59), "{code}: {next}");
        assert_eq!(w.check(next), Ok(()));
    }
    // Mardi Gras is a Louisiana holiday, not a Florida one.
    assert_eq!(
        window_for("FL", New_York).check(local(New_York, 2026, 2, 17, 12, 0)),
        Ok(())
    );
}

#[test]
fn a_run_of_closed_days_is_skipped_whole() {
    // Louisiana, Christmas 2027 falls on Saturday: Friday 24 (observed),
    // Saturday 25 (Christmas), Sunday 26 (no Sunday calls): Monday 27 at 08:00.
    let w = window_for("LA", Chicago);
    let from = local(Chicago, 2027, 12, 24, 9, 0);
    assert_eq!(
        w.next_allowed(from, far(from)),
        Some(local(Chicago, 2027, 12, 27, 8, 0))
    );
    // Rhode Island, same weekend: Monday 27 is observed too; Tuesday 09:00.
    let w = window_for("RI", New_York);
    let from = local(New_York, 2027, 12, 24, 9, 0);
    assert_eq!(
        w.next_allowed(from, far(from)),
        Some(local(New_York, 2027, 12, 28, 9, 0))
    );
}

#[test]
fn easter_matches_known_dates() {
    for (y, m, d) in [
        (2000, 4, 23),
        (2019, 4, 21),
        (2024, 3, 31),
        (2025, 4, 20),
        (2038, 4, 25),
        (2285, 3, 22),
    ] {
        assert_eq!(
            super::super::holidays::easter(y),
            Some(date(y, m, d)),
            "{y}"
        );
    }
    assert_eq!(super::super::holidays::easter(1500), None);
}

use super::*;
use crate::timezone::resolve_local;
use chrono::{NaiveDate, TimeZone, Timelike};
use chrono_tz::America::{Chicago, New_York, Phoenix};
use proptest::prelude::*;
use CallbackRule::*;

fn lt(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(y, mo, d)
        .unwrap()
        .and_hms_opt(h, mi, 0)
        .unwrap()
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    lt(y, mo, d, h, mi).and_utc()
}

fn rule_of(r: &CallbackTime) -> Result<CallbackRule, FallbackReason> {
    match &r.reading {
        Reading::Parsed { rule, .. } => Ok(*rule),
        Reading::Fallback { reason } => Err(*reason),
    }
}

fn notes_of(r: &CallbackTime) -> Vec<ReadNote> {
    match &r.reading {
        Reading::Parsed { notes, .. } => notes.clone(),
        Reading::Fallback { .. } => vec![],
    }
}

/// Wednesday 2026-06-10 10:00 in Chicago (CDT, 15:00 UTC).
fn wednesday_10am() -> DateTime<Utc> {
    resolve_local(Chicago, lt(2026, 6, 10, 10, 0))
}

#[test]
fn reads_spoken_times_in_the_leads_zone() {
    let now = wednesday_10am();
    let cases: &[(&str, NaiveDateTime, Result<CallbackRule, FallbackReason>)] = &[
        ("3pm", lt(2026, 6, 10, 15, 0), Ok(ClockTime)),
        ("3 P.M.", lt(2026, 6, 10, 15, 0), Ok(ClockTime)),
        ("at 3", lt(2026, 6, 10, 15, 0), Ok(ClockTime)),
        ("15:30", lt(2026, 6, 10, 15, 30), Ok(ClockTime)),
        ("tomorrow at 10", lt(2026, 6, 11, 10, 0), Ok(ClockTime)),
        (
            "can you call me back tomorrow at 10 please",
            lt(2026, 6, 11, 10, 0),
            Ok(ClockTime),
        ),
        ("Monday morning", lt(2026, 6, 15, 9, 0), Ok(DayPart)),
        ("tomorrow afternoon", lt(2026, 6, 11, 14, 0), Ok(DayPart)),
        ("tomorrow evening", lt(2026, 6, 11, 18, 0), Ok(DayPart)),
        ("in two hours", lt(2026, 6, 10, 12, 0), Ok(Relative)),
        ("in 30 minutes", lt(2026, 6, 10, 10, 30), Ok(Relative)),
        ("In Thirty Minutes!", lt(2026, 6, 10, 10, 30), Ok(Relative)),
        (
            "in forty-five minutes",
            lt(2026, 6, 10, 10, 45),
            Ok(Relative),
        ),
        (
            "in an hour and a half",
            lt(2026, 6, 10, 11, 30),
            Ok(Relative),
        ),
        ("in half an hour", lt(2026, 6, 10, 10, 30), Ok(Relative)),
        ("in a couple of hours", lt(2026, 6, 10, 12, 0), Ok(Relative)),
        ("two hours from now", lt(2026, 6, 10, 12, 0), Ok(Relative)),
        ("in 1.5 hours", lt(2026, 6, 10, 11, 30), Ok(Relative)),
        ("in two days", lt(2026, 6, 12, 10, 0), Ok(Relative)),
        ("in two days at 3pm", lt(2026, 6, 12, 15, 0), Ok(ClockTime)),
        ("at half past four", lt(2026, 6, 10, 16, 30), Ok(ClockTime)),
        ("quarter to five", lt(2026, 6, 10, 16, 45), Ok(ClockTime)),
        ("a quarter past 11", lt(2026, 6, 10, 11, 15), Ok(ClockTime)),
        ("ten to six", lt(2026, 6, 10, 17, 50), Ok(ClockTime)),
        ("noon", lt(2026, 6, 10, 12, 0), Ok(ClockTime)),
        ("12 noon tomorrow", lt(2026, 6, 11, 12, 0), Ok(ClockTime)),
        ("tonight", lt(2026, 6, 10, 19, 0), Ok(DayPart)),
        (
            "call me at 8 tonight",
            lt(2026, 6, 10, 20, 0),
            Ok(ClockTime),
        ),
        ("next week", lt(2026, 6, 15, 9, 0), Ok(DayOnly)),
        ("tuesday next week", lt(2026, 6, 16, 9, 0), Ok(DayOnly)),
        (
            "next week on thursday at 2",
            lt(2026, 6, 18, 14, 0),
            Ok(ClockTime),
        ),
        ("tomorrow", lt(2026, 6, 11, 9, 0), Ok(DayOnly)),
        ("Friday", lt(2026, 6, 12, 9, 0), Ok(DayOnly)),
        ("Friday at 11:15am", lt(2026, 6, 12, 11, 15), Ok(ClockTime)),
        ("next monday at 2", lt(2026, 6, 15, 14, 0), Ok(ClockTime)),
        ("wednesday at 4", lt(2026, 6, 10, 16, 0), Ok(ClockTime)),
        ("next wednesday at 4", lt(2026, 6, 17, 16, 0), Ok(ClockTime)),
        (
            "the day after tomorrow at noon",
            lt(2026, 6, 12, 12, 0),
            Ok(ClockTime),
        ),
        (
            "Tomorrow @ 4:30 p.m.",
            lt(2026, 6, 11, 16, 30),
            Ok(ClockTime),
        ),
        ("at three o'clock", lt(2026, 6, 10, 15, 0), Ok(ClockTime)),
        ("at ten thirty", lt(2026, 6, 10, 10, 30), Ok(ClockTime)),
        (
            "around 4 in the afternoon",
            lt(2026, 6, 10, 16, 0),
            Ok(ClockTime),
        ),
        ("tmrw 9 am", lt(2026, 6, 11, 9, 0), Ok(ClockTime)),
        ("end of day", lt(2026, 6, 10, 17, 0), Ok(ClockTime)),
        ("midnight", lt(2026, 6, 11, 0, 0), Ok(ClockTime)),
        ("this afternoon", lt(2026, 6, 10, 14, 0), Ok(DayPart)),
        ("07:30 tomorrow", lt(2026, 6, 11, 7, 30), Ok(ClockTime)),
        ("Thursday 3", lt(2026, 6, 11, 15, 0), Ok(ClockTime)),
        ("sat morning", lt(2026, 6, 13, 9, 0), Ok(DayPart)),
        (
            "I sat down, call me at 4",
            lt(2026, 6, 10, 16, 0),
            Ok(ClockTime),
        ),
        ("after lunch", lt(2026, 6, 10, 14, 0), Ok(DayPart)),
        ("tonight at 10", lt(2026, 6, 10, 22, 0), Ok(ClockTime)),
        ("from one to three", lt(2026, 6, 10, 13, 0), Ok(ClockTime)),
        (
            "i said 3 times no",
            lt(2026, 6, 10, 12, 0),
            Err(FallbackReason::NoTimeFound),
        ),
        // Past times today, no day named: the next day (or the evening).
        ("at 9am", lt(2026, 6, 11, 9, 0), Ok(ClockTime)),
        ("at eight", lt(2026, 6, 10, 20, 0), Ok(ClockTime)),
        ("at 9:30", lt(2026, 6, 11, 9, 30), Ok(ClockTime)),
        ("this morning", lt(2026, 6, 10, 10, 30), Ok(DayPart)),
        ("today", lt(2026, 6, 10, 12, 0), Ok(LaterToday)),
        // Fallbacks: two hours from now, with the reason.
        ("", lt(2026, 6, 10, 12, 0), Err(FallbackReason::Empty)),
        (
            "later",
            lt(2026, 6, 10, 12, 0),
            Err(FallbackReason::NoTimeFound),
        ),
        (
            "whenever, really",
            lt(2026, 6, 10, 12, 0),
            Err(FallbackReason::NoTimeFound),
        ),
        (
            "call me at 312 555 0100",
            lt(2026, 6, 10, 12, 0),
            Err(FallbackReason::NoTimeFound),
        ),
        (
            "in a few hours",
            lt(2026, 6, 10, 12, 0),
            Err(FallbackReason::NoTimeFound),
        ),
        (
            "today at 9am",
            lt(2026, 6, 10, 12, 0),
            Err(FallbackReason::InPast),
        ),
        (
            "in 400 days",
            lt(2026, 6, 10, 12, 0),
            Err(FallbackReason::TooFarAhead),
        ),
    ];
    for (phrase, local, rule) in cases {
        let r = read_callback_time(phrase, now, Chicago);
        assert_eq!(r.requested_local, *local, "{phrase:?}: {:?}", r.reading);
        assert_eq!(r.at, resolve_local(Chicago, *local), "{phrase:?}");
        assert_eq!(rule_of(&r), *rule, "{phrase:?}");
        assert_eq!(r.zone, Chicago);
    }
}

#[test]
fn notes_explain_the_choices() {
    let now = wednesday_10am();
    let cases: &[(&str, &[ReadNote])] = &[
        ("at 3", &[ReadNote::AssumedPm]),
        ("tomorrow at 10", &[ReadNote::AssumedAm]),
        ("at eight", &[ReadNote::ReadAsEvening]),
        ("at 9am", &[ReadNote::MovedToNextDay]),
        ("this morning", &[ReadNote::LaterInDayPart]),
        ("3pm", &[]),
    ];
    for (phrase, notes) in cases {
        assert_eq!(
            notes_of(&read_callback_time(phrase, now, Chicago)),
            notes.to_vec(),
            "{phrase}"
        );
    }
    let r = read_callback_time("can you call me back tomorrow at 10 please", now, Chicago);
    match r.reading {
        Reading::Parsed { matched, .. } => assert_eq!(matched, "tomorrow at 10"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn three_pm_in_chicago_is_not_three_pm_utc() {
    let now = wednesday_10am();
    let chicago = read_callback_time("3pm", now, Chicago);
    assert_eq!(chicago.at, utc(2026, 6, 10, 20, 0));
    assert_ne!(chicago.at.hour(), 15);
    let new_york = read_callback_time("3pm", now, New_York);
    assert_eq!(new_york.at, utc(2026, 6, 10, 19, 0));
    let phoenix = read_callback_time("3pm", now, Phoenix);
    assert_eq!(phoenix.at, utc(2026, 6, 10, 22, 0));
}

#[test]
fn callbacks_in_the_spring_forward_week() {
    // Saturday 2026-03-07 10:00 CST; clocks jump 02:00 -> 03:00 on Sunday 03-08.
    let sat = resolve_local(Chicago, lt(2026, 3, 7, 10, 0));
    assert_eq!(sat, utc(2026, 3, 7, 16, 0));
    let cases: &[(&str, DateTime<Utc>, NaiveDateTime, &[ReadNote])] = &[
        ("3pm", utc(2026, 3, 7, 21, 0), lt(2026, 3, 7, 15, 0), &[]),
        (
            "tomorrow at 3pm",
            utc(2026, 3, 8, 20, 0),
            lt(2026, 3, 8, 15, 0),
            &[],
        ),
        (
            "tomorrow at 2:30am",
            utc(2026, 3, 8, 8, 0),
            lt(2026, 3, 8, 2, 30),
            &[ReadNote::DstGapMovedForward],
        ),
        (
            "Monday at 9am",
            utc(2026, 3, 9, 14, 0),
            lt(2026, 3, 9, 9, 0),
            &[],
        ),
        (
            "in two days",
            utc(2026, 3, 9, 15, 0),
            lt(2026, 3, 9, 10, 0),
            &[],
        ),
        (
            "in 24 hours",
            utc(2026, 3, 8, 16, 0),
            lt(2026, 3, 8, 11, 0),
            &[],
        ),
    ];
    for (phrase, at, local, notes) in cases {
        let r = read_callback_time(phrase, sat, Chicago);
        assert_eq!((r.at, r.requested_local), (*at, *local), "{phrase}");
        assert_eq!(notes_of(&r), notes.to_vec(), "{phrase}");
    }
    // Sunday 01:30 CST: two hours later is 04:30 CDT (the clock jumped).
    let r = read_callback_time("in two hours", utc(2026, 3, 8, 7, 30), Chicago);
    assert_eq!(
        (r.at, r.requested_local),
        (utc(2026, 3, 8, 9, 30), lt(2026, 3, 8, 4, 30))
    );
    // Phoenix keeps MST: the same phrase on the same Saturday.
    let r = read_callback_time("tomorrow at 3pm", sat, Phoenix);
    assert_eq!(r.at, utc(2026, 3, 8, 22, 0));
    let r = read_callback_time("tomorrow at 2:30am", sat, Phoenix);
    assert_eq!(r.at, utc(2026, 3, 8, 9, 30));
    assert!(notes_of(&r).is_empty());
}

#[test]
fn callbacks_in_the_fall_back_week() {
    // Saturday 2026-10-31 10:00 CDT; clocks go 02:00 -> 01:00 on Sunday 11-01.
    let sat = resolve_local(Chicago, lt(2026, 10, 31, 10, 0));
    assert_eq!(sat, utc(2026, 10, 31, 15, 0));
    let cases: &[(&str, DateTime<Utc>, &[ReadNote])] = &[
        ("3pm", utc(2026, 10, 31, 20, 0), &[]),
        (
            "tomorrow at 1:30am",
            utc(2026, 11, 1, 6, 30),
            &[ReadNote::DstOverlapEarlier],
        ),
        (
            "tomorrow at 10",
            utc(2026, 11, 1, 16, 0),
            &[ReadNote::AssumedAm],
        ),
        ("Monday at 3pm", utc(2026, 11, 2, 21, 0), &[]),
        ("in two days", utc(2026, 11, 2, 16, 0), &[]),
        ("in 24 hours", utc(2026, 11, 1, 15, 0), &[]),
        ("Monday morning", utc(2026, 11, 2, 15, 0), &[]),
    ];
    for (phrase, at, notes) in cases {
        let r = read_callback_time(phrase, sat, Chicago);
        assert_eq!(r.at, *at, "{phrase}");
        assert_eq!(notes_of(&r), notes.to_vec(), "{phrase}");
    }
}

#[test]
fn fallback_is_two_hours_and_serialises() {
    let now = wednesday_10am();
    let r = read_callback_time("call me whenever", now, Chicago);
    assert_eq!(r.at, now + TimeDelta::hours(2));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["reading"]["kind"], "fallback");
    assert_eq!(json["reading"]["reason"], "no_time_found");
    assert_eq!(json["zone"], "America/Chicago");
    let back: CallbackTime = serde_json::from_value(json).unwrap();
    assert_eq!(back, r);
    let parsed = serde_json::to_value(read_callback_time("tomorrow at 10", now, Chicago)).unwrap();
    assert_eq!(parsed["reading"]["rule"], "clock_time");
    assert_eq!(parsed["reading"]["notes"][0], "assumed_am");
    assert_eq!(parsed["requested_local"], "2026-06-11T10:00:00");
}

#[test]
fn defaults_can_be_changed() {
    let defaults = CallbackDefaults {
        morning: NaiveTime::from_hms_opt(10, 30, 0).unwrap(),
        fallback_delay: TimeDelta::hours(3),
        ..CallbackDefaults::default()
    };
    let now = wednesday_10am();
    let r = read_callback_time_with("monday morning", now, Chicago, &defaults);
    assert_eq!(r.requested_local, lt(2026, 6, 15, 10, 30));
    let r = read_callback_time_with("???", now, Chicago, &defaults);
    assert_eq!(r.at, now + TimeDelta::hours(3));
}

fn zones() -> [Tz; 5] {
    [
        Chicago,
        Phoenix,
        New_York,
        chrono_tz::America::Los_Angeles,
        chrono_tz::Pacific::Honolulu,
    ]
}

fn arb_now() -> impl Strategy<Value = DateTime<Utc>> {
    (0i64..(3 * 365 * 24 * 60))
        .prop_map(|m| Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap() + TimeDelta::minutes(m))
}

proptest! {
    /// Whatever is said, the answer is never before now and never beyond
    /// the limit, and reading never panics.
    #[test]
    fn any_phrase_gives_a_time_ahead(phrase in "\\PC{0,60}", now in arb_now(), z in 0usize..5) {
        let r = read_callback_time(&phrase, now, zones()[z]);
        prop_assert!(r.at >= now);
        prop_assert!(r.at - now <= CallbackDefaults::default().max_ahead);
    }

    /// Phrases built from the grammar's words never panic either.
    #[test]
    fn word_soup_is_safe(words in prop::collection::vec(prop::sample::select(vec![
        "in", "at", "half", "past", "quarter", "to", "a", "an", "and", "hours", "minutes", "days",
        "tomorrow", "next", "week", "monday", "morning", "tonight", "noon", "midnight", "pm", "am",
        "3", "12", "0", "99", "15:30", "7.45", "twenty", "five", "oclock", "this", "from", "now",
    ]), 0..8), now in arb_now(), z in 0usize..5) {
        let r = read_callback_time(&words.join(" "), now, zones()[z]);
        prop_assert!(r.at >= now);
    }

    /// "H pm" is H+12 o'clock in the lead's own zone, within the next day.
    #[test]
    fn pm_hours_are_local_and_next(h in 1u32..12, now in arb_now(), z in 0usize..5) {
        let tz = zones()[z];
        let r = read_callback_time(&format!("call me at {h} pm"), now, tz);
        prop_assert!(!r.reading.is_fallback());
        prop_assert_eq!(r.requested_local.hour(), h + 12);
        prop_assert_eq!(r.at.with_timezone(&tz).hour(), h + 12);
        prop_assert!(r.at > now);
        prop_assert!(r.at - now <= TimeDelta::hours(25));
    }

    /// "in N minutes" is exactly N minutes of elapsed time, DST or not.
    #[test]
    fn relative_minutes_are_elapsed_time(n in 0i64..5000, now in arb_now(), z in 0usize..5) {
        let r = read_callback_time(&format!("in {n} minutes"), now, zones()[z]);
        prop_assert_eq!(r.at, now + TimeDelta::minutes(n));
    }
}

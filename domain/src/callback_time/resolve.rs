//! Turns the expressions found in a phrase into a local date-time and an
//! instant, following the rules in the module header of `callback_time`.

use chrono::{
    DateTime, Datelike, Days, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta,
    TimeZone, Utc,
};
use chrono_tz::Tz;

use super::grammar::{Clock, DayPart, DaySpec, Meridiem, Offset, Spoken};
use super::{CallbackDefaults, CallbackRule, FallbackReason, ReadNote};
use crate::calling_window::FEDERAL_LATEST;
use crate::timezone::resolve_local;

pub(super) struct Resolved {
    pub at: DateTime<Utc>,
    pub local: NaiveDateTime,
    pub rule: CallbackRule,
    pub notes: Vec<ReadNote>,
}

pub(super) fn resolve(
    spoken: &Spoken,
    now: DateTime<Utc>,
    tz: Tz,
    defaults: &CallbackDefaults,
) -> Result<Resolved, FallbackReason> {
    if spoken.is_empty() {
        return Err(FallbackReason::NoTimeFound);
    }
    let resolved = match spoken.offset {
        Some(Offset::Minutes(minutes)) => elapsed(minutes, now, tz, defaults)?,
        Some(Offset::Days(days)) => calendar_days(spoken, days, now, tz, defaults)?,
        None => absolute(spoken, spoken.day, now, tz, defaults)?,
    };
    if resolved.at - now > defaults.max_ahead {
        return Err(FallbackReason::TooFarAhead);
    }
    Ok(resolved)
}

/// "in two hours": elapsed time, so a DST change in between is real time.
fn elapsed(
    minutes: f64,
    now: DateTime<Utc>,
    tz: Tz,
    defaults: &CallbackDefaults,
) -> Result<Resolved, FallbackReason> {
    if !minutes.is_finite() || minutes < 0.0 {
        return Err(FallbackReason::NoTimeFound);
    }
    if minutes > defaults.max_ahead.num_minutes() as f64 {
        return Err(FallbackReason::TooFarAhead);
    }
    let at = later(now, TimeDelta::seconds((minutes * 60.0).round() as i64))?;
    Ok(Resolved {
        at,
        local: at.with_timezone(&tz).naive_local(),
        rule: CallbackRule::Relative,
        notes: Vec::new(),
    })
}

/// "in two days": the same wall-clock time that many days on, or the
/// time named ("in two days at 3").
fn calendar_days(
    spoken: &Spoken,
    days: u32,
    now: DateTime<Utc>,
    tz: Tz,
    defaults: &CallbackDefaults,
) -> Result<Resolved, FallbackReason> {
    if i64::from(days) > defaults.max_ahead.num_days() {
        return Err(FallbackReason::TooFarAhead);
    }
    if spoken.clock.is_some() || spoken.part.is_some() {
        return absolute(spoken, Some(DaySpec::InDays(days)), now, tz, defaults);
    }
    let local = now
        .with_timezone(&tz)
        .naive_local()
        .checked_add_days(Days::new(u64::from(days)))
        .ok_or(FallbackReason::TooFarAhead)?;
    Ok(at_local(local, tz, CallbackRule::Relative, Vec::new()))
}

fn later(now: DateTime<Utc>, delta: TimeDelta) -> Result<DateTime<Utc>, FallbackReason> {
    now.checked_add_signed(delta)
        .ok_or(FallbackReason::TooFarAhead)
}

/// The time of day asked for, the evening alternative for a morning
/// reading of an ambiguous hour, and the rule.
struct TimeOfDay {
    time: NaiveTime,
    evening_alternative: Option<NaiveTime>,
    rule: CallbackRule,
    notes: Vec<ReadNote>,
}

fn time_of_day(spoken: &Spoken, defaults: &CallbackDefaults) -> Option<TimeOfDay> {
    let hm = |h: u32, m: u32| NaiveTime::from_hms_opt(h, m, 0);
    if let Some(Clock {
        hour,
        minute,
        meridiem,
        exact,
    }) = spoken.clock
    {
        let mut notes = Vec::new();
        let mut evening_alternative = None;
        let hour24 = match (meridiem, exact) {
            (Some(Meridiem::Am), _) => hour % 12,
            (Some(Meridiem::Pm), _) => hour % 12 + 12,
            (None, true) => hour,
            (None, false) => match (spoken.part, hour) {
                (_, 0) | (_, 13..) => hour,
                (_, 12) => 12,
                (Some(DayPart::Morning), h) => h,
                (Some(DayPart::Lunch), h) if h >= 11 => h,
                (Some(_), h) => h + 12,
                (None, h @ 1..=7) => {
                    notes.push(ReadNote::AssumedPm);
                    h + 12
                }
                (None, h) => {
                    notes.push(ReadNote::AssumedAm);
                    evening_alternative = hm(h + 12, minute);
                    h
                }
            },
        };
        return Some(TimeOfDay {
            time: hm(hour24, minute)?,
            evening_alternative,
            rule: CallbackRule::ClockTime,
            notes,
        });
    }
    let (time, rule) = match spoken.part {
        Some(part) => (part_start(part, defaults), CallbackRule::DayPart),
        None => (defaults.day_only, CallbackRule::DayOnly),
    };
    Some(TimeOfDay {
        time,
        evening_alternative: None,
        rule,
        notes: Vec::new(),
    })
}

fn part_start(part: DayPart, d: &CallbackDefaults) -> NaiveTime {
    match part {
        DayPart::Morning => d.morning,
        DayPart::Lunch => d.lunch,
        DayPart::Afternoon => d.afternoon,
        DayPart::Evening => d.evening,
        DayPart::Tonight => d.tonight,
    }
}

/// When a part of the day is over, as a wall-clock time.
fn part_end(part: DayPart) -> NaiveTime {
    let (h, m) = match part {
        DayPart::Morning => (12, 0),
        DayPart::Lunch => (13, 30),
        DayPart::Afternoon => (17, 0),
        DayPart::Evening | DayPart::Tonight => (21, 0),
    };
    NaiveTime::from_hms_opt(h, m, 0).unwrap_or(NaiveTime::MIN)
}

fn absolute(
    spoken: &Spoken,
    day: Option<DaySpec>,
    now: DateTime<Utc>,
    tz: Tz,
    defaults: &CallbackDefaults,
) -> Result<Resolved, FallbackReason> {
    let now_local = now.with_timezone(&tz).naive_local();
    let today = now_local.date();
    if day == Some(DaySpec::Today) && spoken.clock.is_none() && spoken.part.is_none() {
        // "today" alone: later today, by the two-hour rule.
        let at = later(now, defaults.fallback_delay)?;
        return Ok(Resolved {
            at,
            local: at.with_timezone(&tz).naive_local(),
            rule: CallbackRule::LaterToday,
            notes: Vec::new(),
        });
    }
    let TimeOfDay {
        time,
        evening_alternative,
        rule,
        mut notes,
    } = time_of_day(spoken, defaults).ok_or(FallbackReason::NoTimeFound)?;
    let add = |date: NaiveDate, n: u64| {
        date.checked_add_days(Days::new(n))
            .ok_or(FallbackReason::TooFarAhead)
    };
    let is_midnight = spoken.clock.is_some() && time == NaiveTime::MIN;
    let date = match day {
        None | Some(DaySpec::Today) if is_midnight => add(today, 1)?,
        None | Some(DaySpec::Today) => today,
        Some(DaySpec::Tomorrow) => add(today, 1)?,
        Some(DaySpec::InDays(n)) => add(today, u64::from(n))?,
        Some(DaySpec::Weekday { day, strict }) => {
            let ahead =
                (7 + day.num_days_from_monday() - today.weekday().num_days_from_monday()) % 7;
            let same_day_passed = resolve_local(tz, today.and_time(time)) <= now;
            let ahead = if ahead == 0 && (strict || same_day_passed) {
                7
            } else {
                ahead
            };
            add(today, u64::from(ahead))?
        }
        Some(DaySpec::NextWeek { day }) => {
            let to_monday = 7 - today.weekday().num_days_from_monday();
            let offset = day.map_or(0, |d| d.num_days_from_monday());
            add(today, u64::from(to_monday + offset))?
        }
    };
    let candidate = resolve_local(tz, date.and_time(time));
    if candidate > now {
        return Ok(at_local(date.and_time(time), tz, rule, notes));
    }
    // The time named has passed.
    let open_day = day.is_none();
    if spoken.clock.is_none() {
        if let Some(part) = spoken.part {
            if date == today && now_local.time() < part_end(part) {
                let at = later(now, defaults.later_in_part)?;
                notes.push(ReadNote::LaterInDayPart);
                return Ok(Resolved {
                    at,
                    local: at.with_timezone(&tz).naive_local(),
                    rule,
                    notes,
                });
            }
        }
    }
    if let Some(evening) = evening_alternative.filter(|t| *t <= FEDERAL_LATEST) {
        if date == today && resolve_local(tz, today.and_time(evening)) > now {
            notes.retain(|n| *n != ReadNote::AssumedAm);
            notes.push(ReadNote::ReadAsEvening);
            return Ok(at_local(today.and_time(evening), tz, rule, notes));
        }
    }
    if open_day {
        notes.push(ReadNote::MovedToNextDay);
        let next = add(date, 1)?;
        return Ok(at_local(next.and_time(time), tz, rule, notes));
    }
    Err(FallbackReason::InPast)
}

/// The instant of a local time, noting DST gaps and overlaps.
fn at_local(
    local: NaiveDateTime,
    tz: Tz,
    rule: CallbackRule,
    mut notes: Vec<ReadNote>,
) -> Resolved {
    match tz.from_local_datetime(&local) {
        LocalResult::None => notes.push(ReadNote::DstGapMovedForward),
        LocalResult::Ambiguous(..) => notes.push(ReadNote::DstOverlapEarlier),
        LocalResult::Single(_) => {}
    }
    Resolved {
        at: resolve_local(tz, local),
        local,
        rule,
        notes,
    }
}

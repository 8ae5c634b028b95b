//! Calling hours per weekday (`mon-sat 08:00-20:00; sun closed`), and the
//! instants they allow on one local day.
//!
//! Why a whole week is spelled out: a day left unmentioned would be
//! ambiguous (open? closed?), so the parser requires every weekday exactly
//! once. Hours never cross midnight (no statute here needs that), which
//! keeps a day's allowance a single interval of that local day.

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, Utc, Weekday};
use chrono_tz::Tz;

use super::RulesError;
use crate::timezone::resolve_local;

const KIND: &str = "hours";

/// One weekday's hours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayHours {
    Closed,
    /// `[start, end)` local time, `start < end`.
    Open {
        start: NaiveTime,
        end: NaiveTime,
    },
}

/// Hours for each weekday, Monday first; at least one day open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeeklyHours([DayHours; 7]);

impl WeeklyHours {
    /// The same hours every day.
    pub fn every_day(start: NaiveTime, end: NaiveTime) -> Result<WeeklyHours, RulesError> {
        WeeklyHours::new([DayHours::Open { start, end }; 7])
    }

    /// Checks: every open day has `start < end`, and some day is open.
    pub fn new(days: [DayHours; 7]) -> Result<WeeklyHours, RulesError> {
        for day in &days {
            if let DayHours::Open { start, end } = day {
                if start >= end {
                    return Err(bad(format!("{start}-{end} is empty or crosses midnight")));
                }
            }
        }
        if days.iter().all(|d| *d == DayHours::Closed) {
            return Err(bad("every day is closed".into()));
        }
        Ok(WeeklyHours(days))
    }

    /// Parses `DAYS HH:MM-HH:MM` / `DAYS closed` entries separated by `;`.
    pub fn parse(text: &str) -> Result<WeeklyHours, RulesError> {
        let mut days: [Option<DayHours>; 7] = [None; 7];
        for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let (which, hours) = entry
                .split_once(char::is_whitespace)
                .ok_or_else(|| bad(format!("{entry:?}: expected DAYS then hours or closed")))?;
            let hours = parse_hours(hours.trim())?;
            for day in parse_days(which)? {
                let slot = &mut days[day.num_days_from_monday() as usize];
                if slot.is_some() {
                    return Err(bad(format!("{day} is given twice")));
                }
                *slot = Some(hours);
            }
        }
        let mut out = [DayHours::Closed; 7];
        for (i, day) in days.iter().enumerate() {
            out[i] = day.ok_or_else(|| bad(format!("{} is not given", weekday(i))))?;
        }
        WeeklyHours::new(out)
    }

    pub fn day(&self, day: Weekday) -> DayHours {
        self.0[day.num_days_from_monday() as usize]
    }

    /// The allowed `[open, close)` instants of local `date` in `tz`, if the
    /// day is open (and DST leaves the interval non-empty).
    pub fn on(&self, tz: Tz, date: NaiveDate) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        match self.day(date.weekday()) {
            DayHours::Closed => None,
            DayHours::Open { start, end } => {
                let open = resolve_local(tz, date.and_time(start));
                let close = resolve_local(tz, date.and_time(end));
                (open < close).then_some((open, close))
            }
        }
    }

    /// A short description of the day's hours, for violation details.
    pub fn describe(&self, day: Weekday) -> String {
        match self.day(day) {
            DayHours::Closed => format!("no calls on {}", long_name(day)),
            DayHours::Open { start, end } => format!(
                "calls on {} only {}-{} local time",
                long_name(day),
                start.format("%H:%M"),
                end.format("%H:%M")
            ),
        }
    }
}

fn bad(reason: String) -> RulesError {
    RulesError::BadParams { kind: KIND, reason }
}

fn parse_hours(text: &str) -> Result<DayHours, RulesError> {
    if text.eq_ignore_ascii_case("closed") {
        return Ok(DayHours::Closed);
    }
    let (start, end) = text
        .split_once('-')
        .ok_or_else(|| bad(format!("{text:?}: expected HH:MM-HH:MM or closed")))?;
    let time = |t: &str| {
        NaiveTime::parse_from_str(t.trim(), "%H:%M")
            .map_err(|_| bad(format!("bad time {:?}", super::clip(t))))
    };
    Ok(DayHours::Open {
        start: time(start)?,
        end: time(end)?,
    })
}

/// `all`, or a comma-separated list of days and non-wrapping ranges.
fn parse_days(text: &str) -> Result<Vec<Weekday>, RulesError> {
    let text = text.trim().to_ascii_lowercase();
    if text == "all" {
        return Ok((0..7).map(weekday).collect());
    }
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let day = |name: &str| {
            name.parse::<Weekday>()
                .map_err(|_| bad(format!("unknown day {:?}", super::clip(name))))
        };
        match part.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (day(from)?, day(to)?);
                let (a, b) = (from.num_days_from_monday(), to.num_days_from_monday());
                if a > b {
                    return Err(bad(format!("day range {part:?} runs backwards")));
                }
                out.extend((a..=b).map(|i| weekday(i as usize)));
            }
            None => out.push(day(part)?),
        }
    }
    Ok(out)
}

fn weekday(i: usize) -> Weekday {
    const WEEK: [Weekday; 7] = [
        Weekday::Mon,
        Weekday::Tue,
        Weekday::Wed,
        Weekday::Thu,
        Weekday::Fri,
        Weekday::Sat,
        Weekday::Sun,
    ];
    WEEK[i % 7]
}

fn long_name(day: Weekday) -> &'static str {
    match day {
        Weekday::Mon => "Monday",
        Weekday::Tue => "Tuesday",
        Weekday::Wed => "Wednesday",
        Weekday::Thu => "Thursday",
        Weekday::Fri => "Friday",
        Weekday::Sat => "Saturday",
        Weekday::Sun => "Sunday",
    }
}

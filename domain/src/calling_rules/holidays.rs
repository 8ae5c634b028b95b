//! State legal holidays, computed per year: fixed dates with each state's
//! rule for a date that falls on a weekend, and movable ones (the n-th or
//! last weekday of a month, Easter-relative days such as Mardi Gras, and
//! election day).
//!
//! Guarantees: [`HolidaySpec::falls_on`] is true exactly on the dates
//! [`HolidaySpec::dates`] lists for that date's year, including an observed
//! date that spills into a neighbouring year (New Year's Day on a Saturday
//! is observed on Friday 31 December, federally). Dates outside what chrono
//! represents are simply not holidays; nothing panics.

use chrono::{Datelike, Month, NaiveDate, TimeDelta, Weekday};

use super::{table, Jurisdiction, RuleBody, RuleId, RulesError};

const KIND: &str = "holiday";

/// Which date a holiday has in a given year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateRule {
    /// The same month and day every year (`on=12-25`).
    Fixed { month: u32, day: u32 },
    /// The n-th (1-5) weekday of a month (`on=3rd mon jan`), or the last
    /// (`nth: None`, `on=last mon may`).
    NthWeekday {
        nth: Option<u8>,
        weekday: Weekday,
        month: u32,
    },
    /// Days from Western (Gregorian) Easter Sunday: Mardi Gras is -47,
    /// Good Friday -2 (`on=easter-47`).
    Easter { offset: i16 },
    /// The Tuesday after the first Monday in November (`on=election_day`).
    ElectionDay,
}

/// A further day a holiday is kept when its date falls on a weekend (or,
/// for Utah's Juneteenth, midweek). The date itself always stays a holiday.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observance {
    /// Sunday: also the Monday after (`sun_next`).
    SundayNext,
    /// Saturday or Sunday: also the Monday after (`weekend_next`).
    WeekendNext,
    /// Saturday: also the Friday before; Sunday: also the Monday after
    /// (`nearest_weekday`, the federal rule).
    NearestWeekday,
    /// Tuesday to Friday: also the Monday before; Saturday or Sunday: also
    /// the Monday after (`ut_juneteenth`, Utah Code § 63G-1-301(2)(c)-(d)).
    UtJuneteenth,
}

/// Which years a holiday occurs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Years {
    All,
    Even,
    Odd,
}

/// A holiday: its date rule, observance rules and years.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolidaySpec {
    pub on: DateRule,
    pub observe: Vec<Observance>,
    pub years: Years,
}

/// One holiday date of a state, as [`holidays_in_year`] lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolidayDate {
    pub date: NaiveDate,
    pub rule_id: RuleId,
    /// Whether this is an observed day rather than the holiday's own date.
    pub observed: bool,
}

impl HolidaySpec {
    /// Parses `on=...; observe=a+b; years=even`.
    pub fn parse(text: &str) -> Result<HolidaySpec, RulesError> {
        let mut on = None;
        let mut observe = Vec::new();
        let mut years = Years::All;
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("{part:?}: expected key=value")))?;
            let value = value.trim().to_ascii_lowercase();
            match key.trim() {
                "on" => on = Some(parse_date_rule(&value)?),
                "observe" => {
                    for name in value.split('+').map(str::trim) {
                        if let Some(o) = parse_observance(name)? {
                            observe.push(o);
                        }
                    }
                }
                "years" => {
                    years = match value.as_str() {
                        "all" => Years::All,
                        "even" => Years::Even,
                        "odd" => Years::Odd,
                        _ => {
                            return Err(bad(format!("years={value:?}: expected all, even or odd")))
                        }
                    }
                }
                other => return Err(bad(format!("unknown key {:?}", super::clip(other)))),
            }
        }
        let on = on.ok_or_else(|| bad("on= is missing".into()))?;
        Ok(HolidaySpec { on, observe, years })
    }

    /// The holiday's own date in `year`, if it has one that year.
    pub fn date_in(&self, year: i32) -> Option<NaiveDate> {
        let occurs = match self.years {
            Years::All => true,
            Years::Even => year.rem_euclid(2) == 0,
            Years::Odd => year.rem_euclid(2) == 1,
        };
        if !occurs {
            return None;
        }
        match self.on {
            DateRule::Fixed { month, day } => NaiveDate::from_ymd_opt(year, month, day),
            DateRule::NthWeekday {
                nth: Some(n),
                weekday,
                month,
            } => NaiveDate::from_weekday_of_month_opt(year, month, weekday, n),
            DateRule::NthWeekday {
                nth: None,
                weekday,
                month,
            } => last_weekday(year, month, weekday),
            DateRule::Easter { offset } => {
                easter(year)?.checked_add_signed(TimeDelta::days(i64::from(offset)))
            }
            DateRule::ElectionDay => {
                NaiveDate::from_weekday_of_month_opt(year, 11, Weekday::Mon, 1)?.succ_opt()
            }
        }
    }

    /// Every day of `year` this holiday blocks, sorted: its own date
    /// (`false`) and observed days (`true`), including observed days of the
    /// neighbouring years' dates that fall in `year`.
    pub fn dates(&self, year: i32) -> Vec<(NaiveDate, bool)> {
        let mut out = Vec::new();
        for y in [year.checked_sub(1), Some(year), year.checked_add(1)]
            .into_iter()
            .flatten()
        {
            let Some(date) = self.date_in(y) else {
                continue;
            };
            out.push((date, false));
            for o in &self.observe {
                if let Some(extra) = o.observed(date) {
                    out.push((extra, true));
                }
            }
        }
        out.retain(|(d, _)| d.year() == year);
        // A date that is both a holiday and an observed day counts as the
        // holiday itself.
        out.sort();
        out.dedup_by_key(|(d, _)| *d);
        out
    }

    /// Whether the holiday blocks local `date`.
    pub fn falls_on(&self, date: NaiveDate) -> bool {
        let year = date.year();
        [year.checked_sub(1), Some(year), year.checked_add(1)]
            .into_iter()
            .flatten()
            .filter_map(|y| self.date_in(y))
            .any(|own| own == date || self.observe.iter().any(|o| o.observed(own) == Some(date)))
    }
}

impl Observance {
    /// The extra day kept for a holiday on `date`, if any.
    pub fn observed(self, date: NaiveDate) -> Option<NaiveDate> {
        let days = |n: i64| date.checked_add_signed(TimeDelta::days(n));
        match (self, date.weekday()) {
            (Observance::SundayNext, Weekday::Sun) => days(1),
            (Observance::WeekendNext, Weekday::Sat) => days(2),
            (Observance::WeekendNext, Weekday::Sun) => days(1),
            (Observance::NearestWeekday, Weekday::Sat) => days(-1),
            (Observance::NearestWeekday, Weekday::Sun) => days(1),
            (Observance::UtJuneteenth, Weekday::Sat) => days(2),
            (Observance::UtJuneteenth, Weekday::Sun) => days(1),
            (Observance::UtJuneteenth, Weekday::Mon) => None,
            (Observance::UtJuneteenth, day) => days(-i64::from(day.num_days_from_monday())),
            _ => None,
        }
    }
}

/// Every holiday date of the statutory rules of `state` in `year` (rules
/// not yet in force on a date are left out), sorted by date.
pub fn holidays_in_year(state: Jurisdiction, year: i32) -> Vec<HolidayDate> {
    let mut out = Vec::new();
    for rule in table::statutory().rules() {
        let RuleBody::Holiday(spec) = &rule.body else {
            continue;
        };
        if rule.jurisdiction != Some(state) {
            continue;
        }
        for (date, observed) in spec.dates(year) {
            if rule.effective.is_none_or(|from| date >= from) {
                out.push(HolidayDate {
                    date,
                    rule_id: rule.id.clone(),
                    observed,
                });
            }
        }
    }
    out.sort_by(|a, b| (a.date, &a.rule_id).cmp(&(b.date, &b.rule_id)));
    out
}

fn bad(reason: String) -> RulesError {
    RulesError::BadParams { kind: KIND, reason }
}

fn parse_observance(name: &str) -> Result<Option<Observance>, RulesError> {
    Ok(Some(match name {
        "none" => return Ok(None),
        "sun_next" => Observance::SundayNext,
        "weekend_next" => Observance::WeekendNext,
        "nearest_weekday" => Observance::NearestWeekday,
        "ut_juneteenth" => Observance::UtJuneteenth,
        other => return Err(bad(format!("unknown observance {:?}", super::clip(other)))),
    }))
}

fn parse_date_rule(text: &str) -> Result<DateRule, RulesError> {
    if text == "election_day" {
        return Ok(DateRule::ElectionDay);
    }
    if let Some(offset) = text.strip_prefix("easter") {
        let offset = offset.trim();
        let offset = if offset.is_empty() {
            0
        } else {
            offset
                .strip_prefix('+')
                .unwrap_or(offset)
                .parse::<i16>()
                .ok()
                .filter(|d| d.abs() <= 120)
                .ok_or_else(|| {
                    bad(format!(
                        "easter offset {offset:?}: expected -120..=120 days"
                    ))
                })?
        };
        return Ok(DateRule::Easter { offset });
    }
    if let Some((month, day)) = text.split_once('-') {
        let (month, day) = (month.parse::<u32>(), day.parse::<u32>());
        if let (Ok(month), Ok(day)) = (month, day) {
            // 2000 is a leap year: 02-29 is a valid (if rare) holiday.
            if NaiveDate::from_ymd_opt(2000, month, day).is_none() {
                return Err(bad(format!("{month:02}-{day:02} is not a date")));
            }
            return Ok(DateRule::Fixed { month, day });
        }
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let [nth, weekday, month] = words[..] else {
        return Err(bad(format!(
            "on={:?}: expected MM-DD, `3rd mon jan`, `last mon may`, easter±N or election_day",
            super::clip(text)
        )));
    };
    let nth = match nth {
        "1st" => Some(1),
        "2nd" => Some(2),
        "3rd" => Some(3),
        "4th" => Some(4),
        "5th" => Some(5),
        "last" => None,
        other => return Err(bad(format!("{other:?}: expected 1st..5th or last"))),
    };
    let weekday = weekday
        .parse::<Weekday>()
        .map_err(|_| bad(format!("unknown weekday {:?}", super::clip(weekday))))?;
    let month = month
        .parse::<Month>()
        .map_err(|_| bad(format!("unknown month {:?}", super::clip(month))))?
        .number_from_month();
    Ok(DateRule::NthWeekday {
        nth,
        weekday,
        month,
    })
}

fn last_weekday(year: i32, month: u32, weekday: Weekday) -> Option<NaiveDate> {
    let next_month = if month == 12 {
        NaiveDate::from_ymd_opt(year.checked_add(1)?, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)?
    };
    let last = next_month.pred_opt()?;
    let back = (7 + last.weekday().num_days_from_monday() - weekday.num_days_from_monday()) % 7;
    last.checked_sub_signed(TimeDelta::days(i64::from(back)))
}

/// Western Easter Sunday (the anonymous Gregorian algorithm, Meeus/Jones/
/// Butcher), for years 1583 on; `None` before the Gregorian calendar.
pub(super) fn easter(year: i32) -> Option<NaiveDate> {
    if year < 1583 {
        return None;
    }
    let y = i64::from(year);
    let a = y % 19;
    let b = y / 100;
    let c = y % 100;
    let d = b / 4;
    let e = b % 4;
    let f = (b + 8) / 25;
    let g = (b - f + 1) / 3;
    let h = (19 * a + b - d - g + 15) % 30;
    let i = c / 4;
    let k = c % 4;
    let l = (32 + 2 * e + 2 * i - h - k) % 7;
    let m = (a + 11 * h + 22 * l) / 451;
    let month = (h + l - 7 * m + 114) / 31;
    let day = (h + l - 7 * m + 114) % 31 + 1;
    NaiveDate::from_ymd_opt(year, u32::try_from(month).ok()?, u32::try_from(day).ok()?)
}

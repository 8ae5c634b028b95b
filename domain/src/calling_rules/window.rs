//! A lead's time rules (calling hours and holidays) placed in its zone(s):
//! which instants they allow, which rule refuses an instant, and the next
//! instant they all allow.
//!
//! Guarantees:
//! - An instant is allowed only if every rule allows it in every
//!   candidate zone of the lead (as calling windows treat uncertain zones).
//! - [`RuleWindow::check`] names the first rule (table order) that refuses.
//! - `next_allowed(from, horizon)` is the earliest instant `>= from` that
//!   `check` accepts, or `None` if it lies after `horizon`: each rule can
//!   say the earliest instant at or after `t` it allows (the next opening,
//!   or the next local midnight after a holiday), and moving `t` to the
//!   latest of those answers until none moves it never skips an instant
//!   that all rules allow.
//! - Holiday calendars are computed per year once and cached (bounded,
//!   per window); a clone starts with an empty cache.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use chrono_tz::Tz;

use super::{Rule, RuleBody, RulesError, Violation, WeeklyHours};
use crate::timezone::resolve_local;
use crate::Availability;

/// Years of holiday dates a window keeps before starting over.
const CACHED_YEARS: usize = 8;
/// A guard against a rule that never settles (none does): give up, which
/// holds the call rather than placing it wrongly.
const MAX_STEPS: usize = 1_000_000;

/// The time rules of a lead in its candidate zones.
#[derive(Debug, Clone)]
pub struct RuleWindow {
    rules: Vec<Arc<Rule>>,
    zones: Vec<Tz>,
    holidays: HolidayCache,
}

impl RuleWindow {
    /// `rules` may hold any rules; frequency caps are left to [`super::CapWindow`].
    pub fn new(rules: &[Arc<Rule>], zones: Vec<Tz>) -> Result<RuleWindow, RulesError> {
        if zones.is_empty() {
            return Err(RulesError::NoZones);
        }
        Ok(RuleWindow::build(rules, zones))
    }

    /// `zones` must not be empty (callers check).
    pub(super) fn build(rules: &[Arc<Rule>], zones: Vec<Tz>) -> RuleWindow {
        let rules = rules
            .iter()
            .filter(|r| !matches!(r.body, RuleBody::FrequencyCap(_)))
            .cloned()
            .collect();
        RuleWindow {
            rules,
            zones,
            holidays: HolidayCache::default(),
        }
    }

    pub fn zones(&self) -> &[Tz] {
        &self.zones
    }

    /// The hours and holiday rules in force here.
    pub fn rules(&self) -> &[Arc<Rule>] {
        &self.rules
    }

    /// `Ok` if every rule allows a call at `at`; else the first refusal.
    pub fn check(&self, at: DateTime<Utc>) -> Result<(), Violation> {
        let Some((rule, tz, local)) = self.first_refusal(at) else {
            return Ok(());
        };
        let detail = match &rule.body {
            RuleBody::Hours(hours) => format!(
                "{}; it is {} local time in {}",
                hours.describe(local.weekday()),
                local.format("%a %Y-%m-%d %H:%M"),
                tz.name()
            ),
            _ => format!(
                "no calls on {}; {} is a holiday in {}",
                holiday_name(rule),
                local.format("%a %Y-%m-%d"),
                tz.name()
            ),
        };
        Err(Violation {
            rule_id: rule.id.clone(),
            detail,
        })
    }

    /// The first rule (zone by zone, in rule order) that refuses `at`, with
    /// the zone and the local time there. Allocates nothing: the allocator
    /// asks this for every slot it considers.
    fn first_refusal(&self, at: DateTime<Utc>) -> Option<(&Arc<Rule>, Tz, NaiveDateTime)> {
        for &tz in &self.zones {
            let local = at.with_timezone(&tz).naive_local();
            let date = local.date();
            for (i, rule) in self.rules.iter().enumerate() {
                if !in_force(rule, date) {
                    continue;
                }
                let refused = match &rule.body {
                    RuleBody::Hours(hours) => !within(hours, tz, date, at),
                    RuleBody::Holiday(_) => self.is_holiday(i, date),
                    RuleBody::FrequencyCap(_) => false,
                };
                if refused {
                    return Some((rule, tz, local));
                }
            }
        }
        None
    }

    /// The earliest instant at or after `t` that rule `i` allows in `tz`.
    fn earliest(&self, i: usize, rule: &Rule, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let date = t.with_timezone(&tz).date_naive();
        if !in_force(rule, date) {
            return Some(t);
        }
        match &rule.body {
            RuleBody::Hours(hours) => {
                // A week and a day covers every weekday pattern with an
                // open day (the parser rejects a week with none).
                let mut day = date;
                for _ in 0..8 {
                    if let Some((open, close)) = hours.on(tz, day) {
                        if t < close {
                            return Some(open.max(t));
                        }
                    }
                    day = day.succ_opt()?;
                }
                None
            }
            RuleBody::Holiday(_) => {
                if !self.is_holiday(i, date) {
                    return Some(t);
                }
                // Observed days can follow the holiday (a Saturday holiday
                // observed on Monday leaves Sunday free, but a run of
                // holidays is skipped whole).
                let mut day = date.succ_opt()?;
                for _ in 0..14 {
                    if !(in_force(rule, day) && self.is_holiday(i, day)) {
                        return Some(resolve_local(tz, day.and_time(NaiveTime::MIN)).max(t));
                    }
                    day = day.succ_opt()?;
                }
                None
            }
            RuleBody::FrequencyCap(_) => Some(t),
        }
    }

    /// Whether holiday rule `i` blocks local `date`: what
    /// [`super::HolidaySpec::falls_on`] answers, read from the year's cached dates.
    fn is_holiday(&self, i: usize, date: NaiveDate) -> bool {
        self.holidays.contains(&self.rules, date.year(), (date, i))
    }
}

impl Availability for RuleWindow {
    fn is_allowed(&self, at: DateTime<Utc>) -> bool {
        self.first_refusal(at).is_none()
    }

    fn next_allowed(&self, at: DateTime<Utc>, horizon: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let mut t = at;
        for _ in 0..MAX_STEPS {
            if t > horizon {
                return None;
            }
            let mut moved = false;
            for &tz in &self.zones {
                for (i, rule) in self.rules.iter().enumerate() {
                    let next = self.earliest(i, rule, tz, t)?;
                    if next > t {
                        t = next;
                        moved = true;
                    }
                }
            }
            if !moved {
                return Some(t);
            }
        }
        None
    }
}

fn in_force(rule: &Rule, local_date: NaiveDate) -> bool {
    rule.effective.is_none_or(|from| local_date >= from)
}

fn within(hours: &WeeklyHours, tz: Tz, date: NaiveDate, at: DateTime<Utc>) -> bool {
    hours
        .on(tz, date)
        .is_some_and(|(open, close)| open <= at && at < close)
}

/// `mardi gras` from `state_holiday:LA:mardi_gras`.
fn holiday_name(rule: &Rule) -> String {
    rule.id
        .as_str()
        .rsplit(':')
        .next()
        .unwrap_or("a holiday")
        .replace('_', " ")
}

/// One year's (date, rule index) pairs of every holiday rule, sorted.
type YearDates = (i32, Vec<(NaiveDate, usize)>);

/// The years asked about so far, oldest first.
#[derive(Default)]
struct HolidayCache(Mutex<Vec<YearDates>>);

impl HolidayCache {
    /// Whether `(date, rule)` is a holiday, from the year's entry (built on
    /// first use).
    fn contains(&self, rules: &[Arc<Rule>], year: i32, key: (NaiveDate, usize)) -> bool {
        let mut years = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, dates)) = years.iter().find(|(y, _)| *y == year) {
            return dates.binary_search(&key).is_ok();
        }
        let mut dates: Vec<(NaiveDate, usize)> = rules
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match &r.body {
                RuleBody::Holiday(spec) => Some((i, spec)),
                _ => None,
            })
            .flat_map(|(i, spec)| spec.dates(year).into_iter().map(move |(d, _)| (d, i)))
            .collect();
        dates.sort_unstable();
        let found = dates.binary_search(&key).is_ok();
        if years.len() >= CACHED_YEARS {
            years.remove(0);
        }
        years.push((year, dates));
        found
    }
}

impl Clone for HolidayCache {
    fn clone(&self) -> Self {
        HolidayCache::default()
    }
}

impl std::fmt::Debug for HolidayCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HolidayCache")
    }
}

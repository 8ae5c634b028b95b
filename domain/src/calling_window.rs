//! Calling windows: when a campaign may call a lead, in the lead's own zone.
//!
//! A [`CampaignWindow`] is a list of [`WindowRule`]s (days of week, local
//! start and end). A rule whose end is at or before its start crosses
//! midnight, and belongs to the day it starts on: "Fri 20:00-02:00" opens on
//! Friday evening and closes early Saturday. Start equal to end is the
//! whole day from that time.
//!
//! A [`CallingWindow`] is a campaign window placed in a lead's zone(s); it
//! implements [`Availability`] for the slot grid. Guarantees:
//! - Federal quiet hours always bound it: no instant is allowed before
//!   08:00 or at/after 21:00 local time, whatever the campaign says; there is
//!   no setting to turn this off.
//! - When the lead's zone is uncertain (an area code spanning zones), an
//!   instant is allowed only if it is allowed in every candidate zone.
//! - Intervals are half-open: a window 09:00-17:00 allows 09:00:00 and not
//!   17:00:00.
//! - DST: rule times are turned into instants with
//!   [`crate::timezone::resolve_local`] (a time in a spring-forward gap opens
//!   at the first valid instant after the gap; a time in a fall-back overlap
//!   at the earlier instant), so every window occurrence is deterministic.
//! - [`CallingWindow::place`] never moves a call earlier than planned.

use chrono::{DateTime, NaiveDate, NaiveTime, TimeDelta, Utc, Weekday};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use crate::timezone::ResolvedZone;
use crate::Availability;

mod day_table;
mod days;
mod intervals;
mod local_day;
#[cfg(test)]
mod props;
mod search;
#[cfg(test)]
mod tests;

use day_table::{day_of, day_start, DayTable, WALK_DAYS};
pub use days::Days;
use intervals::Interval;

/// Federal quiet hours: no call starts before this local time...
pub const FEDERAL_EARLIEST: NaiveTime = match NaiveTime::from_hms_opt(8, 0, 0) {
    Some(t) => t,
    None => NaiveTime::MIN,
};
/// ...nor at or after this one.
pub const FEDERAL_LATEST: NaiveTime = match NaiveTime::from_hms_opt(21, 0, 0) {
    Some(t) => t,
    None => NaiveTime::MIN,
};

/// How far [`CallingWindow::next_allowed`] scans at first, and at most, in
/// one step. Most answers are within a day, so it starts small and doubles
/// over long closed stretches; any sizes are correct.
const FIRST_CHUNK: TimeDelta = TimeDelta::days(1);
const MAX_CHUNK: TimeDelta = TimeDelta::days(8);

/// A window setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("a campaign window needs at least one rule")]
    NoRules,
    #[error("window rule {index} has no days")]
    NoDays { index: usize },
    #[error("a calling window needs at least one time zone")]
    NoZones,
    #[error("bad time {0:?}: expected HH:MM or HH:MM:SS")]
    BadTime(String),
    #[error("unknown day {0:?}")]
    BadDay(String),
}

/// One rule: on these days, from `start` to `end` local time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowRule {
    pub days: Days,
    #[serde(with = "hhmm")]
    pub start: NaiveTime,
    #[serde(with = "hhmm")]
    pub end: NaiveTime,
}

impl WindowRule {
    pub fn new(days: Days, start: NaiveTime, end: NaiveTime) -> WindowRule {
        WindowRule { days, start, end }
    }

    /// Whether the rule runs past midnight into the next day.
    pub fn crosses_midnight(&self) -> bool {
        self.end <= self.start
    }

    /// The rule's occurrence that starts on local `date` in `tz`, as
    /// `[open, close)` instants, or `None` if the rule does not run that day
    /// or the occurrence vanishes (wholly inside a DST gap).
    pub fn occurrence(&self, tz: Tz, date: NaiveDate) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        if !self.days.contains(date.weekday_of()) {
            return None;
        }
        let open = local_day::resolve(tz, date, self.start);
        let close_date = if self.crosses_midnight() {
            date.succ_opt()?
        } else {
            date
        };
        let close = local_day::resolve(tz, close_date, self.end);
        (open < close).then_some((open, close))
    }
}

/// The weekday of a date, as a method so call sites read left to right.
trait WeekdayOf {
    fn weekday_of(&self) -> Weekday;
}

impl WeekdayOf for NaiveDate {
    fn weekday_of(&self) -> Weekday {
        chrono::Datelike::weekday(self)
    }
}

/// A campaign's calling window: a non-empty list of rules, in local time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<WindowRule>", into = "Vec<WindowRule>")]
pub struct CampaignWindow {
    rules: Vec<WindowRule>,
}

impl CampaignWindow {
    /// Validates: at least one rule, and every rule has at least one day.
    pub fn new(rules: Vec<WindowRule>) -> Result<CampaignWindow, WindowError> {
        if rules.is_empty() {
            return Err(WindowError::NoRules);
        }
        if let Some(index) = rules.iter().position(|r| r.days.is_empty()) {
            return Err(WindowError::NoDays { index });
        }
        Ok(CampaignWindow { rules })
    }

    /// One rule for the given days.
    pub fn daily(days: Days, start: NaiveTime, end: NaiveTime) -> Result<Self, WindowError> {
        CampaignWindow::new(vec![WindowRule::new(days, start, end)])
    }

    pub fn rules(&self) -> &[WindowRule] {
        &self.rules
    }

    /// This window for a lead in `zones` (all candidate zones of the lead).
    pub fn in_zones(&self, zones: Vec<Tz>) -> Result<CallingWindow, WindowError> {
        CallingWindow::new(self.clone(), zones)
    }

    /// This window for a lead whose zone was resolved.
    pub fn for_lead(&self, zone: &ResolvedZone) -> Result<CallingWindow, WindowError> {
        self.in_zones(zone.zones.clone())
    }
}

impl TryFrom<Vec<WindowRule>> for CampaignWindow {
    type Error = WindowError;
    fn try_from(rules: Vec<WindowRule>) -> Result<Self, Self::Error> {
        CampaignWindow::new(rules)
    }
}

impl From<CampaignWindow> for Vec<WindowRule> {
    fn from(w: CampaignWindow) -> Self {
        w.rules
    }
}

/// Where a call goes relative to its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Placement {
    /// The planned time is allowed: keep it.
    InWindow { at: DateTime<Utc> },
    /// Outside the window: moved to the next opening plus the buffer.
    Moved {
        at: DateTime<Utc>,
        opening: DateTime<Utc>,
    },
    /// No opening before the horizon.
    NoOpening,
}

/// A campaign window in a lead's candidate zone(s), bounded by federal hours.
///
/// It caches its allowed intervals per UTC day as it is asked (see
/// `day_table`): keep one window for many questions, as the allocator does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallingWindow {
    campaign: CampaignWindow,
    zones: Vec<Tz>,
    days: DayTable,
}

impl CallingWindow {
    pub fn new(campaign: CampaignWindow, zones: Vec<Tz>) -> Result<CallingWindow, WindowError> {
        if zones.is_empty() {
            return Err(WindowError::NoZones);
        }
        Ok(CallingWindow {
            campaign,
            zones,
            days: DayTable::default(),
        })
    }

    pub fn zones(&self) -> &[Tz] {
        &self.zones
    }

    pub fn campaign(&self) -> &CampaignWindow {
        &self.campaign
    }

    /// The start of the first allowed interval that begins at or after `at`
    /// (a call already inside an interval gets the next one), if it begins
    /// no later than `horizon`.
    pub fn next_opening(&self, at: DateTime<Utc>, horizon: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.search(at, horizon, |iv| (iv.start >= at).then_some(iv.start))
    }

    /// The first answer `pick` gives over the allowed intervals from `at`
    /// on, if no later than `horizon`: from the day table for the next
    /// [`WALK_DAYS`] days, then by scanning the rules (a long closed
    /// stretch would otherwise fill the table with empty days).
    fn search(
        &self,
        at: DateTime<Utc>,
        horizon: DateTime<Utc>,
        pick: impl Fn(&Interval) -> Option<DateTime<Utc>>,
    ) -> Option<DateTime<Utc>> {
        if let Some(settled) = self.walk_days(at, horizon, &pick) {
            return settled;
        }
        match day_start(day_of(at).saturating_add(WALK_DAYS)) {
            Some(from) => self.scan(from.max(at), horizon, pick),
            None => self.scan(at, horizon, pick),
        }
    }

    /// The next opening at or after `at` plus `buffer`, for moving a call
    /// that fell outside its window. If the buffer runs past the end of that
    /// opening, the first allowed instant after it. `None` when that lies
    /// beyond `horizon`.
    pub fn next_opening_plus_buffer(
        &self,
        at: DateTime<Utc>,
        buffer: std::time::Duration,
        horizon: DateTime<Utc>,
    ) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        let opening = self.next_opening(at, horizon)?;
        let buffer = TimeDelta::from_std(buffer).ok()?;
        let target = opening.checked_add_signed(buffer)?;
        let at = self.next_allowed(target, horizon)?;
        Some((opening, at))
    }

    /// Keeps a planned call that is inside its window; otherwise moves it to
    /// the next opening plus `buffer`. Never earlier than `planned`.
    pub fn place(
        &self,
        planned: DateTime<Utc>,
        buffer: std::time::Duration,
        horizon: DateTime<Utc>,
    ) -> Placement {
        if planned <= horizon && self.is_allowed(planned) {
            return Placement::InWindow { at: planned };
        }
        match self.next_opening_plus_buffer(planned, buffer, horizon) {
            Some((opening, at)) => Placement::Moved { at, opening },
            None => Placement::NoOpening,
        }
    }
}

impl Availability for CallingWindow {
    fn is_allowed(&self, at: DateTime<Utc>) -> bool {
        self.with_day(day_of(at), |ivs| ivs.iter().any(|iv| iv.contains(at)))
            .unwrap_or_else(|| self.allowed_from_rules(at))
    }

    fn next_allowed(&self, at: DateTime<Utc>, horizon: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.search(at, horizon, |iv| (iv.end > at).then(|| iv.start.max(at)))
    }
}

/// Reads and writes rule times as `HH:MM` (seconds when not zero).
mod hhmm {
    use chrono::{NaiveTime, Timelike};
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &NaiveTime, s: S) -> Result<S::Ok, S::Error> {
        let text = if t.second() == 0 {
            t.format("%H:%M").to_string()
        } else {
            t.format("%H:%M:%S").to_string()
        };
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<NaiveTime, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_time(&text).map_err(D::Error::custom)
    }
}

/// Parses `HH:MM` or `HH:MM:SS`.
pub fn parse_time(text: &str) -> Result<NaiveTime, WindowError> {
    let text = text.trim();
    NaiveTime::parse_from_str(text, "%H:%M:%S")
        .or_else(|_| NaiveTime::parse_from_str(text, "%H:%M"))
        .map_err(|_| WindowError::BadTime(text.chars().take(16).collect()))
}

//! Rolling frequency caps: at most N calls to a person in any window of
//! length W (absolute time, so DST does not stretch "24 hours").
//!
//! Why the arithmetic below: a candidate call at `t` breaks a cap exactly
//! when some N calls already placed, together with `t`, fit in one W-long
//! stretch. If they do, N calls that are consecutive in time also do, so
//! for each run `h[i] <= ... <= h[i+N-1]` of N consecutive calls the
//! forbidden candidates are the open interval `(h[i+N-1] - W, h[i] + W)`:
//! `t = h[i] + W` is allowed (the oldest has just aged out). The union of
//! those intervals is every forbidden instant, for calls given in any
//! order, before or after `t`.

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use super::{Rule, RuleBody, RulesError, Violation};
use crate::Availability;

const KIND: &str = "frequency_cap";
/// The longest window a cap may have.
const MAX_WINDOW: TimeDelta = TimeDelta::days(366);

/// At most `max` calls in any window of `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrequencyCap {
    max: u32,
    window: TimeDelta,
}

impl FrequencyCap {
    /// `max` at least 1; `window` positive and at most a year.
    pub fn new(max: u32, window: TimeDelta) -> Result<FrequencyCap, RulesError> {
        if max == 0 {
            return Err(bad("max must be at least 1".into()));
        }
        if window <= TimeDelta::zero() || window > MAX_WINDOW {
            return Err(bad("window must be positive and at most 366 days".into()));
        }
        Ok(FrequencyCap { max, window })
    }

    /// Parses `max=N; window=24h` (units `h` or `d`).
    pub fn parse(text: &str) -> Result<FrequencyCap, RulesError> {
        let (mut max, mut window) = (None, None);
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("{part:?}: expected key=value")))?;
            let value = value.trim();
            match key.trim() {
                "max" => {
                    max = Some(
                        value
                            .parse::<u32>()
                            .map_err(|_| bad(format!("max={value:?}: expected a count")))?,
                    )
                }
                "window" => window = Some(parse_window(value)?),
                other => return Err(bad(format!("unknown key {:?}", super::clip(other)))),
            }
        }
        FrequencyCap::new(
            max.ok_or_else(|| bad("max= is missing".into()))?,
            window.ok_or_else(|| bad("window= is missing".into()))?,
        )
    }

    pub fn max(&self) -> u32 {
        self.max
    }

    pub fn window(&self) -> TimeDelta {
        self.window
    }

    /// `3 calls per 24h` (or `per 7d`), for details.
    pub fn describe(&self) -> String {
        let hours = self.window.num_hours();
        if hours % 24 == 0 && hours > 24 {
            format!("at most {} calls in any {} days", self.max, hours / 24)
        } else if self.window.num_seconds() % 3600 == 0 {
            format!("at most {} calls in any {hours} hours", self.max)
        } else {
            format!(
                "at most {} calls in any {} s",
                self.max,
                self.window.num_seconds()
            )
        }
    }

    /// The open intervals of forbidden candidates given the calls placed
    /// (any order), sorted by start. See the module docs.
    fn forbidden(&self, placed: &[DateTime<Utc>]) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let n = self.max as usize;
        if placed.len() < n {
            return Vec::new();
        }
        let mut calls = placed.to_vec();
        calls.sort_unstable();
        calls
            .windows(n)
            .filter_map(|run| {
                let (first, last) = (*run.first()?, *run.last()?);
                let lo = last.checked_sub_signed(self.window)?;
                let hi = first.checked_add_signed(self.window)?;
                (lo < hi).then_some((lo, hi))
            })
            .collect()
    }
}

fn bad(reason: String) -> RulesError {
    RulesError::BadParams { kind: KIND, reason }
}

fn parse_window(text: &str) -> Result<TimeDelta, RulesError> {
    let err = || {
        bad(format!(
            "window={text:?}: expected a number of hours (24h) or days (7d)"
        ))
    };
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let number = number.trim().parse::<i64>().map_err(|_| err())?;
    match unit {
        "h" => TimeDelta::try_hours(number),
        "d" => TimeDelta::try_days(number),
        _ => None,
    }
    .ok_or_else(err)
}

/// A cap was hit: the rule, and the earliest instant every cap allows again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{violation} (frees up at {frees_at})")]
pub struct CapHit {
    pub violation: Violation,
    pub frees_at: DateTime<Utc>,
}

/// One cap's forbidden intervals.
#[derive(Debug, Clone)]
struct CapIntervals {
    rule: Arc<Rule>,
    cap: FrequencyCap,
    /// Open intervals, sorted by start.
    forbidden: Vec<(DateTime<Utc>, DateTime<Utc>)>,
}

/// The caps of a lead's rule set over the calls already placed to the
/// person (within the subject the caps count in). Build it once per
/// decision; it answers [`Availability`] questions without allocating.
#[derive(Debug, Clone, Default)]
pub struct CapWindow {
    caps: Vec<CapIntervals>,
}

impl CapWindow {
    /// `rules` may hold any rules; only frequency caps are used. A cap not
    /// yet in force (its effective date, at 00:00 UTC) allows every
    /// instant before that.
    pub fn new(rules: &[Arc<Rule>], placed: &[DateTime<Utc>]) -> CapWindow {
        let caps = rules
            .iter()
            .filter_map(|rule| {
                let RuleBody::FrequencyCap(cap) = rule.body else {
                    return None;
                };
                let mut forbidden = cap.forbidden(placed);
                if let Some(from) = rule
                    .effective
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .map(|d| d.and_utc())
                {
                    // (from - 1 ns, hi) is [from, hi) at nanosecond resolution.
                    let just_before = from - TimeDelta::nanoseconds(1);
                    forbidden.retain(|(_, hi)| *hi > from);
                    for iv in &mut forbidden {
                        iv.0 = iv.0.max(just_before);
                    }
                }
                Some(CapIntervals {
                    rule: Arc::clone(rule),
                    cap,
                    forbidden,
                })
            })
            .collect();
        CapWindow { caps }
    }

    /// `Ok` if a call at `at` breaks no cap; otherwise the first cap it
    /// breaks and the earliest instant all caps allow (never before `at`).
    pub fn check(&self, at: DateTime<Utc>) -> Result<(), CapHit> {
        for c in &self.caps {
            if let Some(&(_, hi)) = c.forbidden.iter().find(|(lo, hi)| *lo < at && at < *hi) {
                let frees_at = self.earliest_from(at).unwrap_or(hi);
                return Err(CapHit {
                    violation: Violation {
                        rule_id: c.rule.id.clone(),
                        detail: format!(
                            "{}; the oldest call in the window ages out at {}",
                            c.cap.describe(),
                            hi.format("%Y-%m-%dT%H:%M:%SZ")
                        ),
                    },
                    frees_at,
                });
            }
        }
        Ok(())
    }

    /// The earliest instant at or after `at` every cap allows. A single
    /// sweep per cap suffices (intervals sorted by start: one that starts
    /// later cannot push `t` back over an earlier one), repeated across
    /// caps until none moves it.
    fn earliest_from(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let mut t = at;
        // Every pass that moves `t` moves it past an interval end, so the
        // number of passes is bounded by the number of intervals.
        let bound = self.caps.iter().map(|c| c.forbidden.len()).sum::<usize>() + 1;
        for _ in 0..=bound {
            let mut moved = false;
            for c in &self.caps {
                for &(lo, hi) in &c.forbidden {
                    if lo < t && t < hi {
                        t = hi;
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

impl Availability for CapWindow {
    fn is_allowed(&self, at: DateTime<Utc>) -> bool {
        // As `check`, without building the violation.
        !self
            .caps
            .iter()
            .any(|c| c.forbidden.iter().any(|(lo, hi)| *lo < at && at < *hi))
    }

    fn next_allowed(&self, at: DateTime<Utc>, horizon: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.earliest_from(at).filter(|t| *t <= horizon)
    }
}

//! A calling window's allowed intervals, cached per UTC day, so the
//! allocator's many questions about nearby instants (is this slot allowed?
//! where does the window open next?) are a lookup, not a computation.
//!
//! Why: the allocator asks [`CallingWindow`] about every slot it considers,
//! and each answer from the rules resolves local days in every candidate
//! zone and intersects them. The answer for every instant of one UTC day
//! depends only on the whole allowed intervals that meet that day, so
//! those are computed once per day and window.
//!
//! Guarantees: the entry of day `D` holds, sorted, every allowed interval
//! (whole, as [`CallingWindow::intervals_around`] gives them) that meets
//! `[D 00:00, D+1 00:00)` UTC and nothing else, so answers read from it are
//! the answers computed from the rules. The table is bounded (emptied when
//! full) and lives behind a mutex, so a window stays `Send + Sync`; a clone
//! of a window starts with an empty table, and tables never take part in
//! equality.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};

use super::intervals::Interval;
use super::CallingWindow;

const DAY_SECONDS: i64 = 86_400;
/// Days kept per window before the table starts over (about three years).
const MAX_DAYS: usize = 1024;
/// Days a search walks through the table before it hands over to the
/// chunked scan (long closed stretches, far horizons).
pub(super) const WALK_DAYS: i64 = 16;

/// UTC day number → the allowed intervals that meet that day.
type Days = HashMap<i64, Vec<Interval>, BuildHasherDefault<DayHasher>>;

/// The per-window cache; see the module docs.
#[derive(Default)]
pub(super) struct DayTable(Mutex<Days>);

impl Clone for DayTable {
    fn clone(&self) -> Self {
        DayTable::default()
    }
}

impl PartialEq for DayTable {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for DayTable {}

impl std::fmt::Debug for DayTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DayTable")
    }
}

/// Day numbers are small consecutive integers: one multiply spreads them
/// (no attacker chooses them, so no keyed hash is needed).
#[derive(Default)]
pub(super) struct DayHasher(u64);

impl Hasher for DayHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The UTC day of `at`.
pub(super) fn day_of(at: DateTime<Utc>) -> i64 {
    at.timestamp().div_euclid(DAY_SECONDS)
}

/// The instant UTC day `day` starts, if it is representable.
pub(super) fn day_start(day: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(day.checked_mul(DAY_SECONDS)?, 0)
}

impl CallingWindow {
    /// Runs `f` on the intervals that meet UTC day `day`, computing them
    /// first if the table lacks them. `None` if the day is not representable.
    pub(super) fn with_day<R>(&self, day: i64, f: impl FnOnce(&[Interval]) -> R) -> Option<R> {
        let mut days = self.days.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(intervals) = days.get(&day) {
            return Some(f(intervals));
        }
        let from = day_start(day)?;
        let to = day_start(day.checked_add(1)?)?;
        let intervals = self.intervals_around(from, to);
        if days.len() >= MAX_DAYS {
            days.clear();
        }
        Some(f(days.entry(day).or_insert(intervals)))
    }

    /// The first answer `pick` gives, walking the intervals from `at` on in
    /// order, if it is no later than `horizon`: `Some(answer)` when the walk
    /// settled it, `None` when it went [`WALK_DAYS`] days without an answer
    /// (the caller goes on from there with the scan).
    pub(super) fn walk_days(
        &self,
        at: DateTime<Utc>,
        horizon: DateTime<Utc>,
        pick: &impl Fn(&Interval) -> Option<DateTime<Utc>>,
    ) -> Option<Option<DateTime<Utc>>> {
        let first = day_of(at);
        for day in first..first.saturating_add(WALK_DAYS) {
            if day_start(day)? > horizon {
                return Some(None);
            }
            // Intervals are disjoint and sorted; one that starts before
            // another meets the same day or an earlier one, so the first
            // answer in day order is the first overall.
            if let Some(found) = self.with_day(day, |ivs| ivs.iter().find_map(pick))? {
                return Some((found <= horizon).then_some(found));
            }
        }
        None
    }
}

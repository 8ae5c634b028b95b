//! A simple [`Availability`] for tests: allowed hours of the day in UTC
//! (possibly crossing midnight), optionally counting how often it is asked.

use std::cell::Cell;

use chrono::{DateTime, Duration, Timelike, Utc};

use crate::Availability;

/// Calls may start from `start_hour` until `end_hour` (exclusive) UTC; a
/// window with `start_hour > end_hour` crosses midnight, and
/// `start_hour == end_hour` is closed all day.
#[derive(Debug, Default)]
pub(super) struct HoursUtc {
    pub start_hour: u32,
    pub end_hour: u32,
    pub calls: Cell<u64>,
}

impl HoursUtc {
    pub fn new(start_hour: u32, end_hour: u32) -> Self {
        HoursUtc {
            start_hour,
            end_hour,
            calls: Cell::new(0),
        }
    }

    pub fn always() -> Self {
        HoursUtc::new(0, 24)
    }
}

impl Availability for HoursUtc {
    fn is_allowed(&self, at: DateTime<Utc>) -> bool {
        self.calls.set(self.calls.get() + 1);
        let h = at.hour();
        let (s, e) = (self.start_hour, self.end_hour);
        if s <= e {
            s <= h && h < e
        } else {
            h >= s || h < e
        }
    }

    fn next_allowed(&self, at: DateTime<Utc>, horizon: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if self.start_hour == self.end_hour {
            return None;
        }
        if self.is_allowed(at) {
            return (at < horizon).then_some(at);
        }
        let midnight = at.date_naive().and_hms_opt(0, 0, 0)?.and_utc();
        let mut opening = midnight + Duration::hours(i64::from(self.start_hour));
        if opening <= at {
            opening += Duration::days(1);
        }
        (opening < horizon).then_some(opening)
    }
}

//! A memo of what a calling window needs from one local day in one zone:
//! its federal calling hours and the instants its rule times resolve to.
//!
//! Why: resolving a local time with chrono-tz (binary searches over the
//! zone's transitions, and a minute-by-minute walk inside a DST gap) was
//! most of the allocator's time, and the same few local times (08:00,
//! 21:00 and the rules' start and end) of the same days are resolved over
//! and over: every slot the allocator checks asks about today and
//! yesterday. So each thread keeps a small direct-mapped table of days,
//! keyed by zone and local date.
//!
//! Guarantees: every answer is exactly what [`resolve_local`] gives for the
//! same zone and local date-time (the memo stores its results; it computes
//! nothing of its own), so DST gaps and overlaps resolve as before. The
//! table is bounded (a colliding day replaces the one in its slot), holds
//! only values derived from the zone data compiled in, and is per thread,
//! so no lock is taken and no answer depends on what was asked before.

use std::cell::RefCell;

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, Utc};
use chrono_tz::Tz;

use super::intervals::Interval;
use super::{FEDERAL_EARLIEST, FEDERAL_LATEST};
use crate::timezone::resolve_local;

/// Days kept per thread (a power of two; about 140 KB). Two years of days
/// in one zone fit; the allocator's working set (the days around one
/// request) is far smaller.
const SLOTS: usize = 1024;
/// Rule times kept per day beyond the federal ones; a window with more
/// distinct times resolves the extra ones directly.
const TIMES: usize = 4;

/// One zone's local day.
#[derive(Debug, Clone, Copy)]
struct LocalDay {
    tz: Tz,
    date: NaiveDate,
    /// Federal calling hours of this day (`None` if a DST change swallows them).
    federal: Option<Interval>,
    /// Local times of this day already resolved, oldest first.
    times: [(NaiveTime, DateTime<Utc>); TIMES],
    len: usize,
}

impl LocalDay {
    fn new(tz: Tz, date: NaiveDate) -> LocalDay {
        let open = resolve_local(tz, date.and_time(FEDERAL_EARLIEST));
        let close = resolve_local(tz, date.and_time(FEDERAL_LATEST));
        LocalDay {
            tz,
            date,
            federal: (open < close).then(|| Interval::new(open, close)),
            times: [(NaiveTime::MIN, DateTime::<Utc>::MIN_UTC); TIMES],
            len: 0,
        }
    }

    fn resolve(&mut self, time: NaiveTime) -> DateTime<Utc> {
        if let Some(&(_, at)) = self.times[..self.len].iter().find(|(t, _)| *t == time) {
            return at;
        }
        let at = resolve_local(self.tz, self.date.and_time(time));
        if self.len < TIMES {
            self.times[self.len] = (time, at);
            self.len += 1;
        }
        at
    }
}

thread_local! {
    static DAYS: RefCell<Vec<Option<LocalDay>>> = RefCell::new(vec![None; SLOTS]);
}

fn slot_of(tz: Tz, date: NaiveDate) -> usize {
    // Consecutive days of one zone land in consecutive slots; zones are
    // spread apart by a large odd multiplier.
    let day = date.num_days_from_ce() as u32;
    let zone = (tz as u32).wrapping_mul(0x9E37_79B1);
    (day.wrapping_add(zone) as usize) & (SLOTS - 1)
}

/// Runs `f` on the memo entry of `tz` and `date`, creating it if needed.
fn with_day<R>(tz: Tz, date: NaiveDate, f: impl FnOnce(&mut LocalDay) -> R) -> R {
    DAYS.with(|days| {
        let mut days = days.borrow_mut();
        let entry = &mut days[slot_of(tz, date)];
        match entry {
            Some(day) if day.tz == tz && day.date == date => f(day),
            _ => f(entry.insert(LocalDay::new(tz, date))),
        }
    })
}

/// Federal calling hours on local `date` in `tz`.
pub(super) fn federal_hours(tz: Tz, date: NaiveDate) -> Option<Interval> {
    with_day(tz, date, |day| day.federal)
}

/// `resolve_local(tz, date.and_time(time))`, memoised.
pub(super) fn resolve(tz: Tz, date: NaiveDate, time: NaiveTime) -> DateTime<Utc> {
    with_day(tz, date, |day| day.resolve(time))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::America::{Chicago, New_York, Phoenix, St_Johns};
    use chrono_tz::Australia::Lord_Howe;
    use chrono_tz::Pacific::Apia;
    use proptest::prelude::*;

    fn zones() -> [Tz; 7] {
        [
            Chicago,
            Phoenix,
            New_York,
            St_Johns,
            Lord_Howe, // a half-hour DST shift
            Apia,      // skipped a whole day in 2011
            Tz::UTC,
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The memo answers exactly as resolve_local, asked in any order,
        /// on ordinary days and on DST days (the dates run over 2010-2013
        /// and 2024-2027, crossing every change of those years).
        #[test]
        fn memo_matches_resolve_local(
            asks in prop::collection::vec((0usize..7, 0i64..(8 * 366), 0u32..(24 * 60 * 60)), 1..40),
        ) {
            for (zone, day, second) in asks {
                let tz = zones()[zone];
                let base = if day < 4 * 366 { (2010, day) } else { (2024, day - 4 * 366) };
                let date = NaiveDate::from_ymd_opt(base.0, 1, 1).unwrap()
                    + chrono::TimeDelta::days(base.1);
                let time = NaiveTime::from_num_seconds_from_midnight_opt(second, 0).unwrap();
                prop_assert_eq!(resolve(tz, date, time), resolve_local(tz, date.and_time(time)));
                let federal = federal_hours(tz, date);
                let open = resolve_local(tz, date.and_time(FEDERAL_EARLIEST));
                let close = resolve_local(tz, date.and_time(FEDERAL_LATEST));
                prop_assert_eq!(federal, (open < close).then(|| Interval::new(open, close)));
            }
        }
    }

    #[test]
    fn dst_days_resolve_as_resolve_local() {
        // Spring forward and fall back in Chicago, 2026: a gap and an overlap.
        for (date, time) in [
            ((2026, 3, 8), (2, 30)),
            ((2026, 11, 1), (1, 30)),
            ((2026, 3, 8), (8, 0)),
        ] {
            let date = NaiveDate::from_ymd_opt(date.0, date.1, date.2).unwrap();
            let time = NaiveTime::from_hms_opt(time.0, time.1, 0).unwrap();
            for _ in 0..2 {
                assert_eq!(
                    resolve(Chicago, date, time),
                    resolve_local(Chicago, date.and_time(time))
                );
            }
        }
    }
}

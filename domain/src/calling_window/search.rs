//! The window's allowed intervals computed from its rules, zone by zone and
//! local day by local day: the ground truth that [`super::day_table`]
//! caches, and the slow path for long searches.

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use chrono_tz::Tz;

use super::intervals::{self, intersect, Interval};
use super::{local_day, CallingWindow, FIRST_CHUNK, MAX_CHUNK};

impl CallingWindow {
    /// Whether `at` is allowed, from the rules: in every zone, an occurrence
    /// that started on the local day of `at` or the day before allows it.
    pub(super) fn allowed_from_rules(&self, at: DateTime<Utc>) -> bool {
        self.zones.iter().all(|&tz| {
            let today = local_date(tz, at);
            let yesterday = today.pred_opt().unwrap_or(today);
            self.day_allows(tz, yesterday, at) || self.day_allows(tz, today, at)
        })
    }

    /// Allowed intervals in one zone for occurrences starting on local
    /// dates `first..=last`, sorted and merged.
    fn zone_intervals(&self, tz: Tz, first: NaiveDate, last: NaiveDate) -> Vec<Interval> {
        let mut out = Vec::new();
        let mut date = first;
        while date <= last {
            let federal_today = local_day::federal_hours(tz, date);
            let federal_tomorrow = date
                .succ_opt()
                .and_then(|d| local_day::federal_hours(tz, d));
            for rule in &self.campaign.rules {
                let Some((open, close)) = rule.occurrence(tz, date) else {
                    continue;
                };
                let occurrence = Interval::new(open, close);
                for federal in [federal_today, federal_tomorrow].into_iter().flatten() {
                    if let Some(piece) = occurrence.intersection(&federal) {
                        out.push(piece);
                    }
                }
            }
            match date.succ_opt() {
                Some(next) => date = next,
                None => break,
            }
        }
        intervals::normalise(out)
    }

    /// Whether an occurrence starting on local `date` allows `at`: the
    /// pieces [`Self::zone_intervals`] builds for that date, checked in
    /// place (an instant lies in the intersection of two intervals exactly
    /// when it lies in both), without building them.
    fn day_allows(&self, tz: Tz, date: NaiveDate, at: DateTime<Utc>) -> bool {
        let in_occurrence = self.campaign.rules.iter().any(|rule| {
            rule.occurrence(tz, date)
                .is_some_and(|(open, close)| open <= at && at < close)
        });
        in_occurrence
            && [Some(date), date.succ_opt()]
                .into_iter()
                .flatten()
                .any(|d| {
                    local_day::federal_hours(tz, d).is_some_and(|federal| federal.contains(at))
                })
    }

    /// The allowed intervals (intersection over zones) that meet
    /// `[from, to)`, whole, not clipped.
    ///
    /// Why only those: an allowed interval lies inside one local day's
    /// federal hours in every zone (the 21:00-08:00 gap keeps days apart),
    /// so one built from occurrences of the local days around `[from, to)`
    /// is whole when it meets that range. One that ended earlier may lack
    /// pieces from older occurrences and start later than it really does:
    /// a false opening.
    pub(super) fn intervals_around(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Interval> {
        let mut result: Option<Vec<Interval>> = None;
        for &tz in &self.zones {
            // One day either side covers occurrences that started the
            // evening before (midnight crossers) and every offset.
            let first = local_date(tz, from).pred_opt().unwrap_or(NaiveDate::MIN);
            let last = local_date(tz, to).succ_opt().unwrap_or(NaiveDate::MAX);
            let mine = self.zone_intervals(tz, first, last);
            result = Some(match result {
                None => mine,
                Some(acc) => intersect(&acc, &mine),
            });
        }
        let mut meeting = result.unwrap_or_default();
        meeting.retain(|iv| iv.end > from && iv.start < to);
        meeting
    }

    /// Walks forward from `at` a chunk at a time, returning the first
    /// answer `pick` gives that is no later than `horizon`.
    pub(super) fn scan(
        &self,
        at: DateTime<Utc>,
        horizon: DateTime<Utc>,
        pick: impl Fn(&Interval) -> Option<DateTime<Utc>>,
    ) -> Option<DateTime<Utc>> {
        // Chunks are half-open; ending just past the horizon keeps an
        // interval that opens exactly at the horizon.
        let end = horizon
            .checked_add_signed(TimeDelta::nanoseconds(1))
            .unwrap_or(horizon);
        let mut from = at;
        let mut chunk = FIRST_CHUNK;
        while from < end {
            let to = from.checked_add_signed(chunk).unwrap_or(end).min(end);
            chunk = (chunk * 2).min(MAX_CHUNK);
            // Each interval meets some chunk, and an interval meeting two
            // gives the same answer in both, so the first answer is the
            // first overall.
            for iv in self.intervals_around(from, to) {
                if let Some(found) = pick(&iv) {
                    return (found <= horizon).then_some(found);
                }
            }
            from = to;
        }
        None
    }
}

pub(super) fn local_date(tz: Tz, at: DateTime<Utc>) -> NaiveDate {
    at.with_timezone(&tz).date_naive()
}

//! Counting launches per window, for the summary and the cap checks: how
//! many jobs start in a span, and the largest count in any rolling or
//! epoch-aligned window.

use chrono::{DateTime, TimeDelta, Utc};

use super::{whole_seconds, SlotGrid};

impl SlotGrid {
    /// Jobs whose slot starts in `[from, to)`.
    pub fn count_between(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> usize {
        let (first, end) = (
            self.slot_index_at_or_after(from),
            self.slot_index_at_or_after(to),
        );
        if first >= end {
            return 0;
        }
        self.slots
            .range(first..end)
            .map(|(_, jobs)| jobs.len())
            .sum()
    }

    /// The largest number of jobs starting within any half-open window of
    /// length `window`, wherever it begins (at most 4 for 5 minutes with
    /// the default config).
    pub fn max_in_rolling_window(&self, window: TimeDelta) -> usize {
        let window = whole_seconds(window);
        let slot = u64::from(self.config.slot_seconds);
        // A window [t, t + w) holds the starts of slots i..i+k, where k is
        // the number of slot starts that fit; the busiest such window
        // begins at an occupied slot, so sliding over those is enough.
        let span = window.div_ceil(slot);
        if span == 0 {
            return 0;
        }
        let occupied: Vec<(u64, usize)> = self.slots.iter().map(|(&i, j)| (i, j.len())).collect();
        let (mut best, mut sum, mut tail) = (0, 0, 0);
        for &(index, count) in &occupied {
            sum += count;
            while occupied[tail].0 + span <= index {
                sum -= occupied[tail].1;
                tail += 1;
            }
            best = best.max(sum);
        }
        best
    }

    /// The largest number of jobs in any window of length `window` aligned
    /// to the grid epoch (00:00–00:05, 00:05–00:10, ... for 5 minutes).
    pub fn max_in_fixed_window(&self, window: TimeDelta) -> usize {
        let window = whole_seconds(window).max(1);
        let slot = u64::from(self.config.slot_seconds);
        let mut best = 0;
        let mut current: Option<(u64, usize)> = None;
        for (&index, jobs) in &self.slots {
            let bucket = index.saturating_mul(slot) / window;
            current = match current {
                Some((b, n)) if b == bucket => Some((b, n + jobs.len())),
                _ => Some((bucket, jobs.len())),
            };
            best = best.max(current.map_or(0, |(_, n)| n));
        }
        best
    }
}

//! An index of the stretches of consecutive full slots, so the allocator
//! jumps over a booked stretch in one lookup instead of walking it.
//!
//! Runs are maximal and never touch (a run ends where a not-full slot
//! begins), so the end of the run containing a slot is the first slot
//! after it that has room.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FullRuns {
    /// Start slot → end slot (exclusive) of each run of full slots.
    runs: BTreeMap<u64, u64>,
}

impl FullRuns {
    /// The first slot at or after `slot` that is not full.
    pub(super) fn skip_full(&self, slot: u64) -> u64 {
        match self.runs.range(..=slot).next_back() {
            Some((_, &end)) if slot < end => end,
            _ => slot,
        }
    }

    /// Records that `slot` became full, merging with the runs beside it.
    pub(super) fn mark_full(&mut self, slot: u64) {
        let next = slot.saturating_add(1);
        let left = self
            .runs
            .range(..slot)
            .next_back()
            .filter(|(_, &end)| end == slot)
            .map(|(&start, _)| start);
        let right_end = self.runs.remove(&next);
        let start = left.unwrap_or(slot);
        let end = right_end.unwrap_or(next);
        self.runs.insert(start, end);
    }

    /// Records that `slot` has room again, splitting the run it was in.
    pub(super) fn mark_not_full(&mut self, slot: u64) {
        let Some((&start, &end)) = self.runs.range(..=slot).next_back() else {
            return;
        };
        if slot >= end {
            return;
        }
        self.runs.remove(&start);
        if start < slot {
            self.runs.insert(start, slot);
        }
        let next = slot.saturating_add(1);
        if next < end {
            self.runs.insert(next, end);
        }
    }

    /// Rebuilds the index from the slots that are full, in ascending order.
    pub(super) fn from_full_slots(full: impl IntoIterator<Item = u64>) -> Self {
        let mut runs = BTreeMap::new();
        let mut current: Option<(u64, u64)> = None;
        for slot in full {
            current = match current {
                Some((start, end)) if end == slot => Some((start, slot.saturating_add(1))),
                Some((start, end)) => {
                    runs.insert(start, end);
                    Some((slot, slot.saturating_add(1)))
                }
                None => Some((slot, slot.saturating_add(1))),
            };
        }
        if let Some((start, end)) = current {
            runs.insert(start, end);
        }
        FullRuns { runs }
    }

    #[cfg(test)]
    pub(super) fn runs(&self) -> Vec<(u64, u64)> {
        self.runs.iter().map(|(&s, &e)| (s, e)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_split_and_skip() {
        let mut r = FullRuns::default();
        for s in [3, 5, 4, 10] {
            r.mark_full(s);
        }
        assert_eq!(r.runs(), vec![(3, 6), (10, 11)]);
        assert_eq!(
            [2, 3, 4, 5, 6, 10, 11].map(|s| r.skip_full(s)),
            [2, 6, 6, 6, 6, 11, 11]
        );
        r.mark_not_full(4);
        assert_eq!(r.runs(), vec![(3, 4), (5, 6), (10, 11)]);
        r.mark_not_full(3);
        r.mark_not_full(7); // not full: nothing to do
        assert_eq!(r.runs(), vec![(5, 6), (10, 11)]);
        assert_eq!(r, FullRuns::from_full_slots([5, 10]));
        assert_eq!(
            FullRuns::from_full_slots([1, 2, 3, 7, 9, 10]).runs(),
            vec![(1, 4), (7, 8), (9, 11)]
        );
    }
}

//! Pure commit decisions: when to commit, and which offsets.

use std::collections::BTreeMap;
use std::time::Duration;

/// Commit every `interval` or every `max_records` inputs, whichever comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitPolicy {
    pub interval: Duration,
    pub max_records: usize,
}

impl Default for CommitPolicy {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(100),
            max_records: 10_000,
        }
    }
}

impl CommitPolicy {
    /// Whether the open transaction should commit now.
    pub fn due(&self, open_for: Duration, records: usize, requested: bool) -> bool {
        requested || records >= self.max_records || open_for >= self.interval
    }
}

/// The next offset to consume per input partition, for the records handled
/// in the open transaction (what `send_offsets_to_transaction` commits).
/// Keyed by topic, then partition, so noting a record looks the topic up by
/// `&str` and copies its name only the first time in a transaction.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OffsetTracker {
    next: BTreeMap<String, BTreeMap<i32, i64>>,
}

impl OffsetTracker {
    /// Notes that `offset` of `topic`/`partition` was handled.
    pub fn handled(&mut self, topic: &str, partition: i32, offset: i64) {
        let next = offset + 1;
        let partitions = match self.next.get_mut(topic) {
            Some(partitions) => partitions,
            None => self.next.entry(topic.to_string()).or_default(),
        };
        let current = partitions.entry(partition).or_insert(next);
        *current = (*current).max(next);
    }

    pub fn is_empty(&self) -> bool {
        self.next.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, i32, i64)> {
        self.next
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |(p, o)| (t.as_str(), *p, *o)))
    }

    /// Forgets the partitions whose number is in `partitions` (revoked).
    pub fn forget_partitions(&mut self, partitions: &[i32]) {
        for offsets in self.next.values_mut() {
            offsets.retain(|p, _| !partitions.contains(p));
        }
        self.next.retain(|_, offsets| !offsets.is_empty());
    }

    pub fn clear(&mut self) {
        self.next.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_is_due_on_time_count_or_request() {
        let policy = CommitPolicy {
            interval: Duration::from_millis(100),
            max_records: 3,
        };
        let cases = [
            (0, 0, false, false),
            (99, 2, false, false),
            (100, 0, false, true),
            (10, 3, false, true),
            (0, 0, true, true),
        ];
        for (ms, records, requested, due) in cases {
            assert_eq!(
                policy.due(Duration::from_millis(ms), records, requested),
                due,
                "{ms} ms, {records} records, requested {requested}"
            );
        }
    }

    #[test]
    fn tracker_commits_the_offset_after_the_highest_handled() {
        let mut tracker = OffsetTracker::default();
        tracker.handled("a", 0, 5);
        tracker.handled("a", 0, 3);
        tracker.handled("b", 1, 0);
        let offsets: Vec<_> = tracker.iter().collect();
        assert_eq!(offsets, vec![("a", 0, 6), ("b", 1, 1)]);
        tracker.forget_partitions(&[0]);
        assert_eq!(tracker.iter().count(), 1);
    }
}

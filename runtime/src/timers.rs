//! The timer index: the timers of one partition ordered by due time, per
//! clock, for firing. The timers themselves are entries of the internal
//! timer store (layout in `api::timer_key`), so they go to the changelog
//! with the rest of the state and come back with it on restore.
//!
//! The index holds the store keys themselves (not decoded handles): the
//! timer store is the one source of truth, a timer's due time is read from
//! its entry, and a restore builds the index without decoding a handle.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use crate::api::timer_key::{entry_due, split_key};
use crate::api::TimeDomain;
use crate::store::Bytes;

/// A timer's store key, ordered as its handle is (name, then timer key), so
/// timers due at the same moment fire in the same order as before the index
/// held store keys.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IndexKey(Bytes);

impl IndexKey {
    /// Name and timer key, for ordering: no UTF-8 check (only valid keys
    /// are indexed, and timers due at the same moment compare often).
    fn parts(&self) -> (&[u8], &[u8]) {
        let bytes = self.0.as_slice();
        let name_len = match bytes.get(1..3) {
            Some(&[hi, lo]) => usize::from(u16::from_be_bytes([hi, lo])),
            _ => return (&[], bytes),
        };
        match (bytes.get(3..3 + name_len), bytes.get(3 + name_len..)) {
            (Some(name), Some(key)) => (name, key),
            // Not a timer key; this arm keeps `cmp` total.
            _ => (&[], bytes),
        }
    }
}

impl Ord for IndexKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl PartialOrd for IndexKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Timers of one partition ordered by due time, per clock. A timer of
/// either clock is in both orders, so each clock finds it when it passes.
#[derive(Debug, Default)]
pub(crate) struct TimerIndex {
    event: BTreeSet<(i64, IndexKey)>,
    wall: BTreeSet<(i64, IndexKey)>,
    /// Timers of either clock (counted once in `len`, indexed twice).
    either: usize,
}

/// Moves `key` in one order from `old` to `new`, reusing the indexed copy
/// of the key; only a new entry costs a copy.
fn move_in(
    set: &mut BTreeSet<(i64, IndexKey)>,
    key: Bytes,
    old: Option<i64>,
    new: Option<i64>,
) -> Bytes {
    let probe = (old.unwrap_or_default(), IndexKey(key));
    let indexed = match old {
        Some(_) => set.take(&probe).map(|(_, k)| k),
        None => None,
    };
    if let Some(new) = new {
        let stored = indexed.unwrap_or_else(|| probe.1.clone());
        set.insert((new, stored));
    }
    probe.1 .0
}

impl TimerIndex {
    fn domain_ref(&self, domain: TimeDomain) -> &BTreeSet<(i64, IndexKey)> {
        match domain {
            TimeDomain::EventTime => &self.event,
            TimeDomain::WallClock | TimeDomain::Either => &self.wall,
        }
    }

    /// The timer stored under `key` moved from `old` to `new` (`None`: not
    /// set). Hands `key` back. Keys that are not timer keys are ignored.
    pub fn update(&mut self, key: Bytes, old: Option<i64>, new: Option<i64>) -> Bytes {
        if old == new {
            return key;
        }
        let Some((domain, _, _)) = split_key(&key) else {
            return key;
        };
        match domain {
            TimeDomain::EventTime => move_in(&mut self.event, key, old, new),
            TimeDomain::WallClock => move_in(&mut self.wall, key, old, new),
            TimeDomain::Either => {
                match (old, new) {
                    (None, Some(_)) => self.either += 1,
                    (Some(_), None) => self.either -= 1,
                    _ => {}
                }
                let key = move_in(&mut self.event, key, old, new);
                move_in(&mut self.wall, key, old, new)
            }
        }
    }

    pub fn len(&self) -> usize {
        self.event.len() + self.wall.len() - self.either
    }

    /// Rebuilds the index from the timer store's entries (restore, rollback):
    /// collected, then built in bulk from sorted runs.
    pub fn rebuild<'a>(&mut self, entries: impl Iterator<Item = (&'a Bytes, &'a Bytes)>) {
        let mut event = Vec::new();
        let mut wall = Vec::new();
        let mut either = 0;
        for (key, value) in entries {
            let (Some((domain, _, _)), Some(due)) = (split_key(key), entry_due(value)) else {
                continue;
            };
            let item = (due, IndexKey(key.clone()));
            match domain {
                TimeDomain::EventTime => event.push(item),
                TimeDomain::WallClock => wall.push(item),
                TimeDomain::Either => {
                    either += 1;
                    event.push(item.clone());
                    wall.push(item);
                }
            }
        }
        event.sort_unstable();
        wall.sort_unstable();
        self.event = event.into_iter().collect();
        self.wall = wall.into_iter().collect();
        self.either = either;
    }

    /// The earliest due time on `clock` (event time or the wall clock).
    pub fn next_due(&self, clock: TimeDomain) -> Option<i64> {
        self.domain_ref(clock).first().map(|(due, _)| *due)
    }

    /// The earliest timer due at or before `now` on `clock`: its due time
    /// and store key.
    pub fn first_due(&self, clock: TimeDomain, now_ms: i64) -> Option<(i64, &[u8])> {
        self.domain_ref(clock)
            .first()
            .filter(|(due, _)| *due <= now_ms)
            .map(|(due, key)| (*due, key.0.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::timer_key::{encode_entry, encode_handle, STREAM_TIME_KEY};
    use crate::api::TimerHandle;
    use proptest::prelude::*;

    fn handle(domain: TimeDomain, name: &str, key: &[u8]) -> TimerHandle {
        TimerHandle {
            domain,
            name: name.into(),
            key: key.to_vec(),
        }
    }

    proptest! {
        #[test]
        fn index_keys_order_as_handles(a in ".{0,6}", b in ".{0,6}", x in proptest::collection::vec(any::<u8>(), 0..6), y in proptest::collection::vec(any::<u8>(), 0..6)) {
            let (h1, h2) = (handle(TimeDomain::WallClock, &a, &x), handle(TimeDomain::WallClock, &b, &y));
            let (k1, k2) = (IndexKey(encode_handle(&h1)), IndexKey(encode_handle(&h2)));
            prop_assert_eq!(k1.cmp(&k2), h1.cmp(&h2));
        }
    }

    fn set(index: &mut TimerIndex, h: &TimerHandle, old: Option<i64>, new: Option<i64>) {
        let key = encode_handle(h);
        assert_eq!(index.update(key.clone(), old, new), key);
    }

    #[test]
    fn index_orders_by_due_and_moves_a_timer_set_twice() {
        let mut index = TimerIndex::default();
        let a = handle(TimeDomain::WallClock, "a", b"k");
        let b = handle(TimeDomain::WallClock, "b", b"k");
        let e = handle(TimeDomain::EventTime, "a", b"k");
        set(&mut index, &a, None, Some(300));
        set(&mut index, &b, None, Some(200));
        set(&mut index, &e, None, Some(100));
        assert_eq!(index.next_due(TimeDomain::WallClock), Some(200));
        let b_key = encode_handle(&b);
        assert_eq!(
            index.first_due(TimeDomain::WallClock, 250),
            Some((200, b_key.as_slice()))
        );
        assert_eq!(index.first_due(TimeDomain::WallClock, 150), None);
        set(&mut index, &b, Some(200), Some(400));
        let a_key = encode_handle(&a);
        assert_eq!(
            index.first_due(TimeDomain::WallClock, 350),
            Some((300, a_key.as_slice()))
        );
        set(&mut index, &a, Some(300), None);
        assert_eq!(index.next_due(TimeDomain::WallClock), Some(400));
        assert_eq!(index.next_due(TimeDomain::EventTime), Some(100));
        assert_eq!(index.len(), 2);
    }

    #[test]
    fn a_timer_of_either_clock_is_due_on_both_and_counted_once() {
        let mut index = TimerIndex::default();
        let x = handle(TimeDomain::Either, "x", b"k");
        let key = encode_handle(&x);
        set(&mut index, &x, None, Some(100));
        assert_eq!(index.len(), 1);
        assert_eq!(
            index.first_due(TimeDomain::EventTime, 100),
            Some((100, key.as_slice()))
        );
        assert_eq!(
            index.first_due(TimeDomain::WallClock, 100),
            Some((100, key.as_slice()))
        );
        set(&mut index, &x, Some(100), Some(200));
        assert_eq!(index.next_due(TimeDomain::EventTime), Some(200));
        assert_eq!(index.next_due(TimeDomain::WallClock), Some(200));
        set(&mut index, &x, Some(200), None);
        assert_eq!(index.len(), 0);
        assert_eq!(index.next_due(TimeDomain::WallClock), None);
        index.rebuild(
            [(key.clone(), encode_entry(5, b""))]
                .iter()
                .map(|(k, v)| (k, v)),
        );
        assert_eq!(index.len(), 1);
        assert_eq!(index.next_due(TimeDomain::EventTime), Some(5));
    }

    #[test]
    fn rebuild_indexes_timer_entries_and_skips_the_rest() {
        let a = encode_handle(&handle(TimeDomain::WallClock, "a", b"1"));
        let e = encode_handle(&handle(TimeDomain::EventTime, "a", b"1"));
        let entries = [
            (a.clone(), encode_entry(20, b"p")),
            (e.clone(), encode_entry(10, b"")),
            (STREAM_TIME_KEY.to_vec(), 5i64.to_be_bytes().to_vec()),
            (vec![7, 0], vec![1]),
        ];
        let mut index = TimerIndex::default();
        index.rebuild(entries.iter().map(|(k, v)| (k, v)));
        assert_eq!(index.len(), 2);
        assert_eq!(
            index.first_due(TimeDomain::EventTime, 10),
            Some((10, e.as_slice()))
        );
        assert_eq!(index.next_due(TimeDomain::WallClock), Some(20));
    }
}

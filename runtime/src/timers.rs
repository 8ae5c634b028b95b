//! Durable timers: kept as entries of an internal store, so they go to the
//! changelog with the rest of the state and come back with it on restore.
//! An in-memory index orders them by due time for firing.
//!
//! Store layout (`__timers`): key = domain byte, name length (u16 BE), name,
//! timer key; value = due time (i64 BE) followed by the payload. The
//! partition's stream time is stored under the one-byte key `STREAM_TIME_KEY`.
//!
//! The index holds the store keys themselves (not decoded handles): the
//! timer store is the one source of truth, a timer's due time is read from
//! its entry, and a restore builds the index without decoding a handle.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use crate::api::{TimeDomain, Timer, TimerHandle};
use crate::store::Bytes;

/// Key of the stream-time entry; no timer key starts with 0xFF.
pub(crate) const STREAM_TIME_KEY: &[u8] = &[0xFF];

/// The domain byte. `Either` (2) came later: changelogs written before it
/// hold only 0 and 1 and restore unchanged; a runtime older than it skips
/// such timers, so it must not restore a changelog written by this one.
fn domain_byte(domain: TimeDomain) -> u8 {
    match domain {
        TimeDomain::EventTime => 0,
        TimeDomain::WallClock => 1,
        TimeDomain::Either => 2,
    }
}

fn domain_from(byte: u8) -> Option<TimeDomain> {
    match byte {
        0 => Some(TimeDomain::EventTime),
        1 => Some(TimeDomain::WallClock),
        2 => Some(TimeDomain::Either),
        _ => None,
    }
}

/// The store key of timer (`domain`, `name`, `key`), appended to `out`.
fn encode_parts(domain: TimeDomain, name: &str, key: &[u8], out: &mut Vec<u8>) {
    let name = name.as_bytes();
    let name_len = u16::try_from(name.len()).unwrap_or(u16::MAX);
    out.push(domain_byte(domain));
    out.extend_from_slice(&name_len.to_be_bytes());
    out.extend_from_slice(&name[..usize::from(name_len)]);
    out.extend_from_slice(key);
}

pub(crate) fn encode_key(domain: TimeDomain, name: &str, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(3 + name.len() + key.len());
    encode_parts(domain, name, key, &mut out);
    out
}

pub(crate) fn encode_handle(handle: &TimerHandle) -> Vec<u8> {
    encode_key(handle.domain, &handle.name, &handle.key)
}

/// Runs `f` on the store key of a timer, built on the stack when it is
/// short (a lookup needs the key's bytes, not an owned copy of them).
pub(crate) fn with_key<R>(
    domain: TimeDomain,
    name: &str,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
) -> R {
    const STACK: usize = 128;
    let len = 3 + name.len() + key.len();
    if len > STACK || name.len() > usize::from(u16::MAX) {
        return f(&encode_key(domain, name, key));
    }
    let mut buf = [0u8; STACK];
    buf[0] = domain_byte(domain);
    buf[1..3].copy_from_slice(&(name.len() as u16).to_be_bytes());
    buf[3..3 + name.len()].copy_from_slice(name.as_bytes());
    buf[3 + name.len()..len].copy_from_slice(key);
    f(&buf[..len])
}

/// A store key split into its domain, name and timer key, unless it is not
/// a timer key (the stream-time entry, or bytes from a foreign writer).
fn split_key(bytes: &[u8]) -> Option<(TimeDomain, &str, &[u8])> {
    let (&domain, rest) = bytes.split_first()?;
    let domain = domain_from(domain)?;
    let len = usize::from(u16::from_be_bytes(rest.get(..2)?.try_into().ok()?));
    let name = std::str::from_utf8(rest.get(2..2 + len)?).ok()?;
    Some((domain, name, rest.get(2 + len..)?))
}

pub(crate) fn decode_handle(bytes: &[u8]) -> Option<TimerHandle> {
    let (domain, name, key) = split_key(bytes)?;
    Some(TimerHandle {
        domain,
        name: name.to_string(),
        key: key.to_vec(),
    })
}

pub(crate) fn encode_entry(due_ms: i64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + payload.len());
    out.extend_from_slice(&due_ms.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

pub(crate) fn decode_entry(bytes: &[u8]) -> Option<(i64, &[u8])> {
    let due = i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    Some((due, &bytes[8..]))
}

/// The due time of a stored entry.
pub(crate) fn entry_due(bytes: &[u8]) -> Option<i64> {
    decode_entry(bytes).map(|(due, _)| due)
}

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

/// Builds a `Timer` from its store key and entry.
pub(crate) fn timer_from_entry(key: &[u8], entry: &[u8]) -> Option<Timer> {
    let handle = decode_handle(key)?;
    let (due_ms, payload) = decode_entry(entry)?;
    Some(Timer {
        handle,
        due_ms,
        payload: payload.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
        fn handles_round_trip(name in ".{0,40}", key in proptest::collection::vec(any::<u8>(), 0..40), domain in 0..3u8) {
            let domain = domain_from(domain).unwrap_or(TimeDomain::EventTime);
            let h = handle(domain, &name, &key);
            prop_assert_eq!(decode_handle(&encode_handle(&h)), Some(h.clone()));
            let on_stack = with_key(domain, &name, &key, <[u8]>::to_vec);
            prop_assert_eq!(on_stack, encode_handle(&h));
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_handle(&bytes);
            let _ = decode_entry(&bytes);
        }

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

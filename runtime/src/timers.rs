//! Durable timers: kept as entries of an internal store, so they go to the
//! changelog with the rest of the state and come back with it on restore.
//! An in-memory index orders them by due time for firing.
//!
//! Store layout (`__timers`): key = domain byte, name length (u16 BE), name,
//! timer key; value = due time (i64 BE) followed by the payload. The
//! partition's stream time is stored under the one-byte key `STREAM_TIME_KEY`.

use std::collections::{BTreeSet, HashMap};

use crate::api::{TimeDomain, Timer, TimerHandle};

/// Key of the stream-time entry; no timer key starts with 0xFF.
pub(crate) const STREAM_TIME_KEY: &[u8] = &[0xFF];

fn domain_byte(domain: TimeDomain) -> u8 {
    match domain {
        TimeDomain::EventTime => 0,
        TimeDomain::WallClock => 1,
    }
}

pub(crate) fn encode_handle(handle: &TimerHandle) -> Vec<u8> {
    let name = handle.name.as_bytes();
    let name_len = u16::try_from(name.len()).unwrap_or(u16::MAX);
    let mut out = Vec::with_capacity(3 + name.len() + handle.key.len());
    out.push(domain_byte(handle.domain));
    out.extend_from_slice(&name_len.to_be_bytes());
    out.extend_from_slice(&name[..usize::from(name_len)]);
    out.extend_from_slice(&handle.key);
    out
}

pub(crate) fn decode_handle(bytes: &[u8]) -> Option<TimerHandle> {
    let (&domain, rest) = bytes.split_first()?;
    let domain = match domain {
        0 => TimeDomain::EventTime,
        1 => TimeDomain::WallClock,
        _ => return None,
    };
    let len = usize::from(u16::from_be_bytes(rest.get(..2)?.try_into().ok()?));
    let name = std::str::from_utf8(rest.get(2..2 + len)?).ok()?.to_string();
    let key = rest.get(2 + len..)?.to_vec();
    Some(TimerHandle { domain, name, key })
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

/// Timers of one partition ordered by due time, per domain.
#[derive(Debug, Default)]
pub(crate) struct TimerIndex {
    by_due: BTreeSet<(TimeDomain, i64, TimerHandle)>,
    due_of: HashMap<TimerHandle, i64>,
}

impl TimerIndex {
    pub fn set(&mut self, handle: TimerHandle, due_ms: i64) {
        if let Some(old) = self.due_of.insert(handle.clone(), due_ms) {
            self.by_due.remove(&(handle.domain, old, handle.clone()));
        }
        self.by_due.insert((handle.domain, due_ms, handle));
    }

    pub fn remove(&mut self, handle: &TimerHandle) {
        if let Some(old) = self.due_of.remove(handle) {
            self.by_due.remove(&(handle.domain, old, handle.clone()));
        }
    }

    pub fn len(&self) -> usize {
        self.due_of.len()
    }

    pub fn clear(&mut self) {
        self.by_due.clear();
        self.due_of.clear();
    }

    /// The earliest due time in `domain`.
    pub fn next_due(&self, domain: TimeDomain) -> Option<i64> {
        self.by_due
            .range((domain, i64::MIN, min_handle(domain))..)
            .next()
            .filter(|(d, _, _)| *d == domain)
            .map(|(_, due, _)| *due)
    }

    /// The earliest timer due at or before `now` in `domain`.
    pub fn first_due(&self, domain: TimeDomain, now_ms: i64) -> Option<(i64, TimerHandle)> {
        self.by_due
            .range((domain, i64::MIN, min_handle(domain))..)
            .next()
            .filter(|(d, due, _)| *d == domain && *due <= now_ms)
            .map(|(_, due, handle)| (*due, handle.clone()))
    }
}

fn min_handle(domain: TimeDomain) -> TimerHandle {
    TimerHandle {
        domain,
        name: String::new(),
        key: Vec::new(),
    }
}

/// Builds a `Timer` from a stored entry.
pub(crate) fn timer_from_entry(handle: TimerHandle, entry: &[u8]) -> Option<Timer> {
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
        fn handles_round_trip(name in ".{0,40}", key in proptest::collection::vec(any::<u8>(), 0..40), wall in any::<bool>()) {
            let domain = if wall { TimeDomain::WallClock } else { TimeDomain::EventTime };
            let h = handle(domain, &name, &key);
            prop_assert_eq!(decode_handle(&encode_handle(&h)), Some(h));
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_handle(&bytes);
            let _ = decode_entry(&bytes);
        }
    }

    #[test]
    fn index_orders_by_due_and_moves_a_timer_set_twice() {
        let mut index = TimerIndex::default();
        let a = handle(TimeDomain::WallClock, "a", b"k");
        let b = handle(TimeDomain::WallClock, "b", b"k");
        let e = handle(TimeDomain::EventTime, "a", b"k");
        index.set(a.clone(), 300);
        index.set(b.clone(), 200);
        index.set(e.clone(), 100);
        assert_eq!(index.next_due(TimeDomain::WallClock), Some(200));
        assert_eq!(
            index.first_due(TimeDomain::WallClock, 250),
            Some((200, b.clone()))
        );
        assert_eq!(index.first_due(TimeDomain::WallClock, 150), None);
        index.set(b.clone(), 400);
        assert_eq!(
            index.first_due(TimeDomain::WallClock, 350),
            Some((300, a.clone()))
        );
        index.remove(&a);
        assert_eq!(index.next_due(TimeDomain::WallClock), Some(400));
        assert_eq!(index.next_due(TimeDomain::EventTime), Some(100));
        assert_eq!(index.len(), 2);
    }
}

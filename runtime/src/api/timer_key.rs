//! How a timer is kept: as an entry of the internal timer store, so timers
//! go to the changelog with the rest of the state and come back with it on
//! restore. Crate-private; the context writes these entries and the engine's
//! timer index reads them.
//!
//! Store layout (`__timers`): key = domain byte, name length (u16 BE), name,
//! timer key; value = due time (i64 BE) followed by the payload. The
//! partition's stream time is stored under the one-byte key `STREAM_TIME_KEY`.
//! The layout is on disk (in changelogs): changing it needs a migration.

use super::timer::{TimeDomain, Timer, TimerHandle};

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
pub(crate) fn split_key(bytes: &[u8]) -> Option<(TimeDomain, &str, &[u8])> {
    let (&domain, rest) = bytes.split_first()?;
    let domain = domain_from(domain)?;
    let len = usize::from(u16::from_be_bytes(rest.get(..2)?.try_into().ok()?));
    let name = std::str::from_utf8(rest.get(2..2 + len)?).ok()?;
    Some((domain, name, rest.get(2 + len..)?))
}

fn decode_handle(bytes: &[u8]) -> Option<TimerHandle> {
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

fn decode_entry(bytes: &[u8]) -> Option<(i64, &[u8])> {
    let due = i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    Some((due, &bytes[8..]))
}

/// The due time of a stored entry.
pub(crate) fn entry_due(bytes: &[u8]) -> Option<i64> {
    decode_entry(bytes).map(|(due, _)| due)
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
    }
}

//! Keyed state of one partition (a task), with the bookkeeping of the open
//! transaction: which keys changed (to write to the changelog at commit)
//! and what they held before (to undo on abort).
//!
//! A key changed many times in one transaction is written to the changelog
//! once, with its last value, as Kafka Streams' record cache does.
//!
//! Cost per write (the hot path): one hash lookup in the store and one in
//! its undo map, and one copy of the key, only when the key is new to the
//! transaction. Maps hash with foldhash, not SipHash: keys are short and
//! hashing was a fifth of a state write.

use std::collections::HashMap;

use crate::api::Change;

pub(crate) type Bytes = Vec<u8>;

/// A hash map with the runtime's hasher (foldhash, seeded per process).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

#[derive(Debug, Default)]
pub(crate) struct Stores {
    maps: Vec<FastMap<Bytes, Bytes>>,
    /// Per store: keys changed in the open transaction, with the value before it.
    undo: Vec<FastMap<Bytes, Option<Bytes>>>,
}

impl Stores {
    pub fn new(count: usize) -> Self {
        Self {
            maps: (0..count).map(|_| FastMap::default()).collect(),
            undo: (0..count).map(|_| FastMap::default()).collect(),
        }
    }

    pub fn get(&self, store: usize, key: &[u8]) -> Option<&[u8]> {
        self.maps[store].get(key).map(Vec::as_slice)
    }

    pub fn iter(&self, store: usize) -> impl Iterator<Item = (&Bytes, &Bytes)> {
        self.maps[store].iter()
    }

    /// Makes room for `additional` more keys in `store` (restore knows how
    /// many records are coming, and growing a large map step by step
    /// rehashes it again and again).
    pub fn reserve(&mut self, store: usize, additional: usize) {
        self.maps[store].reserve(additional);
    }

    /// Applies a change inside the open transaction.
    pub fn apply(&mut self, change: Change) {
        let Change { store, key, value } = change;
        let map = &mut self.maps[store];
        let undo = &mut self.undo[store];
        match value {
            Some(value) => match map.get_mut(key.as_slice()) {
                Some(slot) => {
                    let previous = std::mem::replace(slot, value);
                    undo.entry(key).or_insert(Some(previous));
                }
                None => {
                    if !undo.contains_key(key.as_slice()) {
                        undo.insert(key.clone(), None);
                    }
                    map.insert(key, value);
                }
            },
            None => {
                let previous = map.remove(key.as_slice());
                undo.entry(key).or_insert(previous);
            }
        }
    }

    /// Writes `value` under `key` inside the open transaction, reusing the
    /// stored buffer: no allocation once the key has changed in this
    /// transaction (the partition's stream time, written on most records).
    pub fn overwrite(&mut self, store: usize, key: &[u8], value: &[u8]) {
        let map = &mut self.maps[store];
        let undo = &mut self.undo[store];
        match map.get_mut(key) {
            Some(slot) if undo.contains_key(key) => {
                slot.clear();
                slot.extend_from_slice(value);
            }
            Some(slot) => {
                let previous = std::mem::replace(slot, value.to_vec());
                undo.insert(key.to_vec(), Some(previous));
            }
            None => {
                if !undo.contains_key(key) {
                    undo.insert(key.to_vec(), None);
                }
                map.insert(key.to_vec(), value.to_vec());
            }
        }
    }

    /// Applies a record read from the changelog (restore): no undo kept, and
    /// a key seen before reuses its buffer.
    pub fn restore(&mut self, store: usize, key: &[u8], value: Option<&[u8]>) {
        let map = &mut self.maps[store];
        match value {
            Some(value) => match map.get_mut(key) {
                Some(slot) => {
                    slot.clear();
                    slot.extend_from_slice(value);
                }
                None => {
                    map.insert(key.to_vec(), value.to_vec());
                }
            },
            None => {
                map.remove(key);
            }
        }
    }

    /// The changes of the open transaction, with their current values, for
    /// the changelog. The transaction's undo log is kept until `committed`.
    pub fn pending_changes(&self) -> Vec<Change> {
        let mut changes = Vec::with_capacity(self.undo.iter().map(FastMap::len).sum());
        self.for_each_pending(|store, key, value| {
            changes.push(Change {
                store,
                key: key.to_vec(),
                value: value.map(<[u8]>::to_vec),
            })
        });
        changes
    }

    /// `pending_changes` without copying them: `f(store, key, current value)`
    /// for every key changed in the open transaction (the commit path writes
    /// them straight to the changelog producer, which copies them anyway).
    pub fn for_each_pending(&self, mut f: impl FnMut(usize, &[u8], Option<&[u8]>)) {
        for (store, (undo, map)) in self.undo.iter().zip(&self.maps).enumerate() {
            for key in undo.keys() {
                f(store, key, map.get(key).map(Vec::as_slice));
            }
        }
    }

    /// The transaction committed: its changes are durable.
    pub fn committed(&mut self) {
        for undo in &mut self.undo {
            undo.clear();
        }
    }

    /// The transaction aborted: put every changed key back as it was.
    pub fn rollback(&mut self) {
        for (undo, map) in self.undo.iter_mut().zip(&mut self.maps) {
            for (key, previous) in undo.drain() {
                match previous {
                    Some(value) => map.insert(key, value),
                    None => map.remove(&key),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(store: usize, key: &str, value: Option<&str>) -> Change {
        Change {
            store,
            key: key.as_bytes().to_vec(),
            value: value.map(|v| v.as_bytes().to_vec()),
        }
    }

    #[test]
    fn rollback_restores_the_state_before_the_transaction() {
        let mut stores = Stores::new(2);
        stores.apply(put(0, "a", Some("1")));
        stores.committed();
        stores.apply(put(0, "a", Some("2")));
        stores.apply(put(0, "a", Some("3")));
        stores.apply(put(0, "b", Some("x")));
        stores.apply(put(1, "a", None));
        stores.overwrite(1, b"t", b"1");
        stores.overwrite(1, b"t", b"2");
        stores.rollback();
        assert_eq!(stores.get(0, b"a"), Some(&b"1"[..]));
        assert_eq!(stores.get(0, b"b"), None);
        assert_eq!(stores.get(1, b"t"), None);
        assert!(stores.pending_changes().is_empty());
    }

    #[test]
    fn pending_changes_hold_each_key_once_with_its_last_value() {
        let mut stores = Stores::new(1);
        stores.apply(put(0, "a", Some("1")));
        stores.apply(put(0, "a", Some("2")));
        stores.apply(put(0, "b", Some("1")));
        stores.apply(put(0, "b", None));
        let mut changes = stores.pending_changes();
        changes.sort_by(|x, y| x.key.cmp(&y.key));
        assert_eq!(changes, vec![put(0, "a", Some("2")), put(0, "b", None)]);
    }

    #[test]
    fn overwrite_keeps_the_value_before_the_transaction_for_rollback() {
        let mut stores = Stores::new(1);
        stores.overwrite(0, b"t", b"1");
        stores.committed();
        stores.overwrite(0, b"t", b"2");
        stores.overwrite(0, b"t", b"3");
        assert_eq!(stores.get(0, b"t"), Some(&b"3"[..]));
        assert_eq!(stores.pending_changes(), vec![put(0, "t", Some("3"))]);
        stores.rollback();
        assert_eq!(stores.get(0, b"t"), Some(&b"1"[..]));
    }

    #[test]
    fn restore_applies_values_and_tombstones_in_order() {
        let mut stores = Stores::new(1);
        stores.restore(0, b"a", Some(b"1"));
        stores.restore(0, b"a", Some(b"22"));
        stores.restore(0, b"b", Some(b"x"));
        stores.restore(0, b"b", None);
        assert_eq!(stores.get(0, b"a"), Some(&b"22"[..]));
        assert_eq!(stores.get(0, b"b"), None);
        assert_eq!(stores.iter(0).count(), 1);
        assert!(stores.pending_changes().is_empty());
    }
}

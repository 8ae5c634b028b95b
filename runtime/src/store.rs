//! Keyed state of one partition (a task), with the bookkeeping of the open
//! transaction: which keys changed (to write to the changelog at commit)
//! and what they held before (to undo on abort).
//!
//! A key changed many times in one transaction is written to the changelog
//! once, with its last value, as Kafka Streams' record cache does.

use std::collections::HashMap;

pub(crate) type Bytes = Vec<u8>;

/// One change of a store, as it goes to (or comes from) the changelog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub store: usize,
    pub key: Bytes,
    /// `None` deletes the key (a tombstone in the changelog).
    pub value: Option<Bytes>,
}

#[derive(Debug, Default)]
pub(crate) struct Stores {
    maps: Vec<HashMap<Bytes, Bytes>>,
    /// Keys changed in the open transaction, with the value before it.
    undo: HashMap<(usize, Bytes), Option<Bytes>>,
}

impl Stores {
    pub fn new(count: usize) -> Self {
        Self {
            maps: (0..count).map(|_| HashMap::new()).collect(),
            undo: HashMap::new(),
        }
    }

    pub fn get(&self, store: usize, key: &[u8]) -> Option<&[u8]> {
        self.maps[store].get(key).map(Vec::as_slice)
    }

    pub fn iter(&self, store: usize) -> impl Iterator<Item = (&Bytes, &Bytes)> {
        self.maps[store].iter()
    }

    /// Applies a change inside the open transaction.
    pub fn apply(&mut self, change: Change) {
        let map = &mut self.maps[change.store];
        let previous = match change.value {
            Some(value) => map.insert(change.key.clone(), value),
            None => map.remove(&change.key),
        };
        self.undo
            .entry((change.store, change.key))
            .or_insert(previous);
    }

    /// Applies a change read from the changelog (restore): no undo kept.
    pub fn restore(&mut self, change: Change) {
        let map = &mut self.maps[change.store];
        match change.value {
            Some(value) => map.insert(change.key, value),
            None => map.remove(&change.key),
        };
    }

    /// The changes of the open transaction, with their current values, for
    /// the changelog. The transaction's undo log is kept until `committed`.
    pub fn pending_changes(&self) -> Vec<Change> {
        let mut changes = Vec::with_capacity(self.undo.len());
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
        for (store, key) in self.undo.keys() {
            f(*store, key, self.maps[*store].get(key).map(Vec::as_slice));
        }
    }

    /// The transaction committed: its changes are durable.
    pub fn committed(&mut self) {
        self.undo.clear();
    }

    /// The transaction aborted: put every changed key back as it was.
    pub fn rollback(&mut self) {
        for ((store, key), previous) in self.undo.drain() {
            let map = &mut self.maps[store];
            match previous {
                Some(value) => map.insert(key, value),
                None => map.remove(&key),
            };
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
        stores.rollback();
        assert_eq!(stores.get(0, b"a"), Some(&b"1"[..]));
        assert_eq!(stores.get(0, b"b"), None);
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
}

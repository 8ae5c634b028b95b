//! The context a processor works through. Everything a processor does to
//! one record (state writes, timers, outputs) is collected here first and
//! applied to the task only when the step succeeds, so a step that fails
//! leaves no trace but its dead letter.
//!
//! The context reads its task through `TaskView`, a crate-private trait the
//! engine's task implements: the seam that keeps this API free of the engine.

use std::sync::OnceLock;

use serde::{de::DeserializeOwned, Serialize};

use super::effect::EffectRequest;
use super::processor::ProcessError;
use super::record::Output;
use super::timer::{TimeDomain, TimerHandle};
use super::timer_key;

/// One change of a store, as it goes to (or comes from) the changelog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub store: usize,
    pub key: Vec<u8>,
    /// `None` deletes the key (a tombstone in the changelog).
    pub value: Option<Vec<u8>>,
}

/// What a context reads of the task it works on. Implemented by the engine
/// (for one step of one task); the context never sees more of it.
pub(crate) trait TaskView {
    /// The input partition the task owns.
    fn partition(&self) -> i32;
    /// The partition's stream time.
    fn stream_time_ms(&self) -> i64;
    /// The index of the processor's store `name`, if the processor declares it.
    fn store_index(&self, name: &str) -> Option<usize>;
    /// The index of the internal timer store.
    fn timer_store(&self) -> usize;
    /// The value of `key` in store `store`, as of the steps applied so far.
    fn get(&self, store: usize, key: &[u8]) -> Option<&[u8]>;
    /// The latest value of `key` in the global table `topic`.
    fn global(&self, topic: &str, key: &[u8]) -> Option<&[u8]>;
    /// How many records of the global table `topic` arrived so far.
    fn global_version(&self, topic: &str) -> u64;
    /// Every entry of the global table `topic`.
    fn global_entries<'s>(
        &'s self,
        topic: &str,
    ) -> Box<dyn Iterator<Item = (&'s [u8], &'s [u8])> + 's>;
}

/// What one `process` or `on_timer` call asked for.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// State writes, timers included (as writes to the timer store, which
    /// the task indexes as it applies them).
    pub state: Vec<Change>,
    pub outputs: Vec<Output>,
    pub effects: Vec<EffectRequest>,
    pub commit_requested: bool,
}

/// A processor's view of its partition while it handles one record or timer.
pub struct Context<'a> {
    task: &'a dyn TaskView,
    effects: Effects,
    wall_clock_ms: i64,
    timestamp_ms: i64,
    /// The first undeclared store this step used: the step fails with it.
    undeclared: OnceLock<String>,
}

impl<'a> Context<'a> {
    pub(crate) fn new(task: &'a dyn TaskView, wall_clock_ms: i64, timestamp_ms: i64) -> Self {
        Self {
            task,
            effects: Effects::default(),
            wall_clock_ms,
            timestamp_ms,
            undeclared: OnceLock::new(),
        }
    }

    /// Ends the step: what it asked for if the handler returned `Ok`, else
    /// the error. A use of an undeclared store fails the step whatever the
    /// handler returned (its own error may be a consequence of the store
    /// reading as empty).
    pub(crate) fn finish(self, result: Result<(), ProcessError>) -> Result<Effects, ProcessError> {
        if let Some(store) = self.undeclared.into_inner() {
            return Err(ProcessError::UndeclaredStore(store));
        }
        result.map(|()| self.effects)
    }

    /// The input partition this context works on; its state is this partition's.
    pub fn partition(&self) -> i32 {
        self.task.partition()
    }

    /// The wall clock, in ms since the epoch (the runtime's injectable clock).
    pub fn wall_clock_ms(&self) -> i64 {
        self.wall_clock_ms
    }

    /// The partition's stream time: the largest record timestamp seen on it.
    pub fn stream_time_ms(&self) -> i64 {
        self.task.stream_time_ms()
    }

    /// The timestamp of the record (or the due time of the timer) being handled.
    pub fn timestamp_ms(&self) -> i64 {
        self.timestamp_ms
    }

    /// The index of `store`. An undeclared store is a bug in the processor,
    /// not in the input: it reads as empty, takes no writes, and fails the
    /// step (dead-lettered with the store's name) instead of panicking the
    /// whole instance.
    fn store_index(&self, store: &str) -> Option<usize> {
        let index = self.task.store_index(store);
        if index.is_none() {
            self.undeclared.get_or_init(|| store.to_string());
        }
        index
    }

    /// The value of `key` in `store`, including this call's own writes.
    pub fn get(&self, store: &str, key: &[u8]) -> Option<&[u8]> {
        let index = self.store_index(store)?;
        if let Some(change) = self
            .effects
            .state
            .iter()
            .rev()
            .find(|c| c.store == index && c.key == key)
        {
            return change.value.as_deref();
        }
        self.task.get(index, key)
    }

    /// Writes `key` in `store`.
    pub fn put(&mut self, store: &str, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        let Some(store) = self.store_index(store) else {
            return;
        };
        self.effects.state.push(Change {
            store,
            key: key.into(),
            value: Some(value.into()),
        });
    }

    /// Deletes `key` from `store`.
    pub fn delete(&mut self, store: &str, key: impl Into<Vec<u8>>) {
        let Some(store) = self.store_index(store) else {
            return;
        };
        self.effects.state.push(Change {
            store,
            key: key.into(),
            value: None,
        });
    }

    /// Reads a JSON value; a value that does not decode reads as an error.
    pub fn get_json<T: DeserializeOwned>(
        &self,
        store: &str,
        key: &[u8],
    ) -> Result<Option<T>, serde_json::Error> {
        self.get(store, key).map(serde_json::from_slice).transpose()
    }

    /// Writes a value as JSON.
    pub fn put_json<T: Serialize>(
        &mut self,
        store: &str,
        key: impl Into<Vec<u8>>,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        let bytes = serde_json::to_vec(value)?;
        self.put(store, key, bytes);
        Ok(())
    }

    /// Emits a record. Unless set, it inherits causation (the input's event
    /// id), correlation and trace headers, and the input's timestamp.
    pub fn emit(&mut self, output: Output) {
        self.effects.outputs.push(output);
    }

    /// Sets (or moves) the durable timer `name` for `key`, due at `due_ms`
    /// in `domain`. `payload` comes back with the timer.
    pub fn set_timer(
        &mut self,
        domain: TimeDomain,
        name: &str,
        key: impl Into<Vec<u8>>,
        due_ms: i64,
        payload: impl AsRef<[u8]>,
    ) -> TimerHandle {
        let key = key.into();
        self.effects.state.push(Change {
            store: self.task.timer_store(),
            key: timer_key::encode_key(domain, name, &key),
            value: Some(timer_key::encode_entry(due_ms, payload.as_ref())),
        });
        TimerHandle {
            domain,
            name: name.to_string(),
            key,
        }
    }

    /// Cancels a timer; cancelling one that is not set does nothing.
    pub fn cancel_timer(&mut self, handle: &TimerHandle) {
        self.effects.state.push(Change {
            store: self.task.timer_store(),
            key: timer_key::encode_handle(handle),
            value: None,
        });
    }

    /// When a timer is due, if it is set (including this call's changes).
    pub fn timer_due(&self, handle: &TimerHandle) -> Option<i64> {
        self.timer_due_at(handle.domain, &handle.name, &handle.key)
    }

    /// `timer_due` without building a handle: the timer `name` for `key` in
    /// `domain` (a processor that checks its timers on every record needs
    /// no allocation for it).
    pub fn timer_due_at(&self, domain: TimeDomain, name: &str, key: &[u8]) -> Option<i64> {
        let store = self.task.timer_store();
        timer_key::with_key(domain, name, key, |stored| {
            let written = self
                .effects
                .state
                .iter()
                .rev()
                .find(|c| c.store == store && c.key == stored);
            let entry = match written {
                Some(change) => change.value.as_deref(),
                None => self.task.get(store, stored),
            };
            entry.and_then(timer_key::entry_due)
        })
    }

    /// The latest value of `key` in the global table `topic`.
    pub fn global(&self, topic: &str, key: &[u8]) -> Option<&[u8]> {
        self.task.global(topic, key)
    }

    /// How many records of the global table `topic` arrived so far: while
    /// it is unchanged, what a processor derived from the table still holds.
    pub fn global_version(&self, topic: &str) -> u64 {
        self.task.global_version(topic)
    }

    /// Every entry of the global table `topic`.
    pub fn global_entries(&self, topic: &str) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.task.global_entries(topic)
    }

    /// Asks for an effect, run once this transaction commits; its result
    /// comes back to `Processor::on_effect` on this partition.
    pub fn request_effect(
        &mut self,
        key: impl Into<Vec<u8>>,
        id: impl Into<String>,
        payload: impl Into<Vec<u8>>,
    ) {
        self.effects.effects.push(EffectRequest {
            partition: self.task.partition(),
            key: key.into(),
            id: id.into(),
            payload: payload.into(),
        });
    }

    /// Asks the runtime to commit after this record rather than at the next interval.
    pub fn request_commit(&mut self) {
        self.effects.commit_requested = true;
    }
}

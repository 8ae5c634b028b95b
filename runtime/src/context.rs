//! The context a processor works through. Everything a processor does to
//! one record (state writes, timers, outputs) is collected here first and
//! applied to the task only when `process` returns `Ok`, so a record that
//! fails leaves no trace but its dead letter.

use serde::{de::DeserializeOwned, Serialize};

use crate::api::{Headers, Output, TimeDomain, TimerHandle};
use crate::effects::EffectRequest;
use crate::globals::Globals;
use crate::store::Change;
use crate::task::Task;
use crate::timers;

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
    task: &'a Task,
    globals: &'a Globals,
    store_names: &'a [String],
    effects: Effects,
    wall_clock_ms: i64,
    timestamp_ms: i64,
}

impl<'a> Context<'a> {
    pub(crate) fn new(
        task: &'a Task,
        globals: &'a Globals,
        store_names: &'a [String],
        wall_clock_ms: i64,
        timestamp_ms: i64,
    ) -> Self {
        Self {
            task,
            globals,
            store_names,
            effects: Effects::default(),
            wall_clock_ms,
            timestamp_ms,
        }
    }

    pub(crate) fn into_effects(self) -> Effects {
        self.effects
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

    fn store_index(&self, store: &str) -> usize {
        match self.store_names.iter().position(|s| s == store) {
            Some(index) => index,
            // A store name is code, not input: an undeclared one is a bug
            // that the first test on the driver shows.
            None => panic!("state store {store:?} is not declared in the ProcessorSpec"),
        }
    }

    /// The value of `key` in `store`, including this call's own writes.
    pub fn get(&self, store: &str, key: &[u8]) -> Option<&[u8]> {
        let index = self.store_index(store);
        if let Some(change) = self
            .effects
            .state
            .iter()
            .rev()
            .find(|c| c.store == index && c.key == key)
        {
            return change.value.as_deref();
        }
        self.task.stores().get(index, key)
    }

    /// Writes `key` in `store`.
    pub fn put(&mut self, store: &str, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        let store = self.store_index(store);
        self.effects.state.push(Change {
            store,
            key: key.into(),
            value: Some(value.into()),
        });
    }

    /// Deletes `key` from `store`.
    pub fn delete(&mut self, store: &str, key: impl Into<Vec<u8>>) {
        let store = self.store_index(store);
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
            key: timers::encode_key(domain, name, &key),
            value: Some(timers::encode_entry(due_ms, payload.as_ref())),
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
            key: timers::encode_handle(handle),
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
        timers::with_key(domain, name, key, |stored| {
            let written = self
                .effects
                .state
                .iter()
                .rev()
                .find(|c| c.store == store && c.key == stored);
            match written {
                Some(change) => change.value.as_deref().and_then(timers::entry_due),
                None => self.task.timer_due(stored),
            }
        })
    }

    /// The latest value of `key` in the global table `topic`.
    pub fn global(&self, topic: &str, key: &[u8]) -> Option<&[u8]> {
        self.globals.get(topic, key)
    }

    /// How many records of the global table `topic` arrived so far: while
    /// it is unchanged, what a processor derived from the table still holds.
    pub fn global_version(&self, topic: &str) -> u64 {
        self.globals.version(topic)
    }

    /// Every entry of the global table `topic`.
    pub fn global_entries(&self, topic: &str) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.globals.entries(topic)
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

/// Fills the headers an output inherits from its cause.
pub(crate) fn inherit_headers(output: &mut Output, cause: Option<&Headers>, timestamp_ms: i64) {
    use crate::api::header::{CAUSATION_ID, CORRELATION_ID, EVENT_ID, TRACEPARENT};
    if output.timestamp_ms.is_none() {
        output.timestamp_ms = Some(timestamp_ms);
    }
    let Some(cause) = cause else { return };
    let cause_event = cause.get(EVENT_ID);
    if output.headers.get(CAUSATION_ID).is_none() {
        if let Some(id) = cause_event {
            output.headers.insert(CAUSATION_ID, id.to_vec());
        }
    }
    if output.headers.get(CORRELATION_ID).is_none() {
        if let Some(id) = cause.get(CORRELATION_ID).or(cause_event) {
            output.headers.insert(CORRELATION_ID, id.to_vec());
        }
    }
    if output.headers.get(TRACEPARENT).is_none() {
        if let Some(trace) = cause.get(TRACEPARENT) {
            output.headers.insert(TRACEPARENT, trace.to_vec());
        }
    }
}

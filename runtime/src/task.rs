//! A task: the state, timers and stream time of one input partition, and
//! the pure steps that run a processor over it. The Kafka engine and the
//! test driver both drive tasks; only their I/O differs.

use crate::api::timer_key::{self, STREAM_TIME_KEY};
use crate::api::{
    inherit_headers, Change, Context, EffectRequest, EffectResult, Effects, Headers, Output,
    ProcessError, Processor, Record, TaskView, TimeDomain, Timer,
};
use crate::dead_letter::timer_timestamp;
use crate::globals::Globals;
use crate::store::Stores;
use crate::timers::TimerIndex;

/// What handling one record or timer produced.
#[derive(Debug, Default)]
pub(crate) struct StepResult {
    pub outputs: Vec<Output>,
    pub effects: Vec<EffectRequest>,
    pub commit_requested: bool,
    /// Set when the processor refused the input; its effects were dropped
    /// and the caller dead-letters the input.
    pub error: Option<ProcessError>,
}

#[derive(Debug)]
pub(crate) struct Task {
    partition: i32,
    stores: Stores,
    timers: TimerIndex,
    stream_time_ms: i64,
    /// Index of the internal timer store (after the processor's own stores).
    timer_store: usize,
}

impl Task {
    /// An empty task for `partition` with `user_stores` processor stores.
    pub fn new(partition: i32, user_stores: usize) -> Self {
        Self {
            partition,
            stores: Stores::new(user_stores + 1),
            timers: TimerIndex::default(),
            stream_time_ms: i64::MIN,
            timer_store: user_stores,
        }
    }

    pub fn partition(&self) -> i32 {
        self.partition
    }

    pub fn stores(&self) -> &Stores {
        &self.stores
    }

    pub fn open_timers(&self) -> usize {
        self.timers.len()
    }

    /// When the timer stored under `key` (its timer-store key) is due.
    fn timer_due(&self, key: &[u8]) -> Option<i64> {
        timer_key::entry_due(self.stores.get(self.timer_store, key)?)
    }

    /// Applies a record read from a changelog during restore.
    pub fn restore(&mut self, store: usize, key: &[u8], value: Option<&[u8]>) {
        self.stores.restore(store, key, value);
    }

    /// Makes room for `additional` keys in `store` before a restore.
    pub fn reserve(&mut self, store: usize, additional: usize) {
        self.stores.reserve(store, additional);
    }

    /// Rebuilds what is derived from the stores (timer index, stream time);
    /// called after restore and after a rollback.
    pub fn rebuild_derived(&mut self) {
        self.stream_time_ms = self
            .stores
            .get(self.timer_store, STREAM_TIME_KEY)
            .and_then(|value| <[u8; 8]>::try_from(value).ok())
            .map_or(i64::MIN, i64::from_be_bytes);
        self.timers.rebuild(self.stores.iter(self.timer_store));
    }

    pub fn pending_changes(&self) -> Vec<Change> {
        self.stores.pending_changes()
    }

    /// The open transaction's changes, borrowed: `f(store, key, value)`.
    pub fn for_each_pending_change(&self, f: impl FnMut(usize, &[u8], Option<&[u8]>)) {
        self.stores.for_each_pending(f);
    }

    pub fn committed(&mut self) {
        self.stores.committed();
    }

    pub fn rollback(&mut self) {
        self.stores.rollback();
        self.rebuild_derived();
    }

    /// Applies what a step asked for; a failed step gives its error back
    /// for the caller to dead-letter, and none of what it asked for.
    fn apply(
        &mut self,
        effects: Result<Effects, ProcessError>,
        cause: Option<&Headers>,
        timestamp_ms: i64,
    ) -> StepResult {
        let effects = match effects {
            Ok(effects) => effects,
            Err(error) => {
                return StepResult {
                    error: Some(error),
                    ..StepResult::default()
                }
            }
        };
        for change in effects.state {
            if change.store != self.timer_store {
                self.stores.apply(change);
                continue;
            }
            // A timer-store write moves the timer in the index: from the due
            // time stored now to the one written (none: cancelled).
            let Change { store, key, value } = change;
            let old = self.timer_due(&key);
            let new = value.as_deref().and_then(timer_key::entry_due);
            let key = self.timers.update(key, old, new);
            self.stores.apply(Change { store, key, value });
        }
        let mut outputs = effects.outputs;
        for output in &mut outputs {
            inherit_headers(output, cause, timestamp_ms);
        }
        StepResult {
            outputs,
            effects: effects.effects,
            commit_requested: effects.commit_requested,
            error: None,
        }
    }

    /// Runs the processor over one record.
    pub fn process<P: Processor + ?Sized>(
        &mut self,
        processor: &mut P,
        globals: &Globals,
        stores: &[&str],
        record: &Record,
        wall_clock_ms: i64,
    ) -> StepResult {
        if record.timestamp_ms > self.stream_time_ms {
            self.stream_time_ms = record.timestamp_ms;
            self.stores.overwrite(
                self.timer_store,
                STREAM_TIME_KEY,
                &record.timestamp_ms.to_be_bytes(),
            );
        }
        let view = StepView::new(self, globals, stores);
        let mut ctx = Context::new(&view, wall_clock_ms, record.timestamp_ms);
        let result = processor.process(&mut ctx, record);
        let effects = ctx.finish(result);
        self.apply(effects, Some(&record.headers), record.timestamp_ms)
    }

    /// The earliest due timer, of either domain, at `wall_clock_ms`.
    pub fn next_due_timer(&self, wall_clock_ms: i64) -> Option<Timer> {
        let wall = self.timers.first_due(TimeDomain::WallClock, wall_clock_ms);
        let event = self
            .timers
            .first_due(TimeDomain::EventTime, self.stream_time_ms);
        // On a tie the event-time timer goes first, as handles order.
        let (_, key) = match (wall, event) {
            (Some(w), Some(e)) if w.0 < e.0 => w,
            (_, Some(e)) => e,
            (Some(w), None) => w,
            (None, None) => return None,
        };
        let entry = self.stores.get(self.timer_store, key)?;
        timer_key::timer_from_entry(key, entry)
    }

    /// Hands an effect's result to the processor.
    pub fn complete_effect<P: Processor + ?Sized>(
        &mut self,
        processor: &mut P,
        globals: &Globals,
        stores: &[&str],
        result: &EffectResult,
        wall_clock_ms: i64,
    ) -> StepResult {
        let view = StepView::new(self, globals, stores);
        let mut ctx = Context::new(&view, wall_clock_ms, wall_clock_ms);
        let result = processor.on_effect(&mut ctx, result);
        let effects = ctx.finish(result);
        self.apply(effects, None, wall_clock_ms)
    }

    /// The earliest wall-clock due time, for how long the engine may sleep.
    pub fn next_wall_clock_due(&self) -> Option<i64> {
        self.timers.next_due(TimeDomain::WallClock)
    }

    /// Fires one due timer: it is removed first, so a processor that wants
    /// it again sets it again. If the processor fails, the timer is still
    /// removed (and the failure returned, for the caller to dead-letter the
    /// timer), so a broken timer cannot spin.
    pub fn fire<P: Processor + ?Sized>(
        &mut self,
        processor: &mut P,
        globals: &Globals,
        stores: &[&str],
        timer: &Timer,
        wall_clock_ms: i64,
    ) -> StepResult {
        let timestamp_ms = timer_timestamp(timer, wall_clock_ms);
        let view = StepView::new(self, globals, stores);
        let mut ctx = Context::new(&view, wall_clock_ms, timestamp_ms);
        ctx.cancel_timer(&timer.handle);
        let result = processor.on_timer(&mut ctx, timer);
        match ctx.finish(result) {
            Ok(effects) => self.apply(Ok(effects), None, timestamp_ms),
            Err(error) => {
                let mut removal = Effects::default();
                removal.state.push(Change {
                    store: self.timer_store,
                    key: timer_key::encode_handle(&timer.handle),
                    value: None,
                });
                let mut result = self.apply(Ok(removal), None, timestamp_ms);
                result.error = Some(error);
                result
            }
        }
    }
}

/// A task as the context sees it during one step: its state, the global
/// tables and the processor's declared stores (the API's `TaskView` seam).
struct StepView<'a> {
    task: &'a Task,
    globals: &'a Globals,
    /// The processor's stores, in store-index order.
    stores: &'a [&'a str],
}

impl<'a> StepView<'a> {
    fn new(task: &'a Task, globals: &'a Globals, stores: &'a [&'a str]) -> Self {
        Self {
            task,
            globals,
            stores,
        }
    }
}

impl TaskView for StepView<'_> {
    fn partition(&self) -> i32 {
        self.task.partition
    }

    fn stream_time_ms(&self) -> i64 {
        self.task.stream_time_ms
    }

    fn store_index(&self, name: &str) -> Option<usize> {
        self.stores.iter().position(|s| *s == name)
    }

    fn timer_store(&self) -> usize {
        self.task.timer_store
    }

    fn get(&self, store: usize, key: &[u8]) -> Option<&[u8]> {
        self.task.stores.get(store, key)
    }

    fn global(&self, topic: &str, key: &[u8]) -> Option<&[u8]> {
        self.globals.get(topic, key)
    }

    fn global_version(&self, topic: &str) -> u64 {
        self.globals.version(topic)
    }

    fn global_entries<'s>(
        &'s self,
        topic: &str,
    ) -> Box<dyn Iterator<Item = (&'s [u8], &'s [u8])> + 's> {
        self.globals.entries(topic)
    }
}

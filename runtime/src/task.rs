//! A task: the state, timers and stream time of one input partition, and
//! the pure steps that run a processor over it. The Kafka engine and the
//! test driver both drive tasks; only their I/O differs.

use crate::api::{Headers, Output, ProcessError, Processor, Record, TimeDomain, Timer};
use crate::context::{inherit_headers, Context, Effects};
use crate::dead_letter::timer_timestamp;
use crate::effects::{EffectRequest, EffectResult};
use crate::globals::Globals;
use crate::store::{Change, Stores};
use crate::timers::{self, TimerIndex, STREAM_TIME_KEY};

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

    pub fn timer_store(&self) -> usize {
        self.timer_store
    }

    pub fn stream_time_ms(&self) -> i64 {
        self.stream_time_ms
    }

    pub fn open_timers(&self) -> usize {
        self.timers.len()
    }

    /// When the timer stored under `key` (its timer-store key) is due.
    pub fn timer_due(&self, key: &[u8]) -> Option<i64> {
        timers::entry_due(self.stores.get(self.timer_store, key)?)
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

    fn apply(
        &mut self,
        effects: Effects,
        cause: Option<&Headers>,
        timestamp_ms: i64,
    ) -> StepResult {
        for change in effects.state {
            if change.store != self.timer_store {
                self.stores.apply(change);
                continue;
            }
            // A timer-store write moves the timer in the index: from the due
            // time stored now to the one written (none: cancelled).
            let Change { store, key, value } = change;
            let old = self.timer_due(&key);
            let new = value.as_deref().and_then(timers::entry_due);
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
        store_names: &[String],
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
        let mut ctx = Context::new(
            self,
            globals,
            store_names,
            wall_clock_ms,
            record.timestamp_ms,
        );
        match processor.process(&mut ctx, record) {
            Ok(()) => {
                let effects = ctx.into_effects();
                self.apply(effects, Some(&record.headers), record.timestamp_ms)
            }
            Err(error) => StepResult {
                error: Some(error),
                ..StepResult::default()
            },
        }
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
        timers::timer_from_entry(key, entry)
    }

    /// Hands an effect's result to the processor.
    pub fn complete_effect<P: Processor + ?Sized>(
        &mut self,
        processor: &mut P,
        globals: &Globals,
        store_names: &[String],
        result: &EffectResult,
        wall_clock_ms: i64,
    ) -> StepResult {
        let mut ctx = Context::new(self, globals, store_names, wall_clock_ms, wall_clock_ms);
        match processor.on_effect(&mut ctx, result) {
            Ok(()) => {
                let effects = ctx.into_effects();
                self.apply(effects, None, wall_clock_ms)
            }
            Err(error) => StepResult {
                error: Some(error),
                ..StepResult::default()
            },
        }
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
        store_names: &[String],
        timer: &Timer,
        wall_clock_ms: i64,
    ) -> StepResult {
        let timestamp_ms = timer_timestamp(timer, wall_clock_ms);
        let mut ctx = Context::new(self, globals, store_names, wall_clock_ms, timestamp_ms);
        ctx.cancel_timer(&timer.handle);
        let result = processor.on_timer(&mut ctx, timer);
        let effects = ctx.into_effects();
        match result {
            Ok(()) => self.apply(effects, None, timestamp_ms),
            Err(error) => {
                let mut removal = Effects::default();
                removal.state.push(Change {
                    store: self.timer_store,
                    key: timers::encode_handle(&timer.handle),
                    value: None,
                });
                let mut result = self.apply(removal, None, timestamp_ms);
                result.error = Some(error);
                result
            }
        }
    }
}

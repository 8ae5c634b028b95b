//! The test kit: `TestDriver` runs any processor in memory, without Kafka,
//! with a wall clock you move by hand, and reads what it emitted as raw
//! records or typed values. Each piped record is its own committed
//! transaction; `restart` throws the in-memory state away and restores it
//! from what was committed, as a crash and restart would. The driver builds
//! tasks, dead letters and store checks with the Kafka engine's own code, so
//! what passes here behaves the same on Kafka.

mod counting;

use std::collections::BTreeMap;
use std::fmt::Display;

use crate::api::{Change, EffectRequest, EffectResult, Headers, Output, Processor, Record};
use crate::clock::{Clock, ManualClock};
use crate::dead_letter::{dead_letter, Cause};
use crate::globals::Globals;
use crate::partitioner::partition_for_key;
use crate::spec::{ProcessorSpec, StoreError};
use crate::task::{StepResult, Task};

pub use counting::{decode_count, CountingProcessor, COUNTS_STORE};

/// A record the processor emitted, where it would land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Produced {
    pub topic: String,
    pub partition: i32,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Headers,
    pub timestamp_ms: i64,
}

/// An input to pipe in; `timestamp_ms: None` uses the wall clock.
#[derive(Debug, Clone, Default)]
pub struct Input {
    pub topic: String,
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
    pub headers: Headers,
    pub timestamp_ms: Option<i64>,
}

impl Input {
    pub fn new(
        topic: impl Into<String>,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> Self {
        Self {
            topic: topic.into(),
            key: key.into(),
            value: Some(value.into()),
            ..Self::default()
        }
    }

    pub fn at(mut self, timestamp_ms: i64) -> Self {
        self.timestamp_ms = Some(timestamp_ms);
        self
    }

    pub fn header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        self.headers.insert(name, value);
        self
    }
}

/// Runs one processor in memory; see the module's documentation.
pub struct TestDriver<P: Processor> {
    processor: P,
    spec: ProcessorSpec,
    /// The processor's declared stores, checked when the driver was made.
    stores: &'static [&'static str],
    partitions: i32,
    clock: ManualClock,
    tasks: BTreeMap<i32, Task>,
    /// Every committed state change, per partition: the changelog.
    changelog: Vec<(i32, Change)>,
    next_offset: BTreeMap<(String, i32), i64>,
    produced: Vec<Produced>,
    globals: Globals,
    /// Effects asked for and not yet completed, in order.
    effects: Vec<EffectRequest>,
}

impl<P: Processor> TestDriver<P> {
    /// A driver whose topics all have `partitions` partitions, starting at
    /// wall clock `start_ms`.
    ///
    /// # Panics
    /// If the processor's declared stores cannot run (see [`Self::try_new`]):
    /// a test should fail there, naming the store.
    pub fn new(processor: P, spec: ProcessorSpec, partitions: i32, start_ms: i64) -> Self {
        let app = spec.app_id.clone();
        match Self::try_new(processor, spec, partitions, start_ms) {
            Ok(driver) => driver,
            Err(error) => panic!("refusing to start {app}: {error}"),
        }
    }

    /// [`Self::new`], or why the processor's declared stores cannot run, as
    /// the Kafka engine would refuse them at start.
    pub fn try_new(
        processor: P,
        spec: ProcessorSpec,
        partitions: i32,
        start_ms: i64,
    ) -> Result<Self, StoreError> {
        let stores = processor.stores();
        spec.check_stores(stores)?;
        Ok(Self {
            processor,
            spec,
            stores,
            partitions,
            clock: ManualClock::new(start_ms),
            tasks: BTreeMap::new(),
            changelog: Vec::new(),
            next_offset: BTreeMap::new(),
            produced: Vec::new(),
            globals: Globals::default(),
            effects: Vec::new(),
        })
    }

    /// Sets `key` of the global table `topic` (`None` deletes it), as a
    /// record on that topic would.
    pub fn set_global(&mut self, topic: &str, key: impl Into<Vec<u8>>, value: Option<Vec<u8>>) {
        self.globals.apply(topic, key.into(), value);
    }

    /// Effects asked for (by committed steps) and not yet completed.
    pub fn pending_effects(&self) -> &[EffectRequest] {
        &self.effects
    }

    /// Takes the pending effects, e.g. to complete some and drop others
    /// (a dropped one is an effect whose result a crash lost).
    pub fn take_effects(&mut self) -> Vec<EffectRequest> {
        std::mem::take(&mut self.effects)
    }

    /// Hands an effect's result to the processor, as the runtime does once
    /// the effect returns.
    pub fn complete_effect(&mut self, request: EffectRequest, payload: Vec<u8>) {
        self.effects.retain(|r| *r != request);
        let partition = request.partition;
        let now = self.clock.now_ms();
        self.ensure_task(partition);
        let result = EffectResult { request, payload };
        let Some(task) = self.tasks.get_mut(&partition) else {
            return;
        };
        let step = task.complete_effect(
            &mut self.processor,
            &self.globals,
            self.stores,
            &result,
            now,
        );
        self.collect(
            step,
            &Cause::Effect {
                result: &result,
                now_ms: now,
            },
        );
        self.fire_due(partition);
        self.commit();
    }

    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    pub fn processor(&mut self) -> &mut P {
        &mut self.processor
    }

    /// Makes the task of `partition` if it has none yet, and tells the
    /// processor it is assigned, as the engine does once a partition is
    /// restored.
    fn ensure_task(&mut self, partition: i32) {
        if !self.tasks.contains_key(&partition) {
            let task = Task::new(partition, self.stores.len());
            self.tasks.insert(partition, task);
            self.processor.on_assign(partition);
        }
    }

    /// Pipes one record in (and fires the timers it makes due).
    pub fn pipe(&mut self, input: Input) {
        let partition = partition_for_key(&input.key, self.partitions);
        let slot = self
            .next_offset
            .entry((input.topic.clone(), partition))
            .or_insert(0);
        let offset = *slot;
        *slot += 1;
        let now = self.clock.now_ms();
        let record = Record {
            topic: input.topic,
            partition,
            offset,
            timestamp_ms: input.timestamp_ms.unwrap_or(now),
            key: Some(input.key),
            value: input.value,
            headers: input.headers,
        };
        self.ensure_task(partition);
        let Some(task) = self.tasks.get_mut(&partition) else {
            return;
        };
        let result = task.process(
            &mut self.processor,
            &self.globals,
            self.stores,
            &record,
            now,
        );
        self.collect(result, &Cause::Record(&record));
        self.fire_due(partition);
        self.commit();
    }

    /// Moves the wall clock forward and fires every timer that comes due.
    pub fn advance_wall_clock_ms(&mut self, by_ms: i64) {
        self.clock.advance_ms(by_ms);
        let partitions: Vec<i32> = self.tasks.keys().copied().collect();
        for partition in partitions {
            self.fire_due(partition);
        }
        self.commit();
    }

    fn fire_due(&mut self, partition: i32) {
        let now = self.clock.now_ms();
        // Bounded, so a processor that keeps re-arming a due timer cannot hang a test.
        for _ in 0..100_000 {
            let Some(task) = self.tasks.get_mut(&partition) else {
                return;
            };
            let Some(timer) = task.next_due_timer(now) else {
                return;
            };
            let result = task.fire(&mut self.processor, &self.globals, self.stores, &timer, now);
            let cause = Cause::Timer {
                timer: &timer,
                partition,
                now_ms: now,
            };
            self.collect(result, &cause);
        }
    }

    /// Keeps what a step produced; a failed step (record, timer or effect
    /// result) leaves its dead letter instead, built as the Kafka engine builds it.
    fn collect(&mut self, result: StepResult, cause: &Cause<'_>) {
        if let Some(error) = result.error {
            let letter = dead_letter(
                &self.spec.app_id,
                &self.spec.dead_letter_topic,
                cause,
                &error.to_string(),
            );
            let placed = self.place(letter);
            self.produced.push(placed);
        }
        for output in result.outputs {
            self.produced.push(self.place(output));
        }
        self.effects.extend(result.effects);
    }

    fn place(&self, output: Output) -> Produced {
        let partition = output.partition.unwrap_or_else(|| {
            output
                .key
                .as_deref()
                .map_or(0, |k| partition_for_key(k, self.partitions))
        });
        Produced {
            topic: output.topic,
            partition,
            key: output.key,
            value: output.value,
            headers: output.headers,
            timestamp_ms: output.timestamp_ms.unwrap_or_default(),
        }
    }

    fn commit(&mut self) {
        for (partition, task) in &mut self.tasks {
            for change in task.pending_changes() {
                self.changelog.push((*partition, change));
            }
            task.committed();
        }
    }

    /// Drops all in-memory state and restores it from the committed
    /// changelog. The processor sees its partitions revoked, then assigned
    /// again once restored, as across a restart (its fields are kept: a
    /// processor that caches state drops the cache in `on_revoke`).
    pub fn restart(&mut self) {
        for partition in std::mem::take(&mut self.tasks).into_keys() {
            self.processor.on_revoke(partition);
        }
        let user_stores = self.stores.len();
        for (partition, change) in &self.changelog {
            self.tasks
                .entry(*partition)
                .or_insert_with(|| Task::new(*partition, user_stores))
                .restore(change.store, &change.key, change.value.as_deref());
        }
        for task in self.tasks.values_mut() {
            task.rebuild_derived();
        }
        for &partition in self.tasks.keys() {
            self.processor.on_assign(partition);
        }
    }

    /// Everything emitted to `topic` so far, as raw records.
    pub fn records(&self, topic: &str) -> Vec<&Produced> {
        self.produced.iter().filter(|p| p.topic == topic).collect()
    }

    /// The values emitted to `topic` so far, decoded as `E` (Kafka Streams'
    /// `TestOutputTopic`): any type that converts from bytes, such as every
    /// event type of the schemas crate.
    ///
    /// # Panics
    /// On a record whose value is missing (a tombstone) or does not decode,
    /// naming the topic and the record's place in it: a test helper fails
    /// the test, it does not skip what it cannot read.
    pub fn outputs<E>(&self, topic: &str) -> Vec<E>
    where
        E: for<'a> TryFrom<&'a [u8]>,
        for<'a> <E as TryFrom<&'a [u8]>>::Error: Display,
    {
        self.records(topic)
            .into_iter()
            .enumerate()
            .map(|(index, record)| {
                let Some(value) = record.value.as_deref() else {
                    panic!(
                        "record {index} of {topic} (partition {}) is a tombstone",
                        record.partition
                    )
                };
                match E::try_from(value) {
                    Ok(decoded) => decoded,
                    Err(error) => panic!(
                        "record {index} of {topic} (partition {}) does not decode as {}: {error}",
                        record.partition,
                        std::any::type_name::<E>()
                    ),
                }
            })
            .collect()
    }

    /// Takes (and forgets) everything emitted to `topic` so far.
    pub fn take_records(&mut self, topic: &str) -> Vec<Produced> {
        let (taken, kept) = std::mem::take(&mut self.produced)
            .into_iter()
            .partition(|p| p.topic == topic);
        self.produced = kept;
        taken
    }

    /// Dead letters: refused records, failed timers and failed effect results.
    pub fn dead_letters(&self) -> Vec<&Produced> {
        self.records(&self.spec.dead_letter_topic)
    }

    /// The value of `key` in `store`: from the partition a record with that
    /// key goes to, else from whichever partition holds it (a store key need
    /// not be the record key: the tenant may be part of it).
    pub fn get(&self, store: &str, key: &[u8]) -> Option<&[u8]> {
        let index = self.stores.iter().position(|s| *s == store)?;
        let partition = partition_for_key(key, self.partitions);
        self.tasks
            .get(&partition)
            .and_then(|task| task.stores().get(index, key))
            .or_else(|| {
                self.tasks
                    .values()
                    .find_map(|task| task.stores().get(index, key))
            })
    }

    /// Timers set across all partitions.
    pub fn open_timers(&self) -> usize {
        self.tasks.values().map(Task::open_timers).sum()
    }
}

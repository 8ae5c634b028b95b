//! The transactional core of the engine: tasks, the open transaction and
//! what it holds. Shared (behind a mutex) between the event loop and the
//! rebalance callbacks, which must commit or abort before partitions leave.
//!
//! Exactly-once argument: a record's effects (outputs, changelog writes)
//! and its offset are in the same transaction. If the transaction aborts,
//! the in-memory state is rolled back (undo log) and the consumer rewinds
//! to the committed offsets, so the record is processed again from the same
//! state, as if the first attempt never happened.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::producer::{Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};
use tracing::{debug, error, info, warn};

use super::config::{Guarantee, RuntimeConfig};
use crate::api::{EffectRequest, EffectResult, Processor, Record};
use crate::commit::OffsetTracker;
use crate::dead_letter::Cause;
use crate::error::RuntimeError;
use crate::globals::Globals;
use crate::spec::ProcessorSpec;
use crate::task::Task;

mod output;
mod txn;

/// Most timers fired in one loop turn, so records keep flowing.
const MAX_TIMERS_PER_TURN: usize = 10_000;

/// How long partitions assigned without all their co-partitioned inputs are held before the
/// consumer asks its group again (and again after as long, while it lasts).
const INCOMPLETE_ASSIGNMENT_REJOIN: Duration = Duration::from_secs(20);

pub(crate) struct Core {
    producer: ThreadedProducer<rdkafka::producer::DefaultProducerContext>,
    spec: ProcessorSpec,
    /// The processor's declared stores (checked at start), in store-index order.
    stores: &'static [&'static str],
    config: RuntimeConfig,
    /// Changelog topic per store index (the timer store last).
    changelog_topics: Vec<String>,
    tasks: BTreeMap<i32, Task>,
    pending_restore: BTreeSet<i32>,
    /// The consumer has joined its group (an assignment arrived, even an
    /// empty one, or the statistics say the group is steady): one half of
    /// readiness, the other being nothing left to restore.
    joined: bool,
    /// Partitions revoked since the event loop last looked, whose tasks had
    /// been installed: the loop tells the processor (`on_revoke`).
    revoked: Vec<i32>,
    /// First offset seen (and not handled) per input partition while its
    /// task was being restored; the consumer seeks back there.
    skipped: HashMap<(String, i32), i64>,
    /// Partitions assigned without every co-partitioned input (see
    /// [`Core::on_assign`]): held paused, no task; and since when.
    incomplete: BTreeSet<i32>,
    incomplete_since: Option<Instant>,
    offsets: OffsetTracker,
    txn_started: Option<Instant>,
    txn_records: usize,
    commit_requested: bool,
    /// A send failed inside the open transaction: it can only abort.
    txn_failed: bool,
    fatal: Option<RuntimeError>,
    /// The global tables, kept current by the event loop.
    pub globals: Globals,
    /// Effects asked for in the open transaction: they run only if it commits.
    pending_effects: Vec<EffectRequest>,
    /// Effects whose transaction committed, waiting to be started.
    ready_effects: Vec<EffectRequest>,
}

impl Core {
    pub fn new(
        producer: ThreadedProducer<rdkafka::producer::DefaultProducerContext>,
        spec: ProcessorSpec,
        stores: &'static [&'static str],
        config: RuntimeConfig,
    ) -> Self {
        let changelog_topics = spec.changelog_topics(stores);
        Self {
            producer,
            spec,
            stores,
            config,
            changelog_topics,
            tasks: BTreeMap::new(),
            pending_restore: BTreeSet::new(),
            joined: false,
            revoked: Vec::new(),
            skipped: HashMap::new(),
            incomplete: BTreeSet::new(),
            incomplete_since: None,
            offsets: OffsetTracker::default(),
            txn_started: None,
            txn_records: 0,
            commit_requested: false,
            txn_failed: false,
            fatal: None,
            globals: Globals::default(),
            pending_effects: Vec::new(),
            ready_effects: Vec::new(),
        }
    }

    pub fn take_fatal(&mut self) -> Result<(), RuntimeError> {
        self.fatal.take().map_or(Ok(()), Err)
    }

    fn fatal(&mut self, source: KafkaError) {
        error!(app = %self.spec.app_id, %source, "fatal Kafka error; the process must restart");
        self.fatal.get_or_insert(RuntimeError::Fatal {
            app: self.spec.app_id.clone(),
            source,
        });
    }

    pub fn take_pending_restore(&mut self) -> Vec<i32> {
        std::mem::take(&mut self.pending_restore)
            .into_iter()
            .collect()
    }

    /// Installs restored tasks and lets their partitions flow again, from
    /// the first record that arrived before the restore finished.
    pub fn install<C: ConsumerContext>(
        &mut self,
        tasks: BTreeMap<i32, Task>,
        consumer: &BaseConsumer<C>,
    ) {
        let mut resume = TopicPartitionList::new();
        let inputs = self.spec.inputs.clone();
        for (partition, task) in tasks {
            for input in &inputs {
                resume.add_partition(input, partition);
                if let Some(offset) = self.skipped.remove(&(input.clone(), partition)) {
                    if let Err(error) = consumer.seek(
                        input,
                        partition,
                        Offset::Offset(offset),
                        Duration::from_secs(5),
                    ) {
                        // Seeking failed: rewinding everything to the committed offsets is always safe.
                        warn!(%error, input, partition, "seek after restore failed; rewinding");
                        self.rewind(consumer);
                    }
                }
            }
            self.tasks.insert(partition, task);
        }
        if let Err(error) = consumer.resume(&resume) {
            warn!(%error, "resuming restored partitions failed");
        }
        self.update_timer_gauge();
        self.update_partition_gauge();
    }

    /// The group said it is steady (statistics): an instance left without
    /// partitions (more instances than partitions) is ready too.
    pub fn joined(&mut self) {
        self.joined = true;
    }

    /// Joined, and every assigned partition restored: what `/readyz` says.
    /// Called by the event loop once a turn, after it installed what it restored.
    pub fn update_readiness(&self) {
        let ready = self.joined && self.pending_restore.is_empty();
        self.config.metrics.set_ready(ready);
    }

    /// Partitions were assigned: hold them until their state is restored.
    ///
    /// A task needs every input of its partition: handling one co-partitioned input
    /// without the other (call events without the launch requests that made their jobs)
    /// would decide on half the facts. The range assignor gives each member the same
    /// partitions of every input, but a group leader that computes the assignment while a
    /// topic is missing from its metadata (a broker just back, answering before it caught
    /// up) leaves that topic out, and librdkafka only notices at its next metadata refresh.
    /// Such partitions are held paused, without a task, and said; the event loop asks the
    /// group again ([`Core::rejoin_if_incomplete`]) until the assignment is whole.
    pub fn on_assign<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
        assigned: &TopicPartitionList,
    ) {
        // An assignment, even an empty one, means the group has been joined.
        self.joined = true;
        if assigned.count() == 0 {
            return;
        }
        if let Err(error) = consumer.pause(assigned) {
            warn!(%error, "pausing assigned partitions failed");
        }
        let (whole, incomplete) = whole_partitions(assigned, &self.spec.inputs);
        if !incomplete.is_empty() {
            error!(app = %self.spec.app_id, assigned = %describe(assigned), ?incomplete,
                "partitions assigned without all their co-partitioned inputs; holding them \
                 (no task) and asking the group again");
            self.incomplete.extend(incomplete);
            self.incomplete_since.get_or_insert_with(Instant::now);
        }
        if whole.is_empty() {
            return;
        }
        // Not ready until these are restored (the event loop says when).
        self.config.metrics.set_ready(false);
        info!(app = %self.spec.app_id, partitions = ?whole, assigned = %describe(assigned),
            "partitions assigned; restoring their state");
        self.pending_restore.extend(whole);
    }

    /// Held partitions (assigned without all their inputs) for a while: subscribing again
    /// makes the consumer rejoin its group, and the leader assign afresh from current
    /// metadata.
    pub fn rejoin_if_incomplete<C: ConsumerContext>(&mut self, consumer: &BaseConsumer<C>) {
        let Some(since) = self.incomplete_since else {
            return;
        };
        if since.elapsed() < INCOMPLETE_ASSIGNMENT_REJOIN {
            return;
        }
        self.incomplete_since = Some(Instant::now());
        warn!(app = %self.spec.app_id, incomplete = ?self.incomplete,
            "the assignment is still incomplete; rejoining the group");
        let inputs: Vec<&str> = self.spec.inputs.iter().map(String::as_str).collect();
        if let Err(error) = consumer.subscribe(&inputs) {
            warn!(%error, "subscribing again failed; trying again later");
        }
    }

    /// Partitions are being revoked: finish the transaction (abort it if the
    /// assignment was lost: another member may already own them), then drop
    /// their state. Runs before the group moves them.
    pub fn on_revoke<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
        revoked: &TopicPartitionList,
    ) {
        let partitions = partitions_of(revoked);
        if consumer.assignment_lost() {
            warn!(app = %self.spec.app_id, ?partitions, "assignment lost; aborting the open transaction");
            self.abort();
        } else {
            self.commit_open(consumer);
            if self.txn_started.is_some() {
                self.abort();
            }
        }
        for partition in &partitions {
            if self.tasks.remove(partition).is_some() {
                self.revoked.push(*partition);
            }
            self.pending_restore.remove(partition);
            self.incomplete.remove(partition);
        }
        if self.incomplete.is_empty() {
            self.incomplete_since = None;
        }
        self.skipped.retain(|(_, p), _| !partitions.contains(p));
        self.offsets.forget_partitions(&partitions);
        for element in revoked.elements() {
            self.config
                .metrics
                .forget_lag(element.topic(), element.partition());
        }
        info!(app = %self.spec.app_id, ?partitions, "partitions revoked");
        self.update_timer_gauge();
        self.update_partition_gauge();
    }

    /// Partitions whose tasks are installed (restored, processing).
    pub fn installed(&self) -> Vec<i32> {
        self.tasks.keys().copied().collect()
    }

    /// Partitions revoked (after their tasks were installed) since the last call.
    pub fn take_revoked(&mut self) -> Vec<i32> {
        std::mem::take(&mut self.revoked)
    }

    /// How long the loop may wait for records before it must commit or fire a timer.
    pub fn poll_timeout(&self, now_ms: i64) -> Duration {
        let mut wait = self.config.commit.interval;
        if let Some(started) = self.txn_started {
            wait = wait.min(
                self.config
                    .commit
                    .interval
                    .saturating_sub(started.elapsed()),
            );
        }
        let next_timer = self
            .tasks
            .values()
            .filter_map(Task::next_wall_clock_due)
            .min();
        if let Some(due) = next_timer {
            let until = u64::try_from(due.saturating_sub(now_ms)).unwrap_or(0);
            // Due in business time; a scaled clock gets there sooner in real time.
            wait = wait.min(self.config.clock.real_wait(Duration::from_millis(until)));
        }
        wait
    }

    fn begin(&mut self) -> bool {
        if self.txn_started.is_some() {
            return true;
        }
        // These clients are done (the loop ends this turn): nothing more is begun.
        if self.fatal.is_some() {
            return false;
        }
        let begun = match self.config.guarantee {
            Guarantee::ExactlyOnce => self.producer.begin_transaction(),
            Guarantee::AtLeastOnce => Ok(()),
        };
        match begun {
            Ok(()) => {
                self.txn_started = Some(Instant::now());
                self.txn_records = 0;
                true
            }
            Err(error) => {
                self.fatal(error);
                false
            }
        }
    }

    /// Handles one input record inside the open transaction.
    pub fn handle<P: Processor + ?Sized>(
        &mut self,
        processor: &mut P,
        record: &Record,
        now_ms: i64,
    ) {
        let partition = record.partition;
        if self.pending_restore.contains(&partition) || !self.tasks.contains_key(&partition) {
            let first = self
                .skipped
                .entry((record.topic.clone(), partition))
                .or_insert(record.offset);
            *first = (*first).min(record.offset);
            return;
        }
        if !self.begin() {
            return;
        }
        let Some(task) = self.tasks.get_mut(&partition) else {
            return;
        };
        let result = task.process(processor, &self.globals, self.stores, record, now_ms);
        self.config.metrics.records_in.inc();
        self.offsets
            .handled(&record.topic, partition, record.offset);
        self.txn_records += 1;
        self.emit(result, &Cause::Record(record));
    }

    /// Fires due timers (either domain) inside the open transaction.
    pub fn fire_timers<P: Processor + ?Sized>(&mut self, processor: &mut P, now_ms: i64) {
        let partitions: Vec<i32> = self.tasks.keys().copied().collect();
        let mut fired = 0;
        for partition in partitions {
            while fired < MAX_TIMERS_PER_TURN {
                let Some(timer) = self
                    .tasks
                    .get(&partition)
                    .and_then(|t| t.next_due_timer(now_ms))
                else {
                    break;
                };
                if !self.begin() {
                    return;
                }
                let Some(task) = self.tasks.get_mut(&partition) else {
                    break;
                };
                let result = task.fire(processor, &self.globals, self.stores, &timer, now_ms);
                fired += 1;
                let cause = Cause::Timer {
                    timer: &timer,
                    partition,
                    now_ms,
                };
                self.emit(result, &cause);
            }
        }
        if fired > 0 {
            self.config.metrics.timers_fired.inc_by(fired as u64);
            self.update_timer_gauge();
        }
    }

    /// Hands an effect's result to its task, inside the open transaction.
    /// A result for a partition that has moved away is dropped: the new
    /// owner reconciles from the intent recorded in its restored state.
    pub fn complete_effect<P: Processor + ?Sized>(
        &mut self,
        processor: &mut P,
        result: EffectResult,
        now_ms: i64,
    ) {
        if !self.tasks.contains_key(&result.request.partition) {
            debug!(app = %self.spec.app_id, id = %result.request.id, "effect result for a revoked partition dropped");
            return;
        }
        if !self.begin() {
            return;
        }
        let Some(task) = self.tasks.get_mut(&result.request.partition) else {
            return;
        };
        let step = task.complete_effect(processor, &self.globals, self.stores, &result, now_ms);
        let cause = Cause::Effect {
            result: &result,
            now_ms,
        };
        self.emit(step, &cause);
    }

    /// Effects whose transaction has committed.
    pub fn take_ready_effects(&mut self) -> Vec<EffectRequest> {
        std::mem::take(&mut self.ready_effects)
    }

    fn update_partition_gauge(&self) {
        let assigned = i64::try_from(self.tasks.len()).unwrap_or(i64::MAX);
        self.config.metrics.assigned_partitions.set(assigned);
    }

    fn update_timer_gauge(&self) {
        let open: usize = self.tasks.values().map(Task::open_timers).sum();
        self.config.metrics.open_timers.set(open as i64);
    }
}

/// The partitions of `assigned` that come with every one of `inputs`, and those that do not.
fn whole_partitions(assigned: &TopicPartitionList, inputs: &[String]) -> (Vec<i32>, Vec<i32>) {
    let mut topics: BTreeMap<i32, BTreeSet<String>> = BTreeMap::new();
    for element in assigned.elements() {
        topics
            .entry(element.partition())
            .or_default()
            .insert(element.topic().to_string());
    }
    topics
        .into_iter()
        .map(|(partition, topics)| {
            let whole = inputs.iter().all(|input| topics.contains(input));
            (partition, whole)
        })
        .fold((Vec::new(), Vec::new()), |(mut whole, mut not), (p, ok)| {
            if ok {
                whole.push(p)
            } else {
                not.push(p)
            }
            (whole, not)
        })
}

/// `topic[0,1,2] other[0,1,2]`: an assignment, short enough for a log line.
fn describe(list: &TopicPartitionList) -> String {
    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for element in list.elements() {
        by_topic
            .entry(element.topic().to_string())
            .or_default()
            .push(element.partition());
    }
    by_topic
        .iter()
        .map(|(topic, partitions)| format!("{topic}{partitions:?}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn partitions_of(list: &TopicPartitionList) -> Vec<i32> {
    let set: BTreeSet<i32> = list.elements().iter().map(|e| e.partition()).collect();
    set.into_iter().collect()
}

/// Locks the core. A panic while the lock was held poisoned it; the state
/// inside is still the best we have and the transaction will be aborted by
/// the broker.
pub(crate) fn lock(core: &Mutex<Core>) -> MutexGuard<'_, Core> {
    core.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&str, i32)]) -> TopicPartitionList {
        let mut list = TopicPartitionList::new();
        for (topic, partition) in pairs {
            list.add_partition(topic, *partition);
        }
        list
    }

    #[test]
    fn a_partition_needs_every_input_to_be_whole() {
        let inputs = vec!["events".to_string(), "commands".to_string()];
        let assigned = list(&[
            ("events", 0),
            ("commands", 0),
            ("events", 1),
            ("commands", 2),
        ]);
        assert_eq!(whole_partitions(&assigned, &inputs), (vec![0], vec![1, 2]));
        assert_eq!(
            describe(&assigned),
            "commands[0, 2] events[0, 1]".to_string()
        );
    }

    #[test]
    fn one_input_is_always_whole() {
        let inputs = vec!["events".to_string()];
        let assigned = list(&[("events", 3), ("events", 1)]);
        assert_eq!(whole_partitions(&assigned, &inputs), (vec![1, 3], vec![]));
    }
}

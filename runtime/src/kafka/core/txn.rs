//! The transaction's end: commit (changelog writes, offsets, commit) or
//! abort (roll the tasks' state back, rewind the consumer to the committed
//! offsets), and the producer calls both rely on. A child module of `core`
//! so it works on the open transaction's state directly.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};
use tracing::{debug, info, warn};

use super::Core;
use crate::error::RuntimeError;
use crate::kafka::Guarantee;

const TXN_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an abort is retried (see [`Core::abort_transaction`]).
const ABORT_GIVE_UP: Duration = Duration::from_secs(180);

impl Core {
    /// Commits when the policy says so.
    pub fn maybe_commit<C: ConsumerContext>(&mut self, consumer: &BaseConsumer<C>) {
        let Some(started) = self.txn_started else {
            return;
        };
        if self.txn_failed {
            self.abort();
            self.rewind(consumer);
            return;
        }
        if self
            .config
            .commit
            .due(started.elapsed(), self.txn_records, self.commit_requested)
        {
            self.commit_open(consumer);
        }
    }

    /// Commits the open transaction: changelog writes, offsets, commit. On
    /// an abortable failure it aborts, rolls state back and rewinds.
    pub fn commit<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
    ) -> Result<(), RuntimeError> {
        self.commit_open(consumer);
        self.take_fatal()
    }

    pub(super) fn commit_open<C: ConsumerContext>(&mut self, consumer: &BaseConsumer<C>) {
        if self.txn_started.is_none() {
            return;
        }
        if self.txn_failed {
            self.abort();
            self.rewind(consumer);
            return;
        }
        let started = Instant::now();
        // Straight from the stores to the producer (which copies each record):
        // no intermediate copy of every changed key and value.
        let mut changes = 0usize;
        let mut failed = false;
        for task in self.tasks.values() {
            let partition = task.partition();
            task.for_each_pending_change(|store, key, value| {
                let mut record: BaseRecord<'_, [u8], [u8]> =
                    BaseRecord::to(&self.changelog_topics[store])
                        .key(key)
                        .partition(partition);
                if let Some(value) = value {
                    record = record.payload(value);
                }
                failed |= !produce(&self.producer, record, &self.spec.app_id);
                changes += 1;
            });
        }
        if failed {
            self.txn_failed = true;
        }
        let result = self.send_offsets_and_commit(consumer);
        match result {
            Ok(()) => {
                for task in self.tasks.values_mut() {
                    task.committed();
                }
                self.offsets.clear();
                self.txn_started = None;
                self.commit_requested = false;
                self.ready_effects.append(&mut self.pending_effects);
                self.config.metrics.commits.inc();
                self.config
                    .metrics
                    .commit_latency_seconds
                    .observe(started.elapsed().as_secs_f64());
                debug!(app = %self.spec.app_id, records = self.txn_records, changes, "committed");
            }
            Err(error) => {
                if is_fatal(&error) {
                    self.fatal(error);
                } else {
                    warn!(app = %self.spec.app_id, %error, "commit failed; aborting and rewinding");
                    self.abort();
                    self.rewind(consumer);
                }
            }
        }
    }

    fn send_offsets_and_commit<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
    ) -> Result<(), KafkaError> {
        if self.txn_failed {
            return Err(KafkaError::MessageProduction(RDKafkaErrorCode::Fail));
        }
        let mut offsets = TopicPartitionList::new();
        for (topic, partition, next) in self.offsets.iter() {
            offsets.add_partition_offset(topic, partition, Offset::Offset(next))?;
        }
        if self.config.guarantee == Guarantee::AtLeastOnce {
            wait_for_deliveries(&self.producer, TXN_TIMEOUT);
            self.producer.flush(TXN_TIMEOUT)?;
            if !self.offsets.is_empty() {
                consumer.commit(&offsets, CommitMode::Sync)?;
            }
            return Ok(());
        }
        if !self.offsets.is_empty() {
            let metadata = consumer
                .group_metadata()
                .ok_or(KafkaError::MessageConsumption(
                    RDKafkaErrorCode::InvalidGroupId,
                ))?;
            self.producer
                .send_offsets_to_transaction(&offsets, &metadata, TXN_TIMEOUT)?;
        }
        wait_for_deliveries(&self.producer, TXN_TIMEOUT);
        let mut attempts = 0;
        loop {
            match self.producer.commit_transaction(TXN_TIMEOUT) {
                Err(KafkaError::Transaction(e)) if e.is_retriable() && attempts < 5 => {
                    attempts += 1;
                    warn!(app = %self.spec.app_id, error = %e, attempts, "commit retriable; retrying");
                }
                other => return other,
            }
        }
    }

    /// Aborts the open transaction and rolls every task back to its last
    /// committed state. The caller rewinds the consumer.
    pub fn abort(&mut self) {
        self.abort_with(true);
    }

    /// [`Core::abort`] for clients that are done (after a fatal error): one attempt, as
    /// the next clients' `init_transactions` aborts whatever is left open anyway.
    pub fn abandon(&mut self) {
        self.abort_with(false);
    }

    fn abort_with(&mut self, retry: bool) {
        if self.txn_started.is_none() {
            return;
        }
        let aborted = match self.config.guarantee {
            Guarantee::ExactlyOnce => self.abort_transaction(retry),
            // Nothing to abort: what was sent stays sent (at least once).
            Guarantee::AtLeastOnce => Ok(()),
        };
        if let Err(error) = aborted {
            // The producer's transaction is in a state no later call can leave (librdkafka
            // refuses to begin another while an abort is unfinished): these clients are
            // done. New ones abort whatever is open when their `init_transactions` fences it.
            warn!(app = %self.spec.app_id, %error, "abort failed; these clients cannot go on");
            self.fatal(error);
        }
        for task in self.tasks.values_mut() {
            task.rollback();
        }
        self.offsets.clear();
        self.pending_effects.clear();
        self.txn_started = None;
        self.txn_failed = false;
        self.commit_requested = false;
        self.config.metrics.aborts.inc();
    }

    /// `abort_transaction`, called again while it times out retriably, as librdkafka asks
    /// ("retry call to resume"): while a broker is dead its transaction coordinator may take
    /// longer than one call's timeout to answer. Gives up after [`ABORT_GIVE_UP`], or when
    /// shutdown is asked for (or at once when `retry` is false), with the last error.
    fn abort_transaction(&self, retry: bool) -> Result<(), KafkaError> {
        let started = Instant::now();
        loop {
            match self.producer.abort_transaction(TXN_TIMEOUT) {
                Err(KafkaError::Transaction(e))
                    if retry
                        && e.is_retriable()
                        && started.elapsed() < ABORT_GIVE_UP
                        && !self.config.shutdown.load(Ordering::Relaxed) =>
                {
                    warn!(app = %self.spec.app_id, error = %e,
                        waited_s = started.elapsed().as_secs(), "abort retriable; retrying");
                }
                other => return other,
            }
        }
    }

    /// Seeks every assigned input partition back to its committed offset.
    pub fn rewind<C: ConsumerContext>(&mut self, consumer: &BaseConsumer<C>) {
        let committed = match consumer.committed(Duration::from_secs(10)) {
            Ok(committed) => committed,
            Err(error) => {
                // Without the committed offsets we cannot rewind safely.
                self.fatal(error);
                return;
            }
        };
        for element in committed.elements() {
            let offset = match element.offset() {
                Offset::Offset(o) => Offset::Offset(o),
                _ => Offset::Beginning,
            };
            if let Err(error) = consumer.seek(
                element.topic(),
                element.partition(),
                offset,
                Duration::from_secs(10),
            ) {
                warn!(%error, topic = element.topic(), partition = element.partition(), "rewind seek failed");
                self.fatal(error);
                return;
            }
        }
        info!(app = %self.spec.app_id, "rewound to the committed offsets");
    }
}

/// Hands one record to the producer, waiting for room when its queue is
/// full. `false` when the send failed: the open transaction must abort.
pub(super) fn produce(
    producer: &ThreadedProducer<rdkafka::producer::DefaultProducerContext>,
    mut record: BaseRecord<'_, [u8], [u8]>,
    app_id: &str,
) -> bool {
    loop {
        match producer.send(record) {
            Ok(()) => return true,
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                // The producer's own thread drains the queue; wait for room.
                record = back;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((error, _)) => {
                warn!(app = %app_id, %error, "send failed; the transaction will abort");
                return false;
            }
        }
    }
}

/// Waits (at most `timeout`) until every message sent so far is delivered or
/// failed, with the producer's own polling thread serving the reports.
///
/// Why: rust-rdkafka's `flush`, which `commit_transaction` also calls first,
/// polls the event queue in rounds of up to 100 ms; on a `ThreadedProducer`
/// the polling thread takes those events, so a flush with anything in flight
/// sleeps a whole round (~100 ms a commit, measured by the runtime benchmark).
/// Once nothing is in flight that flush returns at once. Errors are still
/// reported by the flush or commit that follows, exactly as before.
fn wait_for_deliveries(
    producer: &ThreadedProducer<rdkafka::producer::DefaultProducerContext>,
    timeout: Duration,
) {
    let deadline = Instant::now() + timeout;
    while producer.in_flight_count() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn is_fatal(error: &KafkaError) -> bool {
    match error {
        KafkaError::Transaction(e) => e.is_fatal(),
        _ => false,
    }
}

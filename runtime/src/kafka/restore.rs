//! Restoring a task's stores (and timers) from their changelogs before any
//! of its input is processed, and bootstrapping global tables. Both read
//! with `read_committed` up to the last stable offset, so aborted writes
//! never come back.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::{Offset, TopicPartitionList};
use tracing::info;

use super::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::globals::Globals;
use crate::spec::ProcessorSpec;
use crate::store::FastMap;
use crate::task::Task;

// Restore reads to the end of each partition on purpose; the
// end-of-partition events it asks for are not errors worth logging.
use callstream_platform::kafka::ReadToEndContext as RestoreContext;

type RestoreConsumer = BaseConsumer<RestoreContext>;

/// Long enough for a killed broker's partitions to move to a new leader.
const WATERMARK_TIMEOUT: Duration = Duration::from_secs(60);

/// The low and high watermarks of a partition; a changelog created at
/// start-up may not be served by its leader yet, nor one whose leader just
/// died (retried, not a failure).
fn watermarks(
    consumer: &RestoreConsumer,
    topic: &str,
    partition: i32,
) -> Result<(i64, i64), KafkaError> {
    callstream_platform::kafka::fetch_watermarks_settled(
        consumer,
        topic,
        partition,
        WATERMARK_TIMEOUT,
    )
}

fn restore_consumer(config: &RuntimeConfig, group: &str) -> Result<RestoreConsumer, KafkaError> {
    let mut consumer_config = config.kafka.consumer_config(group);
    consumer_config
        .set("enable.partition.eof", "true")
        .set("fetch.max.bytes", "104857600")
        .set("max.partition.fetch.bytes", "16777216")
        .set("queued.max.messages.kbytes", "262144");
    consumer_config.create_with_context(RestoreContext)
}

/// One partition to read: its topic (an index into the read's topics) and
/// the offsets it held when the read was planned.
#[derive(Debug, Clone, Copy)]
struct Span {
    topic: usize,
    partition: i32,
    low: i64,
    high: i64,
}

impl Span {
    /// Offsets in the partition, an upper bound of its records.
    fn records(&self) -> u64 {
        u64::try_from(self.high - self.low).unwrap_or(0)
    }
}

/// The watermarks of every partition to read.
fn plan(
    consumer: &RestoreConsumer,
    topics: &[String],
    partitions: &[(usize, i32)],
) -> Result<Vec<Span>, KafkaError> {
    partitions
        .iter()
        .map(|&(topic, partition)| {
            let (low, high) = watermarks(consumer, &topics[topic], partition)?;
            Ok(Span {
                topic,
                partition,
                low,
                high,
            })
        })
        .collect()
}

/// Finds a message's topic among `topics` without allocating; consecutive
/// messages mostly share a topic, so the last match is compared first.
struct TopicLookup<'a> {
    topics: &'a [String],
    last: usize,
}

impl TopicLookup<'_> {
    fn index(&mut self, topic: &str) -> Option<usize> {
        if self.topics.get(self.last).is_some_and(|t| t == topic) {
            return Some(self.last);
        }
        self.last = self.topics.iter().position(|t| t == topic)?;
        Some(self.last)
    }
}

/// Assigns the non-empty spans from the beginning and hands every record to
/// `on_message(topic index, message)` until each span reached the end it had
/// when the read was planned. Returns the number of records read.
fn read_to_end(
    consumer: &RestoreConsumer,
    topics: &[String],
    spans: &[Span],
    what: &str,
    mut on_message: impl FnMut(usize, &BorrowedMessage<'_>),
) -> Result<u64, KafkaError> {
    let mut remaining: FastMap<(usize, i32), i64> = FastMap::default();
    let mut assignment = TopicPartitionList::new();
    for span in spans.iter().filter(|s| s.high > s.low) {
        remaining.insert((span.topic, span.partition), span.high);
        assignment.add_partition_offset(&topics[span.topic], span.partition, Offset::Beginning)?;
    }
    if remaining.is_empty() {
        return Ok(0);
    }
    consumer.assign(&assignment)?;
    let mut lookup = TopicLookup { topics, last: 0 };
    let mut read: u64 = 0;
    let mut last_report = Instant::now();
    while !remaining.is_empty() {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => {
                let Some(topic) = lookup.index(message.topic()) else {
                    continue;
                };
                on_message(topic, &message);
                read += 1;
                let key = (topic, message.partition());
                if remaining
                    .get(&key)
                    .is_some_and(|end| message.offset() + 1 >= *end)
                {
                    remaining.remove(&key);
                }
            }
            // Transaction markers take offsets that carry no record: the
            // position, not the last record, says when a partition is done.
            Some(Err(KafkaError::PartitionEOF(_))) | None => {
                for element in consumer.position()?.elements() {
                    let Some(topic) = lookup.index(element.topic()) else {
                        continue;
                    };
                    let key = (topic, element.partition());
                    if let (Offset::Offset(position), Some(end)) =
                        (element.offset(), remaining.get(&key))
                    {
                        if position >= *end {
                            remaining.remove(&key);
                        }
                    }
                }
            }
            // Only a fatal error ends the restore. Others (the broker away, or an outage's
            // errors queued before this assignment) pass: librdkafka reconnects by itself,
            // and a processor that exits on them would crash-loop through every outage.
            Some(Err(error @ KafkaError::MessageConsumptionFatal(_))) => return Err(error),
            Some(Err(error)) => {
                tracing::warn!(what, %error, "consumer error while restoring; going on");
            }
        }
        if last_report.elapsed() >= Duration::from_secs(2) {
            last_report = Instant::now();
            info!(what, read, partitions_left = remaining.len(), "restoring");
        }
    }
    consumer.unassign()?;
    Ok(read)
}

/// Most keys reserved in one store of one task before a restore: the
/// changelog's offset count bounds its keys, but an uncompacted changelog
/// holds many records per key, and memory reserved for nothing stays.
const MAX_RESERVE: u64 = 1 << 18;

pub(crate) struct Restorer {
    consumer: RestoreConsumer,
    app_id: String,
    /// Changelog topic per store index.
    topics: Vec<String>,
    user_stores: usize,
    metrics: std::sync::Arc<crate::metrics::RuntimeMetrics>,
}

impl Restorer {
    /// A restorer of the changelogs of `stores` (the processor's declared stores).
    pub fn new(
        spec: &ProcessorSpec,
        stores: &[&str],
        config: &RuntimeConfig,
    ) -> Result<Self, KafkaError> {
        Ok(Self {
            consumer: restore_consumer(config, &format!("{}-restore", spec.app_id))?,
            app_id: spec.app_id.clone(),
            topics: spec.changelog_topics(stores),
            user_stores: stores.len(),
            metrics: config.metrics.clone(),
        })
    }

    fn error(&self, source: KafkaError) -> RuntimeError {
        RuntimeError::Client {
            app: self.app_id.clone(),
            source,
        }
    }

    /// Rebuilds the tasks of `partitions` from their changelogs. Each record
    /// is copied once, from librdkafka's buffer into the store (a key seen
    /// before reuses its buffer), and no handle is decoded: the timer index
    /// is built in bulk from the timer store at the end.
    pub fn restore(&self, partitions: &[i32]) -> Result<BTreeMap<i32, Task>, RuntimeError> {
        let started = Instant::now();
        let mut tasks: BTreeMap<i32, Task> = partitions
            .iter()
            .map(|p| (*p, Task::new(*p, self.user_stores)))
            .collect();
        // Store index = topic index: `topics` is in store order.
        let changelogs: Vec<(usize, i32)> = (0..self.topics.len())
            .flat_map(|store| partitions.iter().map(move |p| (store, *p)))
            .collect();
        let spans = plan(&self.consumer, &self.topics, &changelogs).map_err(|e| self.error(e))?;
        for span in &spans {
            if let Some(task) = tasks.get_mut(&span.partition) {
                let reserve = span.records().min(MAX_RESERVE);
                task.reserve(span.topic, usize::try_from(reserve).unwrap_or(0));
            }
        }
        let restored = read_to_end(
            &self.consumer,
            &self.topics,
            &spans,
            &self.app_id,
            |store, message| {
                let Some(key) = message.key() else {
                    return;
                };
                if let Some(task) = tasks.get_mut(&message.partition()) {
                    task.restore(store, key, message.payload());
                }
            },
        )
        .map_err(|e| self.error(e))?;
        for task in tasks.values_mut() {
            task.rebuild_derived();
        }
        let seconds = started.elapsed().as_secs_f64();
        self.metrics.restored_records.inc_by(restored);
        info!(app = %self.app_id, ?partitions, restored, seconds, "restore finished");
        Ok(tasks)
    }
}

/// Keeps the global tables up to date: read whole at start, then followed.
pub(crate) struct GlobalReader {
    consumer: RestoreConsumer,
    app_id: String,
}

impl GlobalReader {
    /// Reads every global table to its end, then keeps following them.
    pub fn start(
        spec: &ProcessorSpec,
        config: &RuntimeConfig,
        partition_counts: &HashMap<String, i32>,
        globals: &mut Globals,
    ) -> Result<Option<Self>, RuntimeError> {
        if spec.global_tables.is_empty() {
            return Ok(None);
        }
        let error = |source| RuntimeError::Client {
            app: spec.app_id.clone(),
            source,
        };
        let consumer =
            restore_consumer(config, &format!("{}-globals", spec.app_id)).map_err(error)?;
        let tables = &spec.global_tables;
        let partitions: Vec<(usize, i32)> = tables
            .iter()
            .enumerate()
            .flat_map(|(index, t)| {
                let count = partition_counts.get(t).copied().unwrap_or(0);
                (0..count).map(move |p| (index, p))
            })
            .collect();
        let spans = plan(&consumer, tables, &partitions).map_err(error)?;
        let read = read_to_end(&consumer, tables, &spans, "global tables", |_, message| {
            if let Some(key) = message.key() {
                globals.apply(
                    message.topic(),
                    key.to_vec(),
                    message.payload().map(<[u8]>::to_vec),
                );
            }
        })
        .map_err(error)?;
        info!(app = %spec.app_id, tables = ?spec.global_tables, read, "global tables loaded");
        // Follow from the ends the bootstrap read to; records it read past
        // them come again in order, which leaves the same latest values.
        let mut follow = TopicPartitionList::new();
        for span in &spans {
            follow
                .add_partition_offset(
                    &tables[span.topic],
                    span.partition,
                    Offset::Offset(span.high),
                )
                .map_err(error)?;
        }
        consumer.assign(&follow).map_err(error)?;
        Ok(Some(Self {
            consumer,
            app_id: spec.app_id.clone(),
        }))
    }

    /// Applies what arrived since the last call, without waiting.
    pub fn poll(&self, globals: &mut Globals) {
        for _ in 0..10_000 {
            match self.consumer.poll(Duration::ZERO) {
                Some(Ok(message)) => {
                    if let Some(key) = message.key() {
                        globals.apply(
                            message.topic(),
                            key.to_vec(),
                            message.payload().map(<[u8]>::to_vec),
                        );
                    }
                }
                Some(Err(KafkaError::PartitionEOF(_))) => {}
                Some(Err(error)) => {
                    tracing::warn!(app = %self.app_id, %error, "global table read failed");
                    return;
                }
                None => return,
            }
        }
    }
}

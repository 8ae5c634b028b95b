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

use crate::error::RuntimeError;
use crate::globals::Globals;
use crate::kafka::RuntimeConfig;
use crate::spec::ProcessorSpec;
use crate::store::Change;
use crate::task::Task;

/// Restore reads to the end of each partition on purpose; the
/// end-of-partition events it asks for are not errors worth logging.
pub(crate) struct RestoreContext;

impl rdkafka::ClientContext for RestoreContext {
    fn error(&self, error: KafkaError, reason: &str) {
        if !matches!(error, KafkaError::PartitionEOF(_)) {
            tracing::error!(%error, reason, "restore consumer error");
        }
    }
}

impl rdkafka::consumer::ConsumerContext for RestoreContext {}

type RestoreConsumer = BaseConsumer<RestoreContext>;

const WATERMARK_TIMEOUT: Duration = Duration::from_secs(10);

/// The low and high watermarks of a partition. A changelog created moments
/// ago (at start-up) may have no leader yet: those answers are retried
/// until the watermark timeout, not reported as a failed restore.
fn watermarks(
    consumer: &RestoreConsumer,
    topic: &str,
    partition: i32,
) -> Result<(i64, i64), KafkaError> {
    use rdkafka::error::RDKafkaErrorCode::{
        LeaderNotAvailable, NotLeaderForPartition, UnknownTopicOrPartition,
    };
    let deadline = Instant::now() + WATERMARK_TIMEOUT;
    loop {
        match consumer.fetch_watermarks(topic, partition, WATERMARK_TIMEOUT) {
            Err(KafkaError::MetadataFetch(
                LeaderNotAvailable | NotLeaderForPartition | UnknownTopicOrPartition,
            )) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other,
        }
    }
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

/// What `read_to_end` read: the record count, and the end offset each
/// partition had when the read began.
struct ReadToEnd {
    records: u64,
    ends: Vec<((String, i32), i64)>,
}

/// Assigns the non-empty partitions among `partitions` from the beginning
/// and hands every record to `on_message` until each reached the end it had
/// when the read began.
fn read_to_end(
    consumer: &RestoreConsumer,
    partitions: &[(String, i32)],
    what: &str,
    mut on_message: impl FnMut(&BorrowedMessage<'_>),
) -> Result<ReadToEnd, KafkaError> {
    let mut remaining: HashMap<(String, i32), i64> = HashMap::new();
    let mut ends = Vec::new();
    let mut assignment = TopicPartitionList::new();
    for (topic, partition) in partitions {
        let (low, high) = watermarks(consumer, topic, *partition)?;
        ends.push(((topic.clone(), *partition), high));
        if high > low {
            remaining.insert((topic.clone(), *partition), high);
            assignment.add_partition_offset(topic, *partition, Offset::Beginning)?;
        }
    }
    if remaining.is_empty() {
        return Ok(ReadToEnd { records: 0, ends });
    }
    consumer.assign(&assignment)?;
    let mut read: u64 = 0;
    let mut last_report = Instant::now();
    while !remaining.is_empty() {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => {
                on_message(&message);
                read += 1;
                let key = (message.topic().to_string(), message.partition());
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
                    let key = (element.topic().to_string(), element.partition());
                    if let (Offset::Offset(position), Some(end)) =
                        (element.offset(), remaining.get(&key))
                    {
                        if position >= *end {
                            remaining.remove(&key);
                        }
                    }
                }
            }
            Some(Err(error)) => return Err(error),
        }
        if last_report.elapsed() >= Duration::from_secs(2) {
            last_report = Instant::now();
            info!(what, read, partitions_left = remaining.len(), "restoring");
        }
    }
    consumer.unassign()?;
    Ok(ReadToEnd {
        records: read,
        ends,
    })
}

pub(crate) struct Restorer {
    consumer: RestoreConsumer,
    app_id: String,
    /// Changelog topic per store index.
    topics: Vec<String>,
    user_stores: usize,
    metrics: std::sync::Arc<crate::metrics::RuntimeMetrics>,
}

impl Restorer {
    pub fn new(spec: &ProcessorSpec, config: &RuntimeConfig) -> Result<Self, KafkaError> {
        Ok(Self {
            consumer: restore_consumer(config, &format!("{}-restore", spec.app_id))?,
            app_id: spec.app_id.clone(),
            topics: spec
                .all_store_names()
                .iter()
                .map(|s| spec.changelog_topic(s))
                .collect(),
            user_stores: spec.stores.len(),
            metrics: config.metrics.clone(),
        })
    }

    fn error(&self, source: KafkaError) -> RuntimeError {
        RuntimeError::Client {
            app: self.app_id.clone(),
            source,
        }
    }

    /// Rebuilds the tasks of `partitions` from their changelogs.
    pub fn restore(&self, partitions: &[i32]) -> Result<BTreeMap<i32, Task>, RuntimeError> {
        let started = Instant::now();
        let mut tasks: BTreeMap<i32, Task> = partitions
            .iter()
            .map(|p| (*p, Task::new(*p, self.user_stores)))
            .collect();
        let index_of: HashMap<&str, usize> = self
            .topics
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_str(), i))
            .collect();
        let changelogs: Vec<(String, i32)> = self
            .topics
            .iter()
            .flat_map(|t| partitions.iter().map(move |p| (t.clone(), *p)))
            .collect();
        let restored = read_to_end(&self.consumer, &changelogs, &self.app_id, |message| {
            let (Some(&store), Some(key)) = (index_of.get(message.topic()), message.key()) else {
                return;
            };
            if let Some(task) = tasks.get_mut(&message.partition()) {
                task.restore(Change {
                    store,
                    key: key.to_vec(),
                    value: message.payload().map(<[u8]>::to_vec),
                });
            }
        })
        .map_err(|e| self.error(e))?
        .records;
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
        let partitions: Vec<(String, i32)> = spec
            .global_tables
            .iter()
            .flat_map(|t| {
                let count = partition_counts.get(t).copied().unwrap_or(0);
                (0..count).map(move |p| (t.clone(), p))
            })
            .collect();
        let read = read_to_end(&consumer, &partitions, "global tables", |message| {
            if let Some(key) = message.key() {
                globals.apply(
                    message.topic(),
                    key.to_vec(),
                    message.payload().map(<[u8]>::to_vec),
                );
            }
        })
        .map_err(error)?;
        info!(app = %spec.app_id, tables = ?spec.global_tables, read = read.records, "global tables loaded");
        // Follow from the ends the bootstrap read to; records it read past
        // them come again in order, which leaves the same latest values.
        let mut follow = TopicPartitionList::new();
        for ((topic, partition), end) in &read.ends {
            follow
                .add_partition_offset(topic, *partition, Offset::Offset(*end))
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

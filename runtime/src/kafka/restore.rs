//! Restoring a task's stores (and timers) from their changelogs before any
//! of its input is processed. Reads with `read_committed` up to the last
//! stable offset, so aborted writes never come back.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use tracing::info;

use crate::error::RuntimeError;
use crate::kafka::RuntimeConfig;
use crate::spec::ProcessorSpec;
use crate::store::Change;
use crate::task::Task;

/// Restore reads to the end of each changelog partition on purpose; the
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

pub(crate) struct Restorer {
    consumer: BaseConsumer<RestoreContext>,
    app_id: String,
    /// Changelog topic per store index.
    topics: Vec<String>,
    user_stores: usize,
    metrics: std::sync::Arc<crate::metrics::RuntimeMetrics>,
}

const WATERMARK_TIMEOUT: Duration = Duration::from_secs(10);

impl Restorer {
    pub fn new(spec: &ProcessorSpec, config: &RuntimeConfig) -> Result<Self, KafkaError> {
        let mut consumer_config = config
            .kafka
            .consumer_config(&format!("{}-restore", spec.app_id));
        consumer_config
            .set("enable.partition.eof", "true")
            .set("fetch.max.bytes", "104857600")
            .set("max.partition.fetch.bytes", "16777216")
            .set("queued.max.messages.kbytes", "262144");
        Ok(Self {
            consumer: consumer_config.create_with_context(RestoreContext)?,
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

        // Where each changelog partition ends now (its last stable offset).
        let mut remaining: HashMap<(usize, i32), i64> = HashMap::new();
        let mut assignment = TopicPartitionList::new();
        for (store, topic) in self.topics.iter().enumerate() {
            for &partition in partitions {
                let (low, high) = self
                    .consumer
                    .fetch_watermarks(topic, partition, WATERMARK_TIMEOUT)
                    .map_err(|e| self.error(e))?;
                if high > low {
                    remaining.insert((store, partition), high);
                    assignment
                        .add_partition_offset(topic, partition, Offset::Beginning)
                        .map_err(|e| self.error(e))?;
                }
            }
        }
        let mut restored: u64 = 0;
        if !remaining.is_empty() {
            self.consumer
                .assign(&assignment)
                .map_err(|e| self.error(e))?;
            let mut last_report = Instant::now();
            while !remaining.is_empty() {
                match self.consumer.poll(Duration::from_millis(200)) {
                    Some(Ok(message)) => {
                        let Some(&store) = index_of.get(message.topic()) else {
                            continue;
                        };
                        let partition = message.partition();
                        if let (Some(task), Some(key)) = (tasks.get_mut(&partition), message.key())
                        {
                            task.restore(Change {
                                store,
                                key: key.to_vec(),
                                value: message.payload().map(<[u8]>::to_vec),
                            });
                            restored += 1;
                        }
                        if let Some(end) = remaining.get(&(store, partition)) {
                            if message.offset() + 1 >= *end {
                                remaining.remove(&(store, partition));
                            }
                        }
                    }
                    Some(Err(KafkaError::PartitionEOF(partition))) => {
                        // The EOF event names only the partition; the position says which topics are done.
                        self.drop_finished(&mut remaining, Some(partition))?;
                    }
                    Some(Err(error)) => return Err(self.error(error)),
                    None => self.drop_finished(&mut remaining, None)?,
                }
                if last_report.elapsed() >= Duration::from_secs(2) {
                    last_report = Instant::now();
                    info!(app = %self.app_id, restored, left = remaining.len(), "restoring");
                }
            }
            self.consumer.unassign().map_err(|e| self.error(e))?;
        }
        for task in tasks.values_mut() {
            task.rebuild_derived();
        }
        let seconds = started.elapsed().as_secs_f64();
        self.metrics.restored_records.inc_by(restored);
        info!(app = %self.app_id, ?partitions, restored, seconds, "restore finished");
        Ok(tasks)
    }

    /// Removes the changelog partitions whose position has reached their end
    /// (transaction markers take offsets that carry no record).
    fn drop_finished(
        &self,
        remaining: &mut HashMap<(usize, i32), i64>,
        only_partition: Option<i32>,
    ) -> Result<(), RuntimeError> {
        let positions = self.consumer.position().map_err(|e| self.error(e))?;
        for element in positions.elements() {
            if only_partition.is_some_and(|p| p != element.partition()) {
                continue;
            }
            let Some(store) = self.topics.iter().position(|t| t == element.topic()) else {
                continue;
            };
            if let (Offset::Offset(position), Some(end)) = (
                element.offset(),
                remaining.get(&(store, element.partition())),
            ) {
                if position >= *end {
                    remaining.remove(&(store, element.partition()));
                }
            }
        }
        Ok(())
    }
}

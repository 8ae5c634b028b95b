//! Reading the topics: a `read_committed` consumer with an explicit assignment (no
//! consumer group, no Kafka commits: where a view has got to lives in Postgres), and
//! batches of records with their coordinates.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use callstream_platform::kafka::ReadToEndContext;
use callstream_platform::{KafkaSettings, Topics};
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

/// `(physical topic, partition)`.
pub type TopicPartition = (Arc<str>, i32);

/// One record as read, before decoding. `payload` is `None` for a tombstone.
#[derive(Debug, Clone)]
pub struct RawRecord {
    pub topic: Arc<str>,
    pub partition: i32,
    pub offset: i64,
    pub payload: Option<Vec<u8>>,
    /// Only for dead letters (the only view that keeps them; copying them for every
    /// record would cost every view): key, headers and timestamp.
    pub letter: Option<LetterParts>,
}

/// What a dead letter carries beside its value.
#[derive(Debug, Clone, Default)]
pub struct LetterParts {
    pub key: Option<Vec<u8>>,
    pub headers: Vec<(String, Vec<u8>)>,
    pub timestamp_ms: Option<i64>,
}

impl LetterParts {
    fn of(msg: &impl Message) -> Self {
        use rdkafka::message::Headers as _;
        let headers = msg
            .headers()
            .map(|h| {
                h.iter()
                    .map(|header| {
                        (
                            header.key.to_owned(),
                            header.value.map(<[u8]>::to_vec).unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            key: msg.key().map(<[u8]>::to_vec),
            headers,
            timestamp_ms: msg.timestamp().to_millis(),
        }
    }
}

/// The logical topics behind physical names, for the configured prefix.
#[derive(Debug, Clone)]
pub struct TopicNames {
    by_physical: HashMap<Arc<str>, &'static str>,
}

impl TopicNames {
    /// Names for every logical topic in `logical`.
    pub fn new(topics: &Topics, logical: &[&'static str]) -> Self {
        let by_physical = logical
            .iter()
            .map(|l| (Arc::from(topics.name(l).as_str()), *l))
            .collect();
        Self { by_physical }
    }

    /// The logical name of a physical topic.
    pub fn logical(&self, physical: &str) -> Option<&'static str> {
        self.by_physical.get(physical).copied()
    }

    /// The interned physical name.
    pub fn physical(&self, physical: &str) -> Option<Arc<str>> {
        self.resolve(physical).map(|(name, _)| name)
    }

    /// The interned physical name and its logical topic, in one lookup (for every record
    /// read).
    pub fn resolve(&self, physical: &str) -> Option<(Arc<str>, &'static str)> {
        self.by_physical
            .get_key_value(physical)
            .map(|(k, logical)| (k.clone(), *logical))
    }

    /// Every physical name.
    pub fn all_physical(&self) -> impl Iterator<Item = &Arc<str>> {
        self.by_physical.keys()
    }
}

/// A consumer that is assigned partitions explicitly.
pub struct Source {
    consumer: StreamConsumer<ReadToEndContext>,
    names: TopicNames,
    assigned: BTreeMap<TopicPartition, ()>,
}

const METADATA_TIMEOUT: Duration = Duration::from_secs(10);

impl Source {
    /// A `read_committed` consumer that commits nothing; `eof` turns on partition-end
    /// events (a rebuild uses them to know it has caught up).
    pub fn new(kafka: &KafkaSettings, names: TopicNames, eof: bool) -> Result<Self, KafkaError> {
        // The group id is never used to join a group (the assignment is explicit) or to
        // commit; librdkafka wants one all the same.
        let mut config = kafka.consumer_config(&format!("{}-unused-group", kafka.client_id));
        config
            .set("enable.partition.eof", if eof { "true" } else { "false" })
            .set("fetch.wait.max.ms", "50");
        // The context keeps partition ends (a rebuild's progress) out of the error log.
        let consumer: StreamConsumer<ReadToEndContext> =
            config.create_with_context(ReadToEndContext)?;
        Ok(Self {
            consumer,
            names,
            assigned: BTreeMap::new(),
        })
    }

    /// The topic names this source reads.
    pub fn names(&self) -> &TopicNames {
        &self.names
    }

    /// Every partition of every topic that exists now (missing topics are left out and
    /// looked for again later).
    pub fn discover(&self) -> Result<Vec<TopicPartition>, KafkaError> {
        let mut out = Vec::new();
        for topic in self.names.all_physical() {
            let metadata = self
                .consumer
                .fetch_metadata(Some(topic), METADATA_TIMEOUT)?;
            for t in metadata.topics() {
                if t.error().is_some() {
                    continue;
                }
                for p in t.partitions() {
                    out.push((topic.clone(), p.id()));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Adds partitions to the assignment, each starting at its offset.
    pub fn assign(&mut self, starts: &[(TopicPartition, i64)]) -> Result<(), KafkaError> {
        let mut list = TopicPartitionList::new();
        for ((topic, partition), offset) in starts {
            if self.assigned.contains_key(&(topic.clone(), *partition)) {
                continue;
            }
            list.add_partition_offset(topic, *partition, Offset::Offset(*offset))?;
        }
        if list.count() == 0 {
            return Ok(());
        }
        self.consumer.incremental_assign(&list)?;
        for ((topic, partition), _) in starts {
            self.assigned.insert((topic.clone(), *partition), ());
        }
        Ok(())
    }

    /// The partitions assigned so far.
    pub fn assigned(&self) -> impl Iterator<Item = &TopicPartition> {
        self.assigned.keys()
    }

    /// Every assigned partition with its logical topic (for the lag metric).
    pub fn assigned_logical(&self) -> Vec<(String, i32, &'static str)> {
        self.assigned
            .keys()
            .filter_map(|(topic, partition)| {
                let logical = self.names.logical(topic)?;
                Some((topic.to_string(), *partition, logical))
            })
            .collect()
    }

    /// The consumer's fetch position of every assigned partition that has one.
    pub fn positions(&self) -> HashMap<TopicPartition, i64> {
        let mut out = HashMap::new();
        if let Ok(list) = self.consumer.position() {
            for e in list.elements() {
                if let (Offset::Offset(o), Some(topic)) =
                    (e.offset(), self.names.physical(e.topic()))
                {
                    out.insert((topic, e.partition()), o);
                }
            }
        }
        out
    }

    /// `(low, high)` watermarks of a partition.
    pub fn watermarks(&self, tp: &TopicPartition) -> Result<(i64, i64), KafkaError> {
        callstream_platform::kafka::fetch_watermarks_settled(
            &self.consumer,
            &tp.0,
            tp.1,
            METADATA_TIMEOUT,
        )
    }

    /// Up to `max_records` records, waiting at most `max_wait` after the first one (and at
    /// most `idle` for the first). Partition ends seen on the way are returned too.
    pub async fn next_batch(
        &self,
        max_records: usize,
        max_wait: Duration,
        idle: Duration,
    ) -> Batch {
        let mut batch = Batch::default();
        let first_deadline = Instant::now() + idle;
        let mut deadline = None::<Instant>;
        while batch.records.len() < max_records {
            let until = deadline.unwrap_or(first_deadline);
            let Some(left) = until.checked_duration_since(Instant::now()) else {
                break;
            };
            match tokio::time::timeout(left, self.consumer.recv()).await {
                Err(_) => break,
                Ok(Ok(msg)) => {
                    let Some((topic, logical)) = self.names.resolve(msg.topic()) else {
                        continue;
                    };
                    let letter = (logical == callstream_platform::topics::DEAD_LETTERS)
                        .then(|| LetterParts::of(&msg));
                    batch.records.push(RawRecord {
                        topic,
                        partition: msg.partition(),
                        offset: msg.offset(),
                        payload: msg.payload().map(<[u8]>::to_vec),
                        letter,
                    });
                    deadline.get_or_insert_with(|| Instant::now() + max_wait);
                }
                Ok(Err(KafkaError::PartitionEOF(partition))) => batch.eof.push(partition),
                Ok(Err(e)) => {
                    // librdkafka retries on its own; a broker away shows up here repeatedly.
                    tracing::warn!(error = %e, "kafka consumer error; retrying");
                    batch.kafka_error = true;
                    break;
                }
            }
        }
        batch
    }
}

/// What one call of [`Source::next_batch`] read.
#[derive(Debug, Default)]
pub struct Batch {
    pub records: Vec<RawRecord>,
    /// Partitions (numbers only: librdkafka's EOF event names no topic) that reached their end.
    pub eof: Vec<i32>,
    /// A consumer error ended the batch early.
    pub kafka_error: bool,
}

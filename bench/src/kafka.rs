//! Kafka plumbing the benchmarks share: fresh uniquely named topics (and
//! their removal), a fast bulk loader, and `read_committed` readers.
//!
//! The loader is deliberately not how callstream's services produce (no
//! transactions, `acks=1`, large batches): it fills an input topic before a
//! measurement starts, and only its speed matters. Every record it reports
//! as loaded was acknowledged by the broker; a failed delivery fails the load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use callstream_platform::admin;
pub use callstream_platform::topics::TopicKind;
use callstream_platform::topics::Topics;
use callstream_platform::KafkaSettings;
use rdkafka::admin::AdminOptions;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

/// `prefix` plus a random suffix: topics, groups and app ids no earlier run used.
pub fn unique_name(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..12])
}

/// Microseconds since the Unix epoch: the stamp latency benchmarks put in values.
pub fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// Runs an admin future to completion on a runtime of its own (the benchmarks are
/// synchronous).
pub fn block_on<F: std::future::Future>(future: F) -> Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a tokio runtime for admin calls")?;
    Ok(runtime.block_on(future))
}

/// Creates topics of one kind with `partitions` partitions, as the design's
/// topics are made (`Events`: delete policy; `Table`: compacted).
pub fn create_topics(
    settings: &KafkaSettings,
    names: &[&str],
    kind: TopicKind,
    partitions: i32,
) -> Result<()> {
    let topics = Topics {
        partitions,
        ..Topics::default()
    };
    let specs: Vec<_> = names.iter().map(|name| topics.spec(name, kind)).collect();
    let report = block_on(admin::ensure_topics(settings, &specs))?
        .with_context(|| format!("creating topics {names:?}"))?;
    if !report.differences.is_empty() {
        bail!(
            "topics {names:?} already existed with other settings: {:?}",
            report.differences
        );
    }
    Ok(())
}

/// A benchmark's end: deletes the topics it `made`, or with `keep` (its
/// `--keep-topics`) names them for a look.
pub fn clean_up(settings: &KafkaSettings, made: &[String], keep: bool) {
    if keep {
        tracing::info!(topics = ?made, "keeping the benchmark topics");
    } else {
        delete_topics(settings, made);
    }
}

/// Deletes topics a benchmark made; failures are logged, not fatal (the
/// numbers are already out).
pub fn delete_topics(settings: &KafkaSettings, names: &[String]) {
    if names.is_empty() {
        return;
    }
    let result = (|| -> Result<()> {
        let client = admin::admin_client(settings)?;
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let results = block_on(client.delete_topics(&names, &AdminOptions::new()))??;
        for result in results {
            if let Err((topic, code)) = result {
                if code != RDKafkaErrorCode::UnknownTopicOrPartition {
                    tracing::warn!(%topic, %code, "deleting a benchmark topic failed");
                }
            }
        }
        Ok(())
    })();
    if let Err(error) = result {
        tracing::warn!(%error, "deleting the benchmark topics failed");
    }
}

/// Counts failed deliveries of the loader.
#[derive(Default)]
struct Deliveries {
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((error, _)) = result {
            self.failed.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut first) = self.first_error.lock() {
                first.get_or_insert_with(|| error.to_string());
            }
        }
    }
}

/// Where one loaded record goes: its partition (else by key hash) and timestamp (else the
/// produce time). The detector's inputs need timestamps (its stream time follows them) and
/// its timer changelog explicit partitions.
#[derive(Debug, Clone, Copy, Default)]
pub struct Placed {
    pub partition: Option<i32>,
    pub timestamp_ms: Option<i64>,
}

/// Loads `records` records into `topic` as fast as the broker takes them;
/// `fill(i, key, value)` writes record `i` into the (cleared) buffers.
/// Returns how long it took, once every record is acknowledged.
pub fn preload(
    settings: &KafkaSettings,
    topic: &str,
    records: u64,
    mut fill: impl FnMut(u64, &mut Vec<u8>, &mut Vec<u8>),
) -> Result<Duration> {
    preload_placed(settings, topic, records, |i, key, value| {
        fill(i, key, value);
        Ok(Placed::default())
    })
}

/// [`preload`] where `fill` also says where each record goes, and may fail.
pub fn preload_placed(
    settings: &KafkaSettings,
    topic: &str,
    records: u64,
    mut fill: impl FnMut(u64, &mut Vec<u8>, &mut Vec<u8>) -> Result<Placed>,
) -> Result<Duration> {
    let mut config = settings.base_config();
    config
        .set("acks", "1")
        .set("enable.idempotence", "false")
        .set("partitioner", "murmur2_random")
        .set("linger.ms", "20")
        .set("batch.size", "1000000")
        .set("batch.num.messages", "100000")
        .set("compression.type", "lz4")
        .set("queue.buffering.max.messages", "1000000")
        .set("queue.buffering.max.kbytes", "1048576");
    let producer: BaseProducer<Deliveries> = config
        .create_with_context(Deliveries::default())
        .context("creating the loader")?;
    let started = Instant::now();
    let (mut key, mut value) = (Vec::new(), Vec::new());
    for i in 0..records {
        key.clear();
        value.clear();
        let placed = fill(i, &mut key, &mut value)?;
        let mut record = BaseRecord::to(topic).key(&key[..]).payload(&value[..]);
        if let Some(partition) = placed.partition {
            record = record.partition(partition);
        }
        if let Some(ms) = placed.timestamp_ms {
            record = record.timestamp(ms);
        }
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    producer.poll(Duration::from_millis(10));
                }
                Err((error, _)) => return Err(error).context("queueing a record to load"),
            }
        }
        if i % 10_000 == 0 {
            producer.poll(Duration::ZERO);
        }
    }
    producer
        .flush(Duration::from_secs(120))
        .context("waiting for the loaded records to be acknowledged")?;
    let context = producer.context();
    let failed = context.failed.load(Ordering::Relaxed);
    if failed > 0 {
        let first = context.first_error.lock().ok().and_then(|f| f.clone());
        bail!("{failed} of {records} records failed to load into {topic}: {first:?}");
    }
    Ok(started.elapsed())
}

/// A `read_committed` consumer assigned to every partition of `topic` from
/// the beginning, without a group rebalance (`assign`, not `subscribe`), so
/// it reads from its first poll. `fetch_wait_ms` bounds how long the broker
/// holds a fetch when nothing new is committed.
pub fn committed_reader(
    settings: &KafkaSettings,
    topic: &str,
    partitions: i32,
    fetch_wait_ms: u32,
) -> Result<BaseConsumer> {
    let mut config = settings.consumer_config(&unique_name("bench-reader"));
    config
        .set("fetch.wait.max.ms", fetch_wait_ms.to_string())
        .set("fetch.max.bytes", "52428800")
        .set("max.partition.fetch.bytes", "4194304");
    let consumer: BaseConsumer = config
        .create()
        .context("creating a read_committed reader")?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment.add_partition_offset(topic, partition, Offset::Beginning)?;
    }
    consumer
        .assign(&assignment)
        .with_context(|| format!("assigning {topic}"))?;
    Ok(consumer)
}

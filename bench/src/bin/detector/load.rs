//! Bulk loading and reading back, beyond what the shared `kafka` module
//! offers: the detector's inputs need record timestamps (its stream time
//! follows them), and its timer changelog needs explicit partitions (the
//! runtime writes a changelog partition for partition with the input, not
//! by the changelog key's hash).
//!
//! Like the shared loader, this is not how services produce (`acks=1`, no
//! idempotence, large batches); only speed matters, and every record it
//! reports loaded was acknowledged.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use callstream_bench::kafka::unique_name;
use callstream_platform::kafka::ReadToEndContext;
use callstream_platform::KafkaSettings;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

/// Where one loaded record goes: its partition (else by key hash) and
/// timestamp (else the produce time).
#[derive(Debug, Clone, Copy, Default)]
pub struct Placed {
    pub partition: Option<i32>,
    pub timestamp_ms: Option<i64>,
}

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

/// Loads `records` records into `topic`; `fill(i, key, value)` writes
/// record `i` into the cleared buffers and says where it goes. Returns how
/// long it took, once every record is acknowledged.
pub fn load(
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

/// The latest value of every live key of a compacted topic (tombstones
/// remove the key), as a restore would leave it: key → value length.
/// Reads `read_committed` to the end of every partition.
pub fn latest_sizes(
    settings: &KafkaSettings,
    topic: &str,
    partitions: i32,
    timeout: Duration,
) -> Result<HashMap<Vec<u8>, usize>> {
    let mut config = settings.consumer_config(&unique_name("bench-changelog-reader"));
    config
        .set("enable.partition.eof", "true")
        .set("fetch.max.bytes", "52428800")
        .set("max.partition.fetch.bytes", "4194304");
    let consumer: BaseConsumer<ReadToEndContext> = config
        .create_with_context(ReadToEndContext)
        .context("creating a changelog reader")?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment.add_partition_offset(topic, partition, Offset::Beginning)?;
    }
    consumer
        .assign(&assignment)
        .with_context(|| format!("assigning {topic}"))?;
    let mut latest = HashMap::new();
    let mut at_end = vec![false; usize::try_from(partitions).unwrap_or(0)];
    let give_up = Instant::now() + timeout;
    while at_end.iter().any(|done| !done) {
        if Instant::now() > give_up {
            bail!("{topic} was not read to its end within {timeout:?}");
        }
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Ok(message)) => {
                if let Some(done) = usize::try_from(message.partition())
                    .ok()
                    .and_then(|p| at_end.get_mut(p))
                {
                    // A record after an end-of-partition means more arrived.
                    *done = false;
                }
                let Some(key) = message.key() else { continue };
                match message.payload() {
                    Some(value) => latest.insert(key.to_vec(), value.len()),
                    None => latest.remove(key),
                };
            }
            Some(Err(KafkaError::PartitionEOF(partition))) => {
                if let Some(done) = usize::try_from(partition)
                    .ok()
                    .and_then(|p| at_end.get_mut(p))
                {
                    *done = true;
                }
            }
            Some(Err(error)) => return Err(error).with_context(|| format!("reading {topic}")),
        }
    }
    Ok(latest)
}

//! Reading a compacted topic back as a restore would. (Loading with record
//! timestamps and explicit partitions is the shared loader's
//! `callstream_bench::kafka::preload_placed`.)

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use callstream_bench::kafka::unique_name;
use callstream_platform::kafka::ReadToEndContext;
use callstream_platform::KafkaSettings;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

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

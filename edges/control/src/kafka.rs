//! Reading the `control` topic to its end, and publishing the changes of
//! one apply in one Kafka transaction.
//!
//! Guarantees: [`read_table`] returns the latest committed value of every
//! key as of the moment it started (it reads each partition up to the end
//! offset it had then, as a `read_committed` consumer); [`publish`] makes
//! all the changes of an apply visible together, or none of them.
//! rdkafka's consumer and transaction calls block, so both run on tokio's
//! blocking pool.

use std::collections::HashMap;
use std::time::Duration;

use callstream_platform::kafka::ReadToEndContext;
use callstream_platform::KafkaSettings;
use callstream_schemas::{ControlChange, Event};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use callstream_kit::control::view::ControlSnapshot;

const TIMEOUT: Duration = Duration::from_secs(30);

/// Why the control topic could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KafkaIoError {
    #[error("the control topic {0} does not exist (create it with `callstream topics create`)")]
    NoTopic(String),
    #[error("Kafka: {0}")]
    Kafka(#[from] KafkaError),
    #[error("a change could not be encoded: {0}")]
    Encode(#[from] callstream_schemas::EncodeError),
    #[error("the Kafka worker thread failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// The table as the topic holds it now.
pub async fn read_table(
    settings: &KafkaSettings,
    topic: &str,
) -> Result<ControlSnapshot, KafkaIoError> {
    let settings = settings.clone();
    let topic = topic.to_owned();
    tokio::task::spawn_blocking(move || read_table_blocking(&settings, &topic)).await?
}

fn read_table_blocking(
    settings: &KafkaSettings,
    topic: &str,
) -> Result<ControlSnapshot, KafkaIoError> {
    let group = format!("callstream-control-reader-{}", uuid::Uuid::new_v4());
    let consumer: BaseConsumer<ReadToEndContext> = settings
        .consumer_config(&group)
        .set("enable.partition.eof", "true")
        .create_with_context(ReadToEndContext)?;
    let metadata = consumer.fetch_metadata(Some(topic), TIMEOUT)?;
    let partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic && t.error().is_none())
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    if partitions.is_empty() {
        return Err(KafkaIoError::NoTopic(topic.to_owned()));
    }
    let mut remaining: HashMap<i32, i64> = HashMap::new();
    let mut assignment = TopicPartitionList::new();
    for partition in partitions {
        let (low, high) = callstream_platform::kafka::fetch_watermarks_settled(
            &consumer, topic, partition, TIMEOUT,
        )?;
        if high > low {
            remaining.insert(partition, high);
            assignment.add_partition_offset(topic, partition, Offset::Beginning)?;
        }
    }
    let mut snapshot = ControlSnapshot::default();
    if remaining.is_empty() {
        return Ok(snapshot);
    }
    consumer.assign(&assignment)?;
    while !remaining.is_empty() {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => {
                if let Some(key) = message.key() {
                    snapshot.apply(key.to_vec(), message.payload().map(<[u8]>::to_vec));
                }
                let partition = message.partition();
                if remaining
                    .get(&partition)
                    .is_some_and(|end| message.offset() + 1 >= *end)
                {
                    remaining.remove(&partition);
                }
            }
            // Transaction markers take offsets without records: the
            // position says when a partition is read to its end.
            Some(Err(KafkaError::PartitionEOF(_))) | None => {
                for element in consumer.position()?.elements() {
                    if let (Offset::Offset(position), Some(end)) =
                        (element.offset(), remaining.get(&element.partition()))
                    {
                        if position >= *end {
                            remaining.remove(&element.partition());
                        }
                    }
                }
            }
            Some(Err(error)) => return Err(error.into()),
        }
    }
    Ok(snapshot)
}

/// Publishes `changes` to `topic` in one transaction, keyed by setting, and each also to
/// the topic's history (`control-history`, never compacted), in the same transaction: the
/// audit trail keeps every change, or none of the apply shows anywhere.
pub async fn publish(
    settings: &KafkaSettings,
    topic: &str,
    transactional_id: &str,
    changes: &[ControlChange],
) -> Result<(), KafkaIoError> {
    let records = changes
        .iter()
        .map(|change| {
            Ok((
                change.record_key(),
                change.encode()?,
                change.kafka_headers(),
            ))
        })
        .collect::<Result<Vec<_>, KafkaIoError>>()?;
    let settings = settings.clone();
    let topics = [
        topic.to_owned(),
        callstream_platform::topics::history_of(topic),
    ];
    let transactional_id = transactional_id.to_owned();
    tokio::task::spawn_blocking(move || {
        let producer: ThreadedProducer<DefaultProducerContext> = settings
            .transactional_producer_config(&transactional_id)
            .create()?;
        producer.init_transactions(TIMEOUT)?;
        producer.begin_transaction()?;
        let sent = topics.iter().try_for_each(|topic| {
            records.iter().try_for_each(|(key, value, headers)| {
                let headers = headers
                    .iter()
                    .fold(OwnedHeaders::new(), |h, (name, value)| {
                        h.insert(Header {
                            key: name,
                            value: Some(value.as_bytes()),
                        })
                    });
                // Business time, as every producer of callstream stamps its records.
                let record = BaseRecord::to(topic)
                    .timestamp(callstream_platform::clock::now_ms())
                    .key(key.as_bytes())
                    .payload(value.as_slice())
                    .headers(headers);
                producer.send(record).map_err(|(error, _)| error)
            })
        });
        match sent.and_then(|()| producer.commit_transaction(TIMEOUT)) {
            Ok(()) => Ok(()),
            Err(error) => {
                // Nothing of this apply becomes visible.
                let _ = producer.abort_transaction(TIMEOUT);
                Err(error.into())
            }
        }
    })
    .await?
}

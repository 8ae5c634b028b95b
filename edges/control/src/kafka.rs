//! Reading the `control` topic to its end, and publishing the changes of
//! one apply in one Kafka transaction.
//!
//! Guarantees: [`read_table`] returns the latest committed value of every
//! key as of the moment it started (a `read_committed` consumer reads each
//! partition until its position passes the log's end at that moment, so an
//! apply whose commit returned before is seen whole); [`publish`] makes
//! all the changes of an apply visible together, or none of them.
//! rdkafka's consumer and transaction calls block, so both run on tokio's
//! blocking pool.

use std::ops::ControlFlow;
use std::time::Duration;

use callstream_platform::kafka::{read_spans, ReadToEndContext, Span, SpansRead};
use callstream_platform::KafkaSettings;
use callstream_schemas::{ControlChange, Event};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::Offset;

use callstream_kit::control::view::ControlSnapshot;

const TIMEOUT: Duration = Duration::from_secs(30);

/// How long a read waits for a transaction still open on the topic: longer
/// than the transaction timeout (60 s), after which the brokers abort an
/// apply that died half-way.
const OPEN_TRANSACTION_WAIT: Duration = Duration::from_secs(90);

/// Why the control topic could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KafkaIoError {
    #[error("the control topic {0} does not exist (create it with `callstream topics create`)")]
    NoTopic(String),
    #[error("the control topic {0} still had an open transaction after 90 s; try again")]
    Unsettled(String),
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
    // The end to read to is the log's end, not the last stable offset a
    // `read_committed` client is told: an apply's commit returns before the
    // brokers have written its markers, so right after it the stable offset
    // can still stand before its records, and the next apply would not see
    // them. Reading (committed records only) until the position passes the
    // log's end waits for those markers.
    let ends: BaseConsumer<ReadToEndContext> = settings
        .consumer_config(&group)
        .set("isolation.level", "read_uncommitted")
        .create_with_context(ReadToEndContext)?;
    let metadata = ends.fetch_metadata(Some(topic), TIMEOUT)?;
    let partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic && t.error().is_none())
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    if partitions.is_empty() {
        return Err(KafkaIoError::NoTopic(topic.to_owned()));
    }
    let mut spans = Vec::new();
    for partition in partitions {
        let (low, high) =
            callstream_platform::kafka::fetch_watermarks_settled(&ends, topic, partition, TIMEOUT)?;
        if high > low {
            spans.push(Span {
                topic: topic.to_owned(),
                partition,
                from: Offset::Beginning,
                end: high,
            });
        }
    }
    let mut snapshot = ControlSnapshot::default();
    let read = read_spans(&consumer, &spans, OPEN_TRANSACTION_WAIT, |message| {
        if let Some(key) = message.key() {
            snapshot.apply(key.to_vec(), message.payload().map(<[u8]>::to_vec));
        }
        ControlFlow::Continue(())
    })?;
    match read {
        SpansRead::Ended | SpansRead::Stopped => Ok(snapshot),
        SpansRead::TimedOut => Err(KafkaIoError::Unsettled(topic.to_owned())),
    }
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

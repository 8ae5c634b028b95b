//! Creating topics from their specs and checking the ones that exist.
//!
//! `ensure_topics` creates what is missing and reports, without touching
//! them, the topics whose partition count or settings differ from the spec:
//! changing those is an operator's decision (it may move keys between
//! partitions), never a side effect of start-up.

use std::collections::HashMap;
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};

use crate::kafka::KafkaSettings;
use crate::topics::TopicSpec;

/// Something about an existing topic that is not what its spec says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub topic: String,
    pub setting: String,
    pub expected: String,
    pub actual: String,
}

/// What `ensure_topics` did and found.
#[derive(Debug, Default)]
pub struct EnsureReport {
    pub created: Vec<String>,
    /// Topics that do not exist and were not created (`check_topics`).
    pub missing: Vec<String>,
    pub existing: Vec<String>,
    pub differences: Vec<Difference>,
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("cannot reach Kafka at {servers}: {source}")]
    Unreachable {
        servers: String,
        #[source]
        source: KafkaError,
    },
    #[error("creating topic {topic} failed: {code}")]
    CreateFailed {
        topic: String,
        code: RDKafkaErrorCode,
    },
    #[error("topic {topic} was created but is not in the cluster's metadata after {waited:?}")]
    NotPropagated { topic: String, waited: Duration },
    #[error("Kafka admin request failed: {0}")]
    Kafka(#[from] KafkaError),
}

const ADMIN_TIMEOUT: Duration = Duration::from_secs(30);

/// An admin client for the cluster.
pub fn admin_client(
    settings: &KafkaSettings,
) -> Result<AdminClient<DefaultClientContext>, AdminError> {
    settings
        .base_config()
        .create()
        .map_err(|source| AdminError::Unreachable {
            servers: settings.bootstrap_servers.clone(),
            source,
        })
}

/// Partition counts of the named topics that exist; absent topics are left out.
pub fn partition_counts(
    admin: &AdminClient<DefaultClientContext>,
    servers: &str,
) -> Result<HashMap<String, i32>, AdminError> {
    let metadata = admin
        .inner()
        .fetch_metadata(None, ADMIN_TIMEOUT)
        .map_err(|source| AdminError::Unreachable {
            servers: servers.to_string(),
            source,
        })?;
    Ok(metadata
        .topics()
        .iter()
        .filter(|t| t.error().is_none())
        .map(|t| (t.name().to_string(), t.partitions().len() as i32))
        .collect())
}

/// How long `ensure_topics` waits for the topics it created to show up in metadata.
const METADATA_PROPAGATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Waits until every topic of `topics` (name, partitions) is in the cluster's metadata with
/// all its partitions led. CreateTopics answers once the controller has the topic; the brokers
/// learn of it a moment later (seconds on a busy broker), and a client started in between (a
/// processor checking its inputs, a consumer assigning partitions) would see it missing.
pub async fn await_leaders(
    admin: &AdminClient<DefaultClientContext>,
    servers: &str,
    topics: &[(&str, i32)],
) -> Result<(), AdminError> {
    let deadline = tokio::time::Instant::now() + METADATA_PROPAGATION_TIMEOUT;
    loop {
        let metadata = admin
            .inner()
            .fetch_metadata(None, ADMIN_TIMEOUT)
            .map_err(|source| AdminError::Unreachable {
                servers: servers.to_string(),
                source,
            })?;
        let ready = |&&(name, partitions): &&(&str, i32)| {
            metadata.topics().iter().any(|t| {
                t.name() == name
                    && t.error().is_none()
                    && t.partitions().len() as i32 == partitions
                    && t.partitions()
                        .iter()
                        .all(|p| p.leader() >= 0 && p.error().is_none())
            })
        };
        let Some(&(waiting, _)) = topics.iter().find(|topic| !ready(topic)) else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(AdminError::NotPropagated {
                topic: waiting.to_string(),
                waited: METADATA_PROPAGATION_TIMEOUT,
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Creates the missing topics (and waits until the cluster's metadata shows them led) and
/// reports differences on existing ones.
pub async fn ensure_topics(
    settings: &KafkaSettings,
    specs: &[TopicSpec],
) -> Result<EnsureReport, AdminError> {
    reconcile(settings, specs, true).await
}

/// Reports missing topics and differences, changing nothing.
pub async fn check_topics(
    settings: &KafkaSettings,
    specs: &[TopicSpec],
) -> Result<EnsureReport, AdminError> {
    reconcile(settings, specs, false).await
}

async fn reconcile(
    settings: &KafkaSettings,
    specs: &[TopicSpec],
    create: bool,
) -> Result<EnsureReport, AdminError> {
    let admin = admin_client(settings)?;
    let existing = partition_counts(&admin, &settings.bootstrap_servers)?;
    let mut report = EnsureReport::default();
    let options = AdminOptions::new().operation_timeout(Some(ADMIN_TIMEOUT));

    let missing: Vec<&TopicSpec> = specs
        .iter()
        .filter(|s| !existing.contains_key(&s.name))
        .collect();
    if !create {
        report.missing = missing.iter().map(|s| s.name.clone()).collect();
    } else if !missing.is_empty() {
        let configs: Vec<Vec<(&str, String)>> = missing.iter().map(|s| s.configs()).collect();
        let new_topics: Vec<NewTopic> = missing
            .iter()
            .zip(&configs)
            .map(|(spec, configs)| {
                configs.iter().fold(
                    NewTopic::new(
                        &spec.name,
                        spec.partitions,
                        TopicReplication::Fixed(spec.replication_factor),
                    ),
                    |topic, (key, value)| topic.set(key, value),
                )
            })
            .collect();
        for result in admin.create_topics(&new_topics, &options).await? {
            match result {
                Ok(name) => report.created.push(name),
                // Someone else created it between our metadata read and now.
                Err((name, RDKafkaErrorCode::TopicAlreadyExists)) => report.existing.push(name),
                Err((topic, code)) => return Err(AdminError::CreateFailed { topic, code }),
            }
        }
        let created: Vec<(&str, i32)> = missing
            .iter()
            .map(|s| (s.name.as_str(), s.partitions))
            .collect();
        await_leaders(&admin, &settings.bootstrap_servers, &created).await?;
    }

    let present: Vec<&TopicSpec> = specs
        .iter()
        .filter(|s| existing.contains_key(&s.name))
        .collect();
    for spec in &present {
        report.existing.push(spec.name.clone());
        let actual = existing[&spec.name];
        if actual != spec.partitions {
            report.differences.push(Difference {
                topic: spec.name.clone(),
                setting: "partitions".into(),
                expected: spec.partitions.to_string(),
                actual: actual.to_string(),
            });
        }
    }
    if !present.is_empty() {
        let resources: Vec<ResourceSpecifier> = present
            .iter()
            .map(|s| ResourceSpecifier::Topic(&s.name))
            .collect();
        let described = admin.describe_configs(&resources, &options).await?;
        for (spec, result) in present.iter().zip(described) {
            let Ok(resource) = result else { continue };
            for (key, expected) in spec.configs() {
                let actual = resource
                    .get(key)
                    .and_then(|entry| entry.value.clone())
                    .unwrap_or_default();
                if actual != expected {
                    report.differences.push(Difference {
                        topic: spec.name.clone(),
                        setting: key.to_string(),
                        expected,
                        actual,
                    });
                }
            }
        }
    }
    Ok(report)
}

/// How far consumer group `group` is behind on `topics`: the sum over their partitions of
/// the high watermark minus the group's committed offset, counting only the partitions the
/// group has committed on (those it consumes). `None` when it has committed on none of them
/// (it is not running, or has not started). Blocking: call it off the async executor.
pub fn consumer_lag(
    settings: &KafkaSettings,
    group: &str,
    topics: &[String],
) -> Result<Option<i64>, AdminError> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{Offset, TopicPartitionList};

    // A consumer that never subscribes: it only reads the group's committed offsets, and
    // does not join the group or disturb its members.
    let consumer: BaseConsumer = settings
        .base_config()
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|source| AdminError::Unreachable {
            servers: settings.bootstrap_servers.clone(),
            source,
        })?;
    let metadata = consumer.fetch_metadata(None, ADMIN_TIMEOUT)?;
    let mut partitions = TopicPartitionList::new();
    for topic in metadata.topics() {
        if topics.iter().any(|t| t == topic.name()) {
            for p in topic.partitions() {
                partitions.add_partition(topic.name(), p.id());
            }
        }
    }
    if partitions.count() == 0 {
        return Ok(None);
    }
    let committed = consumer.committed_offsets(partitions, ADMIN_TIMEOUT)?;
    let mut lag = None;
    for element in committed.elements() {
        let Offset::Offset(at) = element.offset() else {
            continue;
        };
        let (_, high) =
            consumer.fetch_watermarks(element.topic(), element.partition(), ADMIN_TIMEOUT)?;
        *lag.get_or_insert(0) += (high - at).max(0);
    }
    Ok(lag)
}

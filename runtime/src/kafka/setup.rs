//! Start-up checks: the inputs exist and are co-partitioned, and every
//! changelog topic exists with the inputs' partition count (created when
//! missing). Anything else refuses to start, with the reason.

use std::collections::HashMap;

use std::time::Duration;

use callstream_platform::admin::{self, AdminError};
use callstream_platform::kafka::{check_connection, ConnectionError};
use callstream_platform::topics::{TopicKind, Topics};

use super::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::spec::ProcessorSpec;

/// How long each question of the connection check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// What start-up found.
pub(crate) struct Prepared {
    /// Partitions of every input (and changelog).
    pub partitions: i32,
    /// Partition counts of every topic in the cluster.
    pub counts: HashMap<String, i32>,
}

/// Checks and creates topics; `stores` are the processor's declared stores.
pub(crate) fn prepare_topics(
    spec: &ProcessorSpec,
    stores: &[&str],
    config: &RuntimeConfig,
) -> Result<Prepared, RuntimeError> {
    let refuse = |reason: String| RuntimeError::Setup {
        app: spec.app_id.clone(),
        reason,
    };
    let admin_error = |e: AdminError| refuse(e.to_string());
    if spec.inputs.is_empty() {
        return Err(refuse("the processor has no input topics".into()));
    }
    // Reach the cluster as the processor's clients will: TLS, credentials and ACLs named.
    let topics: Vec<String> = spec
        .inputs
        .iter()
        .chain(&spec.global_tables)
        .cloned()
        .collect();
    match check_connection(&config.kafka, &topics, CHECK_TIMEOUT) {
        Ok(()) | Err(ConnectionError::TopicMissing { .. }) => {}
        Err(e) => return Err(refuse(e.to_string())),
    }
    let client = admin::admin_client(&config.kafka).map_err(admin_error)?;
    let counts =
        admin::partition_counts(&client, &config.kafka.bootstrap_servers).map_err(admin_error)?;
    let mut partitions = None;
    for input in &spec.inputs {
        let Some(&count) = counts.get(input) else {
            return Err(refuse(format!(
                "input topic {input} does not exist (create it with `callstream topics create`)"
            )));
        };
        match partitions {
            None => partitions = Some(count),
            Some(expected) if expected != count => {
                return Err(refuse(format!(
                "co-partitioned inputs differ: {} has {expected} partitions, {input} has {count}; \
                     every input must have the same count",
                spec.inputs[0]
            )))
            }
            Some(_) => {}
        }
    }
    let partitions = partitions.unwrap_or_default();
    if let Some(missing) = spec.global_tables.iter().find(|t| !counts.contains_key(*t)) {
        return Err(refuse(format!(
            "global table topic {missing} does not exist (create it with `callstream topics create`)"
        )));
    }

    let topics = Topics {
        prefix: String::new(),
        partitions,
        replication_factor: config.changelog_replication_factor,
        min_insync_replicas: config.changelog_min_insync_replicas,
    };
    let mut specs: Vec<_> = spec
        .changelog_topics(stores)
        .iter()
        .map(|changelog| topics.spec(changelog, TopicKind::Table))
        .collect();
    specs.push(topics.spec(&spec.dead_letter_topic, TopicKind::DeadLetters));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| refuse(format!("cannot start the admin runtime: {e}")))?;
    let report = runtime
        .block_on(admin::ensure_topics(&config.kafka, &specs))
        .map_err(admin_error)?;
    for difference in &report.differences {
        let is_changelog = difference.topic != spec.dead_letter_topic;
        if is_changelog && difference.setting == "partitions" {
            return Err(refuse(format!(
                "changelog {} has {} partitions but the inputs have {}; state would be split \
                 across tasks. Recreate the changelog (its state rebuilds from the inputs only \
                 if they are kept) or fix the inputs",
                difference.topic, difference.actual, difference.expected
            )));
        }
        tracing::warn!(topic = %difference.topic, setting = %difference.setting,
            expected = %difference.expected, actual = %difference.actual, "topic setting differs");
    }
    Ok(Prepared { partitions, counts })
}

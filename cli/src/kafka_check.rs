//! The connection check of the long-running services that do not run on the processor
//! runtime (the gateway, the projections, the operator API): a misconfiguration (TLS,
//! credentials, a topic the principal may not use) stops them at start with its cause; a
//! cluster that does not answer yet does not (they answer 503 or retry meanwhile, as they
//! do for an outage later).

use std::time::Duration;

use anyhow::{Context, Result};
use callstream_platform::kafka::{check_connection, ConnectionError};
use callstream_platform::{KafkaSettings, Topics};

const TIMEOUT: Duration = Duration::from_secs(15);

/// Checks that `kafka` reaches the cluster and may use `logical` topics (under `topics`'s
/// prefix).
pub async fn refuse_misconfigured(
    service: &str,
    kafka: &KafkaSettings,
    topics: &Topics,
    logical: &[&str],
) -> Result<()> {
    let kafka = kafka.clone();
    let names: Vec<String> = logical.iter().map(|t| topics.name(t)).collect();
    let checked = tokio::task::spawn_blocking(move || check_connection(&kafka, &names, TIMEOUT))
        .await
        .context("the Kafka connection check did not finish")?;
    match checked {
        Ok(()) => Ok(()),
        Err(e @ (ConnectionError::Unreachable { .. } | ConnectionError::TopicMissing { .. })) => {
            tracing::warn!(error = %e, "{service} starts without Kafka for now");
            Ok(())
        }
        Err(e) => Err(e).with_context(|| format!("{service} cannot use the Kafka cluster")),
    }
}

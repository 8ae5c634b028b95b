//! The connection check a service runs at start: it reaches the cluster the way its clients
//! will (the same settings, TLS and SASL included) and asks for the topics it needs, so a
//! misconfiguration stops it at once with its cause named (the TLS handshake, the
//! credentials, a topic it may not see) instead of a client that retries forever and a log
//! of `all brokers down`.
//!
//! librdkafka reports a failed TLS handshake or SASL exchange through its error callback,
//! not through the request that failed; the check's client keeps those reports and names
//! the first one when the metadata request does not succeed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::client::ClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, Producer, ProducerContext};
use rdkafka::types::RDKafkaRespErr;

use super::KafkaSettings;

/// Why a service cannot use the cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    #[error(
        "TLS with the Kafka brokers at {servers} failed: {detail} (check KAFKA_SECURITY_PROTOCOL, \
         and KAFKA_SSL_CA_LOCATION: the CA that signed the brokers' certificates)"
    )]
    Tls { servers: String, detail: String },
    #[error(
        "the Kafka brokers at {servers} refused our credentials: {detail} (check \
         KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD or \
         KAFKA_SASL_PASSWORD_FILE)"
    )]
    Authentication { servers: String, detail: String },
    #[error("no Kafka broker answered at {servers}: {detail}")]
    Unreachable { servers: String, detail: String },
    #[error(
        "not authorized to use topic {topic} (the principal has no ACL to describe it; an \
         administrator grants it)"
    )]
    TopicNotAuthorized { topic: String },
    #[error("topic {topic} does not exist (create it with `callstream topics create`)")]
    TopicMissing { topic: String },
    #[error("asking the cluster about topic {topic} failed: {detail}")]
    Topic { topic: String, detail: String },
}

/// Keeps what librdkafka's error callback reports.
#[derive(Default, Clone)]
struct Reports(Arc<Mutex<Vec<(RDKafkaErrorCode, String)>>>);

impl ClientContext for Reports {
    fn error(&self, error: KafkaError, reason: &str) {
        if let (Some(code), Ok(mut seen)) = (error.rdkafka_error_code(), self.0.lock()) {
            // The first reports say what went wrong; the rest repeat it while the client retries.
            if seen.len() < 64 {
                seen.push((code, reason.to_owned()));
            }
        }
    }
}

impl ProducerContext for Reports {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::producer::DeliveryResult<'_>, _: Self::DeliveryOpaque) {}
}

/// Reaches the cluster with `settings` and checks that every topic of `topics` exists and
/// may be described, within `timeout` per request.
pub fn check_connection(
    settings: &KafkaSettings,
    topics: &[String],
    timeout: Duration,
) -> Result<(), ConnectionError> {
    let servers = settings.bootstrap_servers.clone();
    let reports = Reports::default();
    let mut config = settings.base_config();
    // Fail fast: the check is one question, not a client that must survive an outage.
    config
        .set("socket.connection.setup.timeout.ms", "10000")
        // Asking about a missing topic must not create it.
        .set("allow.auto.create.topics", "false");
    let producer: BaseProducer<Reports> =
        config
            .create_with_context(reports.clone())
            .map_err(|e| ConnectionError::Unreachable {
                servers: servers.clone(),
                detail: format!("the client could not be created: {e}"),
            })?;
    let cause = |producer: &BaseProducer<Reports>, fallback: String| {
        // Serves the error callbacks queued while the request waited.
        producer.poll(Duration::from_millis(100));
        classify(&servers, &reports, fallback)
    };
    // Asked in short rounds: a TLS or credentials failure is final at the first report, while
    // a cluster that is slow to answer gets the whole `timeout`.
    let deadline = std::time::Instant::now() + timeout;
    let metadata = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match producer
            .client()
            .fetch_metadata(None, left.min(Duration::from_secs(2)))
        {
            Ok(metadata) => break metadata,
            Err(e) => {
                let found = cause(&producer, e.to_string());
                let settled = matches!(
                    found,
                    ConnectionError::Tls { .. } | ConnectionError::Authentication { .. }
                );
                if settled || std::time::Instant::now() >= deadline {
                    return Err(found);
                }
            }
        }
    };
    if metadata.brokers().is_empty() {
        return Err(cause(&producer, "the cluster reported no brokers".into()));
    }
    for topic in topics {
        let one = producer
            .client()
            .fetch_metadata(Some(topic), timeout)
            .map_err(|e| cause(&producer, e.to_string()))?;
        let error = one
            .topics()
            .iter()
            .find(|t| t.name() == topic)
            .and_then(|t| t.error());
        match error {
            None => {}
            Some(RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) => {
                return Err(ConnectionError::TopicNotAuthorized {
                    topic: topic.clone(),
                })
            }
            Some(
                RDKafkaRespErr::RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
                | RDKafkaRespErr::RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC,
            ) => {
                return Err(ConnectionError::TopicMissing {
                    topic: topic.clone(),
                })
            }
            Some(other) => {
                return Err(ConnectionError::Topic {
                    topic: topic.clone(),
                    detail: RDKafkaErrorCode::from(other).to_string(),
                })
            }
        }
    }
    Ok(())
}

/// The first TLS or authentication failure librdkafka reported, else `fallback` as an
/// unreachable cluster.
fn classify(servers: &str, reports: &Reports, fallback: String) -> ConnectionError {
    let seen = reports.0.lock().map(|s| s.clone()).unwrap_or_default();
    let servers = servers.to_owned();
    // A handshake failure comes as a transport failure whose reason names the TLS state.
    let tls = |code: &RDKafkaErrorCode, reason: &str| {
        *code == RDKafkaErrorCode::SSL || reason.contains("SSL")
    };
    let auth = |code: &RDKafkaErrorCode, reason: &str| {
        matches!(
            code,
            RDKafkaErrorCode::Authentication | RDKafkaErrorCode::SaslAuthenticationFailed
        ) || reason.contains("SASL authentication")
    };
    if let Some((_, reason)) = seen.iter().find(|(c, r)| auth(c, r)) {
        return ConnectionError::Authentication {
            servers,
            detail: reason.clone(),
        };
    }
    // The most telling TLS report: the one that says why the handshake failed.
    let tls_reports: Vec<&String> = seen
        .iter()
        .filter(|(c, r)| tls(c, r))
        .map(|(_, r)| r)
        .collect();
    if let Some(reason) = tls_reports
        .iter()
        .find(|r| r.contains("handshake failed"))
        .or(tls_reports.first())
    {
        return ConnectionError::Tls {
            servers,
            detail: (*reason).clone(),
        };
    }
    let detail = seen
        .last()
        .map(|(_, reason)| reason.clone())
        .unwrap_or(fallback);
    ConnectionError::Unreachable { servers, detail }
}

//! Configuration of the operator API, from the environment (with the dev stack's defaults).

use std::net::SocketAddr;
use std::time::Duration;

use callstream_platform::{KafkaSettings, Topics};

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{name}={value:?}: {problem}")]
pub struct ConfigError {
    pub name: &'static str,
    pub value: String,
    pub problem: &'static str,
}

/// Everything [`run`](crate::run) needs.
#[derive(Debug, Clone)]
pub struct OperatorApiConfig {
    /// Address to listen on (`CALLSTREAM_OPERATOR_API_LISTEN`, default `0.0.0.0:8081`).
    pub listen: SocketAddr,
    /// Postgres holding the views and the tokens (`DATABASE_URL`; default the dev stack's).
    pub database_url: String,
    /// Kafka cluster the commands go to (`KAFKA_BOOTSTRAP_SERVERS`); client id
    /// `callstream-operator-api`.
    pub kafka: KafkaSettings,
    /// Topic names (`CALLSTREAM_TOPIC_PREFIX`, ...).
    pub topics: Topics,
    /// How long an action waits for Kafka's acknowledgement before it answers 503
    /// (`CALLSTREAM_OPERATOR_API_PRODUCE_TIMEOUT_MS`, default 5000).
    pub produce_timeout: Duration,
    /// The longest `?wait=` a request may ask for (`CALLSTREAM_OPERATOR_API_MAX_WAIT_MS`,
    /// default 30000); longer is 422.
    pub max_wait: Duration,
    /// Longest a whole request may take (`CALLSTREAM_OPERATOR_API_REQUEST_TIMEOUT_MS`,
    /// default 40000; keep it above `max_wait` plus `produce_timeout`).
    pub request_timeout: Duration,
}

impl OperatorApiConfig {
    /// Defaults for a database and topics (tests set the fields they need).
    pub fn new(database_url: impl Into<String>, kafka: KafkaSettings, topics: Topics) -> Self {
        Self {
            listen: SocketAddr::from(([0, 0, 0, 0], 8081)),
            database_url: database_url.into(),
            kafka,
            topics,
            produce_timeout: Duration::from_secs(5),
            max_wait: Duration::from_secs(30),
            request_timeout: Duration::from_secs(40),
        }
    }

    /// Reads the settings named on the fields.
    pub fn from_env() -> Result<Self, ConfigError> {
        let database_url = std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/callstream".to_string());
        let topics = Topics::from_env().map_err(|e| ConfigError {
            name: e.name,
            value: e.value,
            problem: "not a positive whole number",
        })?;
        let mut config = Self::new(
            database_url,
            KafkaSettings::from_env("callstream-operator-api"),
            topics,
        );
        if let Ok(value) = std::env::var("CALLSTREAM_OPERATOR_API_LISTEN") {
            config.listen = value.parse().map_err(|_| ConfigError {
                name: "CALLSTREAM_OPERATOR_API_LISTEN",
                value,
                problem: "not an address such as 0.0.0.0:8081",
            })?;
        }
        for (name, field) in [
            (
                "CALLSTREAM_OPERATOR_API_PRODUCE_TIMEOUT_MS",
                &mut config.produce_timeout,
            ),
            ("CALLSTREAM_OPERATOR_API_MAX_WAIT_MS", &mut config.max_wait),
            (
                "CALLSTREAM_OPERATOR_API_REQUEST_TIMEOUT_MS",
                &mut config.request_timeout,
            ),
        ] {
            if let Ok(value) = std::env::var(name) {
                let ms: u64 = value.trim().parse().map_err(|_| ConfigError {
                    name,
                    value: value.clone(),
                    problem: "not a whole number of milliseconds",
                })?;
                *field = Duration::from_millis(ms);
            }
        }
        Ok(config)
    }
}

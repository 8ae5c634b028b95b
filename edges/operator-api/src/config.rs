//! Configuration of the operator API, from the environment (with the dev stack's defaults).

use std::net::SocketAddr;
use std::time::Duration;

use callstream_platform::http::ServeLimits;
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
    /// The admin listener: `/metrics` (and `/healthz`, `/readyz` again), apart from the port
    /// operators' browsers reach (`CALLSTREAM_OPERATOR_API_ADMIN_LISTEN`, default
    /// `127.0.0.1:9402`, loopback: a scraper elsewhere needs a reachable address).
    pub admin_listen: SocketAddr,
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
    /// default 30000); a longer one waits this long.
    pub max_wait: Duration,
    /// Longest a whole request may take (`CALLSTREAM_OPERATOR_API_REQUEST_TIMEOUT_MS`,
    /// default 40000; keep it above `max_wait` plus `produce_timeout`).
    pub request_timeout: Duration,
    /// What one client may hold of the server (see `callstream_platform::http`):
    /// a request head must arrive within `header_read_timeout` of its first byte
    /// (`CALLSTREAM_OPERATOR_API_HEADER_READ_TIMEOUT_MS`, default 10000); a connection with
    /// no request is closed after `idle_timeout` (`CALLSTREAM_OPERATOR_API_IDLE_TIMEOUT_MS`,
    /// default 60000); at most `max_connections` are open, more wait in the listen backlog
    /// (`CALLSTREAM_OPERATOR_API_MAX_CONNECTIONS`, default 1024). All must be above 0.
    pub serve_limits: ServeLimits,
    /// Requests a minute one token may make, and its burst
    /// (`CALLSTREAM_OPERATOR_API_TOKEN_PER_MINUTE`, default 6000, i.e. 100 a second;
    /// `CALLSTREAM_OPERATOR_API_TOKEN_BURST`, default 1000). Over it: 429 `rate_limited` with
    /// `Retry-After`. A rate of 0 turns the limit off.
    pub per_token: RateLimit,
    /// Requests a minute one peer address may make, and its burst
    /// (`CALLSTREAM_OPERATOR_API_ADDRESS_PER_MINUTE`, default 12000, i.e. 200 a second;
    /// `CALLSTREAM_OPERATOR_API_ADDRESS_BURST`, default 2000). Keyed by the socket's peer IP (never a forwarded header, which a client
    /// chooses): behind a proxy every client shares the proxy's address, so raise it or set
    /// the rate to 0 (off) and limit at the proxy.
    pub per_address: RateLimit,
    /// How many requests may wait (`?wait=`) at the same time
    /// (`CALLSTREAM_OPERATOR_API_MAX_WAITING`, default 64). One more is answered at once with
    /// 429 `rate_limited` and `Retry-After: 1`; an action refused so was not sent.
    pub max_waiting: usize,
    /// How long a `/readyz` answer is reused (`CALLSTREAM_OPERATOR_API_READY_CACHE_MS`,
    /// default 1000), so a flood of probes checks Postgres and Kafka at most once a period.
    pub ready_cache: Duration,
    /// The delivery rate below which the completion detector raises an alert, drawn on the
    /// console's delivery chart (`CALLSTREAM_DETECTOR_DELIVERY_THRESHOLD`, the detector's
    /// own setting, default 0.8), so both read one value.
    pub delivery_threshold: f64,
}

/// A token bucket: `per_minute` sustained (spread evenly), `burst` at once (0: as many
/// as `per_minute`). `per_minute == 0` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub per_minute: u32,
    pub burst: u32,
}

impl OperatorApiConfig {
    /// Defaults for a database and topics (tests set the fields they need).
    pub fn new(database_url: impl Into<String>, kafka: KafkaSettings, topics: Topics) -> Self {
        Self {
            listen: SocketAddr::from(([0, 0, 0, 0], 8081)),
            admin_listen: SocketAddr::from(([127, 0, 0, 1], 9402)),
            database_url: database_url.into(),
            kafka,
            topics,
            produce_timeout: Duration::from_secs(5),
            max_wait: Duration::from_secs(30),
            request_timeout: Duration::from_secs(40),
            serve_limits: ServeLimits::default(),
            // Far above what an operator's console or schemathesis (one request at a time)
            // sends; they stop a runaway script or a flood, not people.
            per_token: RateLimit {
                per_minute: 6000,
                burst: 1000,
            },
            per_address: RateLimit {
                per_minute: 12000,
                burst: 2000,
            },
            max_waiting: 64,
            ready_cache: Duration::from_secs(1),
            delivery_threshold: 0.8,
        }
    }

    /// Reads the settings named on the fields.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env) over any lookup (tests pass a map); the topic
    /// settings still come from the process environment.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let database_url = callstream_platform::settings::Settings::new(&get)
            .database_url("postgres://postgres@127.0.0.1:5432/callstream")
            .map_err(|e| ConfigError {
                name: "DATABASE_URL_FILE",
                value: e.to_string(),
                problem: "not a usable database URL",
            })?;
        let topics = Topics::from_env().map_err(|e| ConfigError {
            name: e.name,
            value: e.value,
            problem: "not a positive whole number",
        })?;
        let kafka = KafkaSettings::from_env_checked("callstream-operator-api").map_err(|e| {
            ConfigError {
                name: "KAFKA_*",
                value: e.to_string(),
                problem: "not a usable Kafka client property",
            }
        })?;
        let mut config = Self::new(database_url, kafka, topics);
        if let Some(value) = get("CALLSTREAM_OPERATOR_API_LISTEN") {
            config.listen = value.parse().map_err(|_| ConfigError {
                name: "CALLSTREAM_OPERATOR_API_LISTEN",
                value,
                problem: "not an address such as 0.0.0.0:8081",
            })?;
        }
        if let Some(value) = get("CALLSTREAM_OPERATOR_API_ADMIN_LISTEN") {
            config.admin_listen = value.parse().map_err(|_| ConfigError {
                name: "CALLSTREAM_OPERATOR_API_ADMIN_LISTEN",
                value,
                problem: "not an address such as 127.0.0.1:9402",
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
            (
                "CALLSTREAM_OPERATOR_API_HEADER_READ_TIMEOUT_MS",
                &mut config.serve_limits.header_read_timeout,
            ),
            (
                "CALLSTREAM_OPERATOR_API_IDLE_TIMEOUT_MS",
                &mut config.serve_limits.idle_timeout,
            ),
            (
                "CALLSTREAM_OPERATOR_API_READY_CACHE_MS",
                &mut config.ready_cache,
            ),
        ] {
            if let Some(value) = get(name) {
                let ms: u64 = value.trim().parse().map_err(|_| ConfigError {
                    name,
                    value: value.clone(),
                    problem: "not a whole number of milliseconds",
                })?;
                *field = Duration::from_millis(ms);
            }
        }
        if let Some(value) = get("CALLSTREAM_DETECTOR_DELIVERY_THRESHOLD") {
            config.delivery_threshold = value
                .trim()
                .parse()
                .ok()
                .filter(|t: &f64| (0.0..=1.0).contains(t))
                .ok_or(ConfigError {
                    name: "CALLSTREAM_DETECTOR_DELIVERY_THRESHOLD",
                    value: value.clone(),
                    problem: "not a rate between 0 and 1",
                })?;
        }
        if let Some(value) = get("CALLSTREAM_OPERATOR_API_MAX_CONNECTIONS") {
            config.serve_limits.max_connections =
                value.trim().parse().map_err(|_| ConfigError {
                    name: "CALLSTREAM_OPERATOR_API_MAX_CONNECTIONS",
                    value: value.clone(),
                    problem: "not a whole number",
                })?;
        }
        for (name, field) in [
            (
                "CALLSTREAM_OPERATOR_API_TOKEN_PER_MINUTE",
                &mut config.per_token.per_minute,
            ),
            (
                "CALLSTREAM_OPERATOR_API_TOKEN_BURST",
                &mut config.per_token.burst,
            ),
            (
                "CALLSTREAM_OPERATOR_API_ADDRESS_PER_MINUTE",
                &mut config.per_address.per_minute,
            ),
            (
                "CALLSTREAM_OPERATOR_API_ADDRESS_BURST",
                &mut config.per_address.burst,
            ),
        ] {
            if let Some(value) = get(name) {
                *field = value.trim().parse().map_err(|_| ConfigError {
                    name,
                    value: value.clone(),
                    problem: "not a whole number",
                })?;
            }
        }
        if let Some(value) = get("CALLSTREAM_OPERATOR_API_MAX_WAITING") {
            config.max_waiting =
                value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(ConfigError {
                        name: "CALLSTREAM_OPERATOR_API_MAX_WAITING",
                        value,
                        problem: "not a positive whole number",
                    })?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Refuses limits that would close or refuse every request.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let limits = &self.serve_limits;
        for (name, value, zero) in [
            (
                "CALLSTREAM_OPERATOR_API_REQUEST_TIMEOUT_MS",
                self.request_timeout.as_millis(),
                self.request_timeout.is_zero(),
            ),
            (
                "CALLSTREAM_OPERATOR_API_HEADER_READ_TIMEOUT_MS",
                limits.header_read_timeout.as_millis(),
                limits.header_read_timeout.is_zero(),
            ),
            (
                "CALLSTREAM_OPERATOR_API_IDLE_TIMEOUT_MS",
                limits.idle_timeout.as_millis(),
                limits.idle_timeout.is_zero(),
            ),
            (
                "CALLSTREAM_OPERATOR_API_MAX_CONNECTIONS",
                limits.max_connections as u128,
                limits.max_connections == 0,
            ),
        ] {
            if zero {
                return Err(ConfigError {
                    name,
                    value: value.to_string(),
                    problem: "must be above 0",
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn serve_limits_default_and_come_from_the_environment() {
        let config = OperatorApiConfig::from_lookup(lookup(&[])).unwrap();
        assert_eq!(config.serve_limits, ServeLimits::default());
        let config = OperatorApiConfig::from_lookup(lookup(&[
            ("CALLSTREAM_OPERATOR_API_HEADER_READ_TIMEOUT_MS", "300"),
            ("CALLSTREAM_OPERATOR_API_IDLE_TIMEOUT_MS", "400"),
            ("CALLSTREAM_OPERATOR_API_MAX_CONNECTIONS", " 5 "),
        ]))
        .unwrap();
        assert_eq!(
            config.serve_limits,
            ServeLimits {
                header_read_timeout: Duration::from_millis(300),
                idle_timeout: Duration::from_millis(400),
                max_connections: 5,
            }
        );
    }

    #[test]
    fn a_limit_that_does_not_parse_or_is_zero_is_refused_by_name() {
        for name in [
            "CALLSTREAM_OPERATOR_API_REQUEST_TIMEOUT_MS",
            "CALLSTREAM_OPERATOR_API_HEADER_READ_TIMEOUT_MS",
            "CALLSTREAM_OPERATOR_API_IDLE_TIMEOUT_MS",
            "CALLSTREAM_OPERATOR_API_MAX_CONNECTIONS",
        ] {
            for value in ["0", "soon"] {
                let error = OperatorApiConfig::from_lookup(lookup(&[(name, value)])).unwrap_err();
                assert_eq!(error.name, name, "{value}");
            }
        }
    }
}

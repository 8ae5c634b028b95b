//! The gateway's configuration: where it listens, how long it waits for
//! Kafka, and the integrations (URL id → tenant, provider, secrets) and
//! launch-intake tokens it trusts.
//!
//! Tenants, providers and secrets come only from here, never from a
//! request. Secrets are read from the environment or from files (never
//! written inline in the config file), held as [`Secret`] so `Debug`
//! redacts them, and never logged.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use callstream_platform::http::ServeLimits;
use callstream_platform::{KafkaSettings, Topics};
use sha2::{Digest, Sha256};

mod file;

pub use file::{EnvLookup, FileConfig, FileIntegration, FileTenant, Lookup, SecretSource};

use crate::event::ProviderKind;
use crate::secret::Secret;
use crate::verify::standard_webhooks;

/// Everything `run` needs. Build it with [`GatewayConfig::from_env`] (or
/// [`GatewayConfig::new`] plus fields, in tests).
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Address to listen on (`CALLSTREAM_GATEWAY_LISTEN`, file `listen`; default `0.0.0.0:8080`).
    /// It serves the webhooks and launch intake, and `/healthz` and `/readyz` for the load
    /// balancer in front of it.
    pub listen: SocketAddr,
    /// The admin listener: `/metrics` (and `/healthz`, `/readyz` again), kept off the public
    /// port so request volumes and outcomes are not published to the internet
    /// (`CALLSTREAM_GATEWAY_ADMIN_LISTEN`, file `admin_listen`; default `127.0.0.1:9401`,
    /// loopback: a scraper elsewhere needs it set to a reachable address).
    pub admin_listen: SocketAddr,
    /// The public scheme and host the voice platform calls, without a trailing
    /// slash (`CALLSTREAM_GATEWAY_PUBLIC_URL`, file `public_base_url`). Twilio
    /// signs the URL it called, so it is rebuilt from this plus the request's
    /// path and query, never from `Host` or `X-Forwarded-*` headers.
    pub public_base_url: String,
    /// Kafka cluster (`KAFKA_BOOTSTRAP_SERVERS`).
    pub kafka: KafkaSettings,
    /// Topic names and settings (`CALLSTREAM_TOPIC_PREFIX`, ...).
    pub topics: Topics,
    /// How long a request waits for Kafka's delivery report before it is
    /// answered 503 (file `produce_timeout_ms`, default 5000).
    pub produce_timeout: Duration,
    /// How long the producer holds a record to send it with others to the
    /// same partition (librdkafka `linger.ms`; file `produce_linger_ms`,
    /// default 5). Each 202 waits up to this long more, and the broker's CPU
    /// per record falls with every record a request carries: librdkafka
    /// sends one request per partition, and that request, not the record,
    /// is most of the broker's cost.
    pub produce_linger: Duration,
    /// Largest body accepted; larger ones get 413 (file `max_body_bytes`, default 64 KiB).
    pub max_body_bytes: usize,
    /// Allowed skew of a signed timestamp, either way (file `signature_tolerance_secs`, default 300).
    pub signature_tolerance: Duration,
    /// How long a `/readyz` answer is reused (file `readiness_cache_ms`, default 1000).
    pub readiness_cache: Duration,
    /// Deadline of the broker metadata check behind `/readyz` (file `readiness_timeout_ms`, default 500).
    pub readiness_timeout: Duration,
    /// How long shutdown waits for the producer to flush (file `flush_timeout_ms`, default 10000).
    pub flush_timeout: Duration,
    /// Longest a whole request may take, slow uploads included; then 408
    /// (file `request_timeout_ms`, default 15000; keep it above `produce_timeout`).
    pub request_timeout: Duration,
    /// What one client may hold of the server (see `callstream_platform::http`):
    /// - `header_read_timeout`: a request head must arrive within this of its first byte,
    ///   or the connection is closed unanswered (`CALLSTREAM_GATEWAY_HEADER_READ_TIMEOUT_MS`,
    ///   file `header_read_timeout_ms`, default 10000);
    /// - `idle_timeout`: a connection with no request (new, or kept alive after an answer)
    ///   is closed after this (`CALLSTREAM_GATEWAY_IDLE_TIMEOUT_MS`, file
    ///   `idle_timeout_ms`, default 60000);
    /// - `max_connections`: open connections at most; more wait in the listen backlog
    ///   until one closes (`CALLSTREAM_GATEWAY_MAX_CONNECTIONS`, file `max_connections`,
    ///   default 1024).
    pub serve_limits: ServeLimits,
    /// The webhook integrations (file `[[integrations]]`).
    pub integrations: Vec<IntegrationConfig>,
    /// The tenants allowed to post launch requests (file `[[tenants]]`).
    pub tenants: Vec<TenantConfig>,
}

/// Where `/metrics` is served unless configured otherwise: loopback, its own port.
pub const DEFAULT_ADMIN_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9401);

/// One webhook endpoint: `/v1/webhooks/{provider}/{id}`.
#[derive(Debug, Clone)]
pub struct IntegrationConfig {
    /// The id in the URL.
    pub id: String,
    /// The tenant every event of this integration belongs to.
    pub tenant_id: String,
    pub provider: ProviderKind,
    /// Every secret currently valid (more than one while rotating). Twilio:
    /// auth tokens; JSON: decoded `whsec_` keys.
    pub secrets: Vec<Secret>,
    pub rate_limit: RateLimit,
}

/// A token bucket: `per_second` sustained, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub per_second: NonZeroU32,
    pub burst: NonZeroU32,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            per_second: NonZeroU32::new(1000).unwrap_or(NonZeroU32::MIN),
            burst: NonZeroU32::new(2000).unwrap_or(NonZeroU32::MIN),
        }
    }
}

/// A tenant of launch intake and the SHA-256 hashes of its bearer tokens.
#[derive(Debug, Clone)]
pub struct TenantConfig {
    pub tenant_id: String,
    /// SHA-256 of each valid token (several while rotating).
    pub token_hashes: Vec<Secret>,
    pub rate_limit: RateLimit,
}

impl TenantConfig {
    /// A tenant accepting the given plaintext tokens (hashed here).
    pub fn with_tokens(tenant_id: impl Into<String>, tokens: &[&str]) -> Self {
        Self {
            tenant_id: tenant_id.into(),
            token_hashes: tokens.iter().map(|t| hash_token(t.as_bytes())).collect(),
            rate_limit: RateLimit::default(),
        }
    }
}

/// The hash a bearer token is compared by.
pub fn hash_token(token: &[u8]) -> Secret {
    Secret::new(Sha256::digest(token).to_vec())
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading config file {path}: {source}")]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parsing config file {path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Topics(#[from] callstream_platform::topics::BadSetting),
}

impl GatewayConfig {
    /// Defaults, with no integrations and no tenants.
    pub fn new(kafka: KafkaSettings, topics: Topics) -> Self {
        Self {
            listen: SocketAddr::from(([0, 0, 0, 0], 8080)),
            admin_listen: DEFAULT_ADMIN_LISTEN,
            public_base_url: "http://localhost:8080".into(),
            kafka,
            topics,
            produce_timeout: Duration::from_secs(5),
            produce_linger: Duration::from_millis(5),
            max_body_bytes: 64 * 1024,
            signature_tolerance: standard_webhooks::DEFAULT_TOLERANCE,
            readiness_cache: Duration::from_secs(1),
            readiness_timeout: Duration::from_millis(500),
            flush_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(15),
            serve_limits: ServeLimits::default(),
            integrations: Vec::new(),
            tenants: Vec::new(),
        }
    }

    /// Reads the file named by `CALLSTREAM_GATEWAY_CONFIG` (if set), then
    /// the environment overrides described on the fields.
    pub fn from_env() -> Result<Self, ConfigError> {
        let path = std::env::var_os("CALLSTREAM_GATEWAY_CONFIG").map(PathBuf::from);
        Self::load(path.as_deref())
    }

    /// Like [`from_env`](Self::from_env) with an explicit file.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let file = match path {
            None => FileConfig::default(),
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
                        path: path.to_owned(),
                        source,
                    })?;
                toml::from_str(&text).map_err(|source| ConfigError::Parse {
                    path: path.to_owned(),
                    source,
                })?
            }
        };
        let kafka = KafkaSettings::from_env_checked("callstream-gateway")
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let mut config = file.resolve(kafka, Topics::from_env()?, &EnvLookup)?;
        config.apply_env(&EnvLookup)?;
        config.validate()?;
        Ok(config)
    }

    /// The environment overrides named on the fields (over the file's values).
    pub fn apply_env(&mut self, env: &dyn Lookup) -> Result<(), ConfigError> {
        if let Some(listen) = env.var("CALLSTREAM_GATEWAY_LISTEN") {
            self.listen = parse_listen(&listen)?;
        }
        if let Some(listen) = env.var("CALLSTREAM_GATEWAY_ADMIN_LISTEN") {
            self.admin_listen = parse_listen(&listen)?;
        }
        if let Some(url) = env.var("CALLSTREAM_GATEWAY_PUBLIC_URL") {
            self.public_base_url = normalise_base_url(&url)?;
        }
        let number = |name: &str| -> Result<Option<u64>, ConfigError> {
            env.var(name)
                .map(|value| {
                    value
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| invalid(format!("{name}={value:?}: not a whole number")))
                })
                .transpose()
        };
        let limits = &mut self.serve_limits;
        if let Some(ms) = number("CALLSTREAM_GATEWAY_HEADER_READ_TIMEOUT_MS")? {
            limits.header_read_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = number("CALLSTREAM_GATEWAY_IDLE_TIMEOUT_MS")? {
            limits.idle_timeout = Duration::from_millis(ms);
        }
        if let Some(n) = number("CALLSTREAM_GATEWAY_MAX_CONNECTIONS")? {
            limits.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
        }
        Ok(())
    }

    /// Checks what the types cannot: unique ids, at least one secret each, limits that
    /// let a request through.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let limits = &self.serve_limits;
        for (name, zero) in [
            ("request_timeout_ms", self.request_timeout.is_zero()),
            (
                "header_read_timeout_ms (CALLSTREAM_GATEWAY_HEADER_READ_TIMEOUT_MS)",
                limits.header_read_timeout.is_zero(),
            ),
            (
                "idle_timeout_ms (CALLSTREAM_GATEWAY_IDLE_TIMEOUT_MS)",
                limits.idle_timeout.is_zero(),
            ),
            (
                "max_connections (CALLSTREAM_GATEWAY_MAX_CONNECTIONS)",
                limits.max_connections == 0,
            ),
        ] {
            if zero {
                return Err(invalid(format!("{name} must be above 0")));
            }
        }
        let mut ids: Vec<&str> = self.integrations.iter().map(|i| i.id.as_str()).collect();
        ids.sort_unstable();
        if let Some(pair) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(invalid(format!(
                "integration id {:?} appears twice",
                pair[0]
            )));
        }
        if let Some(i) = self.integrations.iter().find(|i| i.secrets.is_empty()) {
            return Err(invalid(format!("integration {:?} has no secrets", i.id)));
        }
        if let Some(t) = self.tenants.iter().find(|t| t.token_hashes.is_empty()) {
            return Err(invalid(format!("tenant {:?} has no tokens", t.tenant_id)));
        }
        Ok(())
    }
}

pub(crate) fn invalid(message: String) -> ConfigError {
    ConfigError::Invalid(message)
}

pub(crate) fn parse_listen(text: &str) -> Result<SocketAddr, ConfigError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(format!("listen address {text:?} is not host:port")))
}

pub(crate) fn normalise_base_url(text: &str) -> Result<String, ConfigError> {
    let url = text.trim().trim_end_matches('/');
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.contains(['?', '#']) {
        return Err(invalid(format!(
            "public base URL {url:?} must be http(s)://host[:port][/path]"
        )));
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests;

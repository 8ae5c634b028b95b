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

use callstream_platform::{KafkaSettings, Topics};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::event::ProviderKind;
use crate::secret::Secret;
use crate::verify::standard_webhooks;

/// Everything `run` needs. Build it with [`GatewayConfig::from_env`] (or
/// [`GatewayConfig::new`] plus fields, in tests).
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Address to listen on (`CALLSTREAM_GATEWAY_LISTEN`, file `listen`; default `0.0.0.0:8080`).
    pub listen: SocketAddr,
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
    /// The webhook integrations (file `[[integrations]]`).
    pub integrations: Vec<IntegrationConfig>,
    /// The tenants allowed to post launch requests (file `[[tenants]]`).
    pub tenants: Vec<TenantConfig>,
}

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
            public_base_url: "http://localhost:8080".into(),
            kafka,
            topics,
            produce_timeout: Duration::from_secs(5),
            max_body_bytes: 64 * 1024,
            signature_tolerance: standard_webhooks::DEFAULT_TOLERANCE,
            readiness_cache: Duration::from_secs(1),
            readiness_timeout: Duration::from_millis(500),
            flush_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(15),
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
        let kafka = KafkaSettings::from_env("callstream-gateway");
        let mut config = file.resolve(kafka, Topics::from_env()?, &EnvLookup)?;
        if let Ok(listen) = std::env::var("CALLSTREAM_GATEWAY_LISTEN") {
            config.listen = parse_listen(&listen)?;
        }
        if let Ok(url) = std::env::var("CALLSTREAM_GATEWAY_PUBLIC_URL") {
            config.public_base_url = normalise_base_url(&url)?;
        }
        Ok(config)
    }

    /// Checks what the types cannot: unique ids, at least one secret each.
    pub fn validate(&self) -> Result<(), ConfigError> {
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

fn invalid(message: String) -> ConfigError {
    ConfigError::Invalid(message)
}

fn parse_listen(text: &str) -> Result<SocketAddr, ConfigError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(format!("listen address {text:?} is not host:port")))
}

fn normalise_base_url(text: &str) -> Result<String, ConfigError> {
    let url = text.trim().trim_end_matches('/');
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.contains(['?', '#']) {
        return Err(invalid(format!(
            "public base URL {url:?} must be http(s)://host[:port][/path]"
        )));
    }
    Ok(url.to_string())
}

/// Where a secret's value is read from. Never the config file itself.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SecretSource {
    /// An environment variable holding the secret.
    Env(String),
    /// A file holding the secret (surrounding whitespace ignored).
    File(PathBuf),
    /// For tokens only: the hex SHA-256 of the token, so the plaintext
    /// need not be deployed at all.
    Sha256(String),
}

/// Reads environment variables; a trait so tests need not mutate the
/// process environment.
pub trait Lookup {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
pub struct EnvLookup;

impl Lookup for EnvLookup {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl SecretSource {
    fn read(&self, env: &dyn Lookup) -> Result<String, ConfigError> {
        match self {
            Self::Env(name) => env
                .var(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| invalid(format!("secret variable {name} is unset or empty"))),
            Self::File(path) => std::fs::read_to_string(path)
                .map(|v| v.trim().to_string())
                .map_err(|e| invalid(format!("reading secret file {}: {e}", path.display()))),
            Self::Sha256(_) => Err(invalid("a sha256 source is only valid for tokens".into())),
        }
    }
}

/// The config file's shape (TOML).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub listen: Option<String>,
    pub public_base_url: Option<String>,
    pub produce_timeout_ms: Option<u64>,
    pub max_body_bytes: Option<usize>,
    pub signature_tolerance_secs: Option<u64>,
    pub readiness_cache_ms: Option<u64>,
    pub readiness_timeout_ms: Option<u64>,
    pub flush_timeout_ms: Option<u64>,
    pub request_timeout_ms: Option<u64>,
    #[serde(default)]
    pub integrations: Vec<FileIntegration>,
    #[serde(default)]
    pub tenants: Vec<FileTenant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileIntegration {
    pub id: String,
    pub tenant: String,
    /// `twilio` or `json`.
    pub provider: String,
    pub secrets: Vec<SecretSource>,
    pub rate_per_second: Option<NonZeroU32>,
    pub burst: Option<NonZeroU32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileTenant {
    pub tenant: String,
    pub tokens: Vec<SecretSource>,
    pub rate_per_second: Option<NonZeroU32>,
    pub burst: Option<NonZeroU32>,
}

fn rate(per_second: Option<NonZeroU32>, burst: Option<NonZeroU32>) -> RateLimit {
    let default = RateLimit::default();
    let per_second = per_second.unwrap_or(default.per_second);
    RateLimit {
        per_second,
        burst: burst.unwrap_or(per_second.saturating_mul(NonZeroU32::MIN.saturating_add(1))),
    }
}

fn decode_hex_sha256(hex: &str) -> Option<Secret> {
    let hex = hex.trim();
    if hex.len() != 64 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..32)
        .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    bytes.map(Secret::new)
}

impl FileConfig {
    /// Resolves secrets and defaults into a validated [`GatewayConfig`].
    pub fn resolve(
        self,
        kafka: KafkaSettings,
        topics: Topics,
        env: &dyn Lookup,
    ) -> Result<GatewayConfig, ConfigError> {
        let mut config = GatewayConfig::new(kafka, topics);
        if let Some(listen) = &self.listen {
            config.listen = parse_listen(listen)?;
        }
        if let Some(url) = &self.public_base_url {
            config.public_base_url = normalise_base_url(url)?;
        }
        let ms = Duration::from_millis;
        config.produce_timeout = self.produce_timeout_ms.map_or(config.produce_timeout, ms);
        config.max_body_bytes = self.max_body_bytes.unwrap_or(config.max_body_bytes);
        config.signature_tolerance = self
            .signature_tolerance_secs
            .map_or(config.signature_tolerance, Duration::from_secs);
        config.readiness_cache = self.readiness_cache_ms.map_or(config.readiness_cache, ms);
        config.readiness_timeout = self
            .readiness_timeout_ms
            .map_or(config.readiness_timeout, ms);
        config.flush_timeout = self.flush_timeout_ms.map_or(config.flush_timeout, ms);
        config.request_timeout = self.request_timeout_ms.map_or(config.request_timeout, ms);

        for i in self.integrations {
            let provider = ProviderKind::from_name(&i.provider).ok_or_else(|| {
                invalid(format!(
                    "integration {:?}: unknown provider {:?}",
                    i.id, i.provider
                ))
            })?;
            let mut secrets = Vec::with_capacity(i.secrets.len());
            for source in &i.secrets {
                let text = source.read(env)?;
                secrets.push(match provider {
                    ProviderKind::Twilio => Secret::new(text.into_bytes()),
                    ProviderKind::Json => standard_webhooks::decode_secret(&text)
                        .map_err(|e| invalid(format!("integration {:?}: {e}", i.id)))?,
                });
            }
            config.integrations.push(IntegrationConfig {
                id: i.id,
                tenant_id: i.tenant,
                provider,
                secrets,
                rate_limit: rate(i.rate_per_second, i.burst),
            });
        }
        for t in self.tenants {
            let mut token_hashes = Vec::with_capacity(t.tokens.len());
            for source in &t.tokens {
                token_hashes.push(match source {
                    SecretSource::Sha256(hex) => decode_hex_sha256(hex).ok_or_else(|| {
                        invalid(format!(
                            "tenant {:?}: sha256 must be 64 hex digits",
                            t.tenant
                        ))
                    })?,
                    other => hash_token(other.read(env)?.as_bytes()),
                });
            }
            config.tenants.push(TenantConfig {
                tenant_id: t.tenant,
                token_hashes,
                rate_limit: rate(t.rate_per_second, t.burst),
            });
        }
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

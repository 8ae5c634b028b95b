//! The config file (TOML) and where its secrets come from: resolving it
//! reads every secret from the environment or a file, decodes `whsec_`
//! keys and hashes launch tokens, so a bad secret stops start-up instead of
//! failing requests later.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use callstream_platform::kafka::properties::is_secret;
use callstream_platform::settings::{check_secret, SecretKind};
use callstream_platform::{KafkaSettings, Topics};
use serde::Deserialize;

use super::{
    hash_token, invalid, normalise_base_url, parse_listen, ConfigError, GatewayConfig,
    IntegrationConfig, RateLimit, TenantConfig,
};
use crate::event::ProviderKind;
use crate::secret::Secret;
use crate::verify::standard_webhooks;

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

    /// Reads the secret and holds it to `kind`'s rules ([`check_secret`]); a refusal
    /// names `owner` (the integration or tenant) and the variable or file, not the value.
    fn read_checked(
        &self,
        env: &dyn Lookup,
        owner: &str,
        kind: SecretKind,
    ) -> Result<String, ConfigError> {
        let text = self.read(env)?;
        check_secret(&self.label(), text.as_bytes(), kind)
            .map_err(|weak| invalid(format!("{owner}: {weak}")))?;
        Ok(text)
    }

    /// The name a refusal uses: the variable, or the file.
    fn label(&self) -> String {
        match self {
            Self::Env(name) => name.clone(),
            Self::File(path) => format!("secret file {}", path.display()),
            Self::Sha256(_) => "sha256".into(),
        }
    }
}

/// The config file's shape (TOML).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub listen: Option<String>,
    pub admin_listen: Option<String>,
    pub public_base_url: Option<String>,
    pub produce_timeout_ms: Option<u64>,
    pub produce_linger_ms: Option<u64>,
    pub max_body_bytes: Option<usize>,
    pub signature_tolerance_secs: Option<u64>,
    pub readiness_cache_ms: Option<u64>,
    pub readiness_timeout_ms: Option<u64>,
    pub flush_timeout_ms: Option<u64>,
    pub request_timeout_ms: Option<u64>,
    pub header_read_timeout_ms: Option<u64>,
    pub idle_timeout_ms: Option<u64>,
    pub max_connections: Option<usize>,
    /// librdkafka properties by name (`"security.protocol" = "SASL_SSL"`); a secret one
    /// only from a source (`"sasl.password" = { file = "/run/secrets/kafka" }`). A
    /// `KAFKA_*` variable wins over the same property here.
    #[serde(default)]
    pub kafka: BTreeMap<String, KafkaValue>,
    #[serde(default)]
    pub integrations: Vec<FileIntegration>,
    #[serde(default)]
    pub tenants: Vec<FileTenant>,
}

/// A value of the `[kafka]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum KafkaValue {
    Text(String),
    Number(i64),
    Bool(bool),
    Secret(SecretSource),
}

impl FileConfig {
    /// The `[kafka]` table's properties with their secrets read.
    fn kafka_properties(&self, env: &dyn Lookup) -> Result<Vec<(String, String)>, ConfigError> {
        let mut out = Vec::new();
        for (property, value) in &self.kafka {
            let value = match value {
                KafkaValue::Text(_) | KafkaValue::Number(_) | KafkaValue::Bool(_)
                    if is_secret(property) =>
                {
                    return Err(invalid(format!(
                        "[kafka] {property}: a secret is never written in the config file; \
                         name its source instead ({{ file = \"...\" }} or {{ env = \"...\" }})"
                    )))
                }
                KafkaValue::Text(text) => text.clone(),
                KafkaValue::Number(n) => n.to_string(),
                KafkaValue::Bool(b) => b.to_string(),
                KafkaValue::Secret(source) => source.read(env)?,
            };
            out.push((property.clone(), value));
        }
        Ok(out)
    }
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
        let kafka = kafka
            .with_file_properties(
                "the gateway's config file",
                self.kafka_properties(env)?,
                env.var("KAFKA_BOOTSTRAP_SERVERS").is_some(),
            )
            .map_err(|e| invalid(e.to_string()))?;
        let mut config = GatewayConfig::new(kafka, topics);
        if let Some(listen) = &self.listen {
            config.listen = parse_listen(listen)?;
        }
        if let Some(listen) = &self.admin_listen {
            config.admin_listen = parse_listen(listen)?;
        }
        if let Some(url) = &self.public_base_url {
            config.public_base_url = normalise_base_url(url)?;
        }
        let ms = Duration::from_millis;
        config.produce_timeout = self.produce_timeout_ms.map_or(config.produce_timeout, ms);
        config.produce_linger = self.produce_linger_ms.map_or(config.produce_linger, ms);
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
        let limits = &mut config.serve_limits;
        limits.header_read_timeout = self
            .header_read_timeout_ms
            .map_or(limits.header_read_timeout, ms);
        limits.idle_timeout = self.idle_timeout_ms.map_or(limits.idle_timeout, ms);
        limits.max_connections = self.max_connections.unwrap_or(limits.max_connections);

        for i in self.integrations {
            let provider = ProviderKind::from_name(&i.provider).ok_or_else(|| {
                invalid(format!(
                    "integration {:?}: unknown provider {:?}",
                    i.id, i.provider
                ))
            })?;
            let owner = format!("integration {:?}", i.id);
            let mut secrets = Vec::with_capacity(i.secrets.len());
            for source in &i.secrets {
                secrets.push(match provider {
                    // The auth token is the HMAC key Twilio signs callbacks with.
                    ProviderKind::Twilio => Secret::new(
                        source
                            .read_checked(env, &owner, SecretKind::Key)?
                            .into_bytes(),
                    ),
                    // `whsec_` plus base64 is long whatever the key: the decoded key is
                    // what must be long enough.
                    ProviderKind::Json => {
                        let text = source.read_checked(env, &owner, SecretKind::Credential)?;
                        let key = standard_webhooks::decode_secret(&text)
                            .map_err(|e| invalid(format!("{owner}: {e}")))?;
                        check_secret(&source.label(), key.expose(), SecretKind::Key)
                            .map_err(|weak| invalid(format!("{owner}: {weak}")))?;
                        key
                    }
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
                    other => hash_token(
                        other
                            .read_checked(env, &format!("tenant {:?}", t.tenant), SecretKind::Key)?
                            .as_bytes(),
                    ),
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

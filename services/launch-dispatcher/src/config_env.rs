//! Loading [`DispatcherConfig`] from the environment, or from any lookup
//! of the same names (tests pass a map): every setting, the topic settings
//! included, comes from the one lookup.

use std::collections::BTreeMap;
use std::time::Duration;

use callstream_platform::topics::DEFAULT_PARTITIONS;
use callstream_platform::Topics;

use super::{ConfigError, DispatchPolicy, DispatcherConfig, Instructions};

impl DispatcherConfig {
    /// Reads the environment variables named on the fields.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env) over any lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let topics = topics_from(&get)?;
        let required = |name: &'static str| {
            get(name)
                .filter(|v| !v.trim().is_empty())
                .ok_or(ConfigError::Missing(name))
        };
        let callback = get("CALLSTREAM_DISPATCH_CALLBACK_BASE_URL")
            .or_else(|| get("CALLSTREAM_GATEWAY_PUBLIC_URL"))
            .filter(|v| !v.trim().is_empty())
            .ok_or(ConfigError::Missing(
                "CALLSTREAM_DISPATCH_CALLBACK_BASE_URL (or CALLSTREAM_GATEWAY_PUBLIC_URL)",
            ))?;
        let mut config = Self::new(
            topics,
            get("TWILIO_API_BASE_URL").unwrap_or_else(|| "https://api.twilio.com".into()),
            required("TWILIO_ACCOUNT_SID")?,
            required("TWILIO_AUTH_TOKEN")?,
            callback,
        );
        config.twilio.default_from = get("TWILIO_FROM_NUMBER").filter(|v| !v.is_empty());
        config.twilio.machine_detection = get("TWILIO_MACHINE_DETECTION").filter(|v| !v.is_empty());
        if let Some(twiml) = get("TWILIO_TWIML").filter(|v| !v.is_empty()) {
            config.twilio.instructions = Instructions::Twiml(twiml);
        } else if let Some(url) = get("TWILIO_TWIML_URL").filter(|v| !v.is_empty()) {
            config.twilio.instructions = Instructions::Url(url);
        }
        if let Some(id) = get("CALLSTREAM_DISPATCH_INTEGRATION_ID").filter(|v| !v.is_empty()) {
            config.callbacks.default_integration = id;
        }
        if let Some(list) = get("CALLSTREAM_DISPATCH_INTEGRATIONS") {
            config.callbacks.integrations = parse_pairs("CALLSTREAM_DISPATCH_INTEGRATIONS", &list)?;
        }
        let number = |name: &'static str, default: u64| -> Result<u64, ConfigError> {
            match get(name) {
                None => Ok(default),
                Some(value) => value.trim().parse().map_err(|_| ConfigError::Invalid {
                    name,
                    value,
                    problem: "not a whole number",
                }),
            }
        };
        let millis = |name, default: Duration| {
            number(name, default.as_millis() as u64).map(Duration::from_millis)
        };
        let p = &mut config.policy;
        let d = DispatchPolicy::default();
        p.request_timeout = millis("CALLSTREAM_DISPATCH_REQUEST_TIMEOUT_MS", d.request_timeout)?;
        p.connect_timeout = millis("CALLSTREAM_DISPATCH_CONNECT_TIMEOUT_MS", d.connect_timeout)?;
        p.send_deadline = millis("CALLSTREAM_DISPATCH_SEND_DEADLINE_MS", d.send_deadline)?;
        p.settle = millis("CALLSTREAM_DISPATCH_SETTLE_MS", d.settle)?;
        p.lookup_skew = millis("CALLSTREAM_DISPATCH_LOOKUP_SKEW_MS", d.lookup_skew)?;
        p.ledger_retention = millis(
            "CALLSTREAM_DISPATCH_LEDGER_RETENTION_MS",
            d.ledger_retention,
        )?;
        p.max_lookups = number("CALLSTREAM_DISPATCH_MAX_LOOKUPS", d.max_lookups.into())?
            .try_into()
            .unwrap_or(u32::MAX);
        p.retry.max_attempts = number(
            "CALLSTREAM_DISPATCH_MAX_ATTEMPTS",
            d.retry.max_attempts.into(),
        )?
        .try_into()
        .unwrap_or(u32::MAX);
        p.retry.base_delay = millis("CALLSTREAM_DISPATCH_RETRY_BASE_MS", d.retry.base_delay)?;
        p.retry.max_delay = millis("CALLSTREAM_DISPATCH_RETRY_MAX_MS", d.retry.max_delay)?;
        config.calls_per_second = number("CALLSTREAM_DISPATCH_CALLS_PER_SECOND", 50)?
            .try_into()
            .unwrap_or(u32::MAX);
        config.concurrency = number("CALLSTREAM_DISPATCH_CONCURRENCY", 64)?
            .try_into()
            .unwrap_or(usize::MAX);
        config.validate()?;
        Ok(config)
    }
}

/// The `CALLSTREAM_TOPIC_*` settings, read from `get` with the rules
/// `Topics::from_env` applies to the environment.
fn topics_from(get: &impl Fn(&str) -> Option<String>) -> Result<Topics, ConfigError> {
    let number = |name: &'static str, default: i32| match get(name) {
        None => Ok(default),
        Some(value) => match value.trim().parse::<i32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(ConfigError::Invalid {
                name,
                value,
                problem: "not a positive whole number",
            }),
        },
    };
    Ok(Topics {
        prefix: get("CALLSTREAM_TOPIC_PREFIX").unwrap_or_default(),
        partitions: number("CALLSTREAM_TOPIC_PARTITIONS", DEFAULT_PARTITIONS)?,
        replication_factor: number("CALLSTREAM_REPLICATION_FACTOR", 1)?,
        min_insync_replicas: number("CALLSTREAM_MIN_INSYNC_REPLICAS", 1)?,
    })
}

fn parse_pairs(name: &'static str, list: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut pairs = BTreeMap::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once('=') {
            Some((tenant, id)) if !tenant.trim().is_empty() && !id.trim().is_empty() => {
                pairs.insert(tenant.trim().to_owned(), id.trim().to_owned());
            }
            _ => {
                return Err(ConfigError::Invalid {
                    name,
                    value: item.to_owned(),
                    problem: "expected tenant=integration",
                })
            }
        }
    }
    Ok(pairs)
}

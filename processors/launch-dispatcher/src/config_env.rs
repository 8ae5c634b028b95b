//! Loading [`DispatcherConfig`] from the environment, or from any lookup
//! of the same names (tests pass a map): every setting, the topic settings
//! included, comes from the one lookup.

use callstream_platform::settings::SecretKind;
use callstream_platform::{SettingError, Settings};

use super::{ConfigError, DispatchPolicy, DispatcherConfig, Instructions};

impl DispatcherConfig {
    /// Reads the environment variables named on the fields.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env) over any lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let settings = Settings::new(get);
        let topics = settings.topics()?;
        let callback = settings
            .non_empty("CALLSTREAM_DISPATCH_CALLBACK_BASE_URL")
            .or_else(|| settings.non_empty("CALLSTREAM_GATEWAY_PUBLIC_URL"))
            .ok_or(SettingError::Missing(
                "CALLSTREAM_DISPATCH_CALLBACK_BASE_URL (or CALLSTREAM_GATEWAY_PUBLIC_URL)",
            ))?;
        let mut config = Self::new(
            topics,
            settings
                .get("TWILIO_API_BASE_URL")
                .unwrap_or_else(|| "https://api.twilio.com".into()),
            settings.secret("TWILIO_ACCOUNT_SID", SecretKind::Credential)?,
            settings.secret("TWILIO_AUTH_TOKEN", SecretKind::Credential)?,
            callback,
        );
        config.twilio.default_from = settings.non_empty("TWILIO_FROM_NUMBER");
        config.twilio.machine_detection = settings.non_empty("TWILIO_MACHINE_DETECTION");
        if let Some(twiml) = settings.non_empty("TWILIO_TWIML") {
            config.twilio.instructions = Instructions::Twiml(twiml);
        } else if let Some(url) = settings.non_empty("TWILIO_TWIML_URL") {
            config.twilio.instructions = Instructions::Url(url);
        }
        if let Some(id) = settings.non_empty("CALLSTREAM_DISPATCH_INTEGRATION_ID") {
            config.callbacks.default_integration = id;
        }
        if let Some(integrations) = settings.pairs(
            "CALLSTREAM_DISPATCH_INTEGRATIONS",
            "expected tenant=integration",
        )? {
            config.callbacks.integrations = integrations;
        }
        let number = |name, default| settings.number(name, default);
        let millis = |name, default| settings.millis(name, default);
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

//! The notifier's settings, each with its default and its environment variable.

use std::path::PathBuf;
use std::time::Duration;

use callstream_domain::backoff::Backoff;
use callstream_platform::{SettingError, Settings, Topics};

use crate::channels::{Channels, ChannelsError};
use crate::watch::Thresholds;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Setting(#[from] SettingError),
    #[error(transparent)]
    Channels(#[from] ChannelsError),
}

/// How the notifier routes, sends, retries and gives up.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifierConfig {
    pub topics: Topics,
    /// The channels (`CALLSTREAM_NOTIFIER_CHANNELS`: a channels file; none without it,
    /// and then nothing is sent).
    pub channels: Channels,
    /// The operator console's address, for links in messages (`CALLSTREAM_CONSOLE_URL`,
    /// for example `https://ops.example/console`; without it, messages carry no link).
    pub console_url: Option<String>,
    /// Sends of one message before it fails for good and opens an exception
    /// (`CALLSTREAM_NOTIFIER_MAX_ATTEMPTS`, default 8).
    pub max_attempts: u32,
    /// First retry delay, doubling with jitter up to the maximum
    /// (`CALLSTREAM_NOTIFIER_RETRY_BASE_MS`, default 2 s; `..._RETRY_MAX_MS`, default 5 min).
    pub backoff: Backoff,
    /// A send whose result has not come back in this long (a crash lost it) is sent again,
    /// with the same id (`CALLSTREAM_NOTIFIER_RESULT_TIMEOUT_MS`, default 2 min).
    pub result_timeout: Duration,
    /// Timeout of one HTTP request or SMTP session
    /// (`CALLSTREAM_NOTIFIER_REQUEST_TIMEOUT_MS`, default 10 s).
    pub request_timeout: Duration,
    /// Sends running at once across channels (`CALLSTREAM_NOTIFIER_CONCURRENCY`, default 16).
    pub concurrency: usize,
    /// How long a notification id is remembered, so the same one routed again is not
    /// sent again (`CALLSTREAM_NOTIFIER_MEMORY_MS`, default 7 days).
    pub memory: Duration,
    /// When the notifier's own alerts raise (`CALLSTREAM_NOTIFIER_MISSING_BACKLOG`, default
    /// 50 open; `..._DEAD_LETTERS`, default 1 in 10 minutes; `..._ERROR_RATE`, default 20
    /// failed launches and CRM writes in 10 minutes; `..._LAG`, default 10000 records behind
    /// for `..._LAG_FOR_MS`, default 5 minutes).
    pub thresholds: Thresholds,
    /// How often each processor's consumer lag is sampled
    /// (`CALLSTREAM_NOTIFIER_LAG_INTERVAL_MS`, default 30 s).
    pub lag_interval: Duration,
    /// The processors (app ids) whose consumer lag is watched
    /// (`CALLSTREAM_NOTIFIER_LAG_GROUPS`, comma-separated; default [`crate::lag::DEFAULT_GROUPS`]).
    pub lag_groups: Vec<String>,
}

impl NotifierConfig {
    pub fn new(topics: Topics, channels: Channels) -> Self {
        Self {
            topics,
            channels,
            console_url: None,
            max_attempts: 8,
            backoff: Backoff {
                base_delay: Duration::from_secs(2),
                max_delay: Duration::from_secs(300),
            },
            result_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(10),
            concurrency: 16,
            memory: Duration::from_secs(7 * 86_400),
            thresholds: Thresholds::default(),
            lag_interval: Duration::from_secs(30),
            lag_groups: crate::lag::DEFAULT_GROUPS
                .iter()
                .map(|g| g.to_string())
                .collect(),
        }
    }

    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env) over any lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let settings = Settings::new(get);
        let topics = settings.topics()?;
        let channels = match settings.non_empty("CALLSTREAM_NOTIFIER_CHANNELS") {
            Some(path) => Channels::load(&PathBuf::from(path))?,
            None => Channels::default(),
        };
        let mut c = Self::new(topics, channels);
        c.console_url = settings
            .non_empty("CALLSTREAM_CONSOLE_URL")
            .map(|u| u.trim_end_matches('/').to_owned());
        let small = |name, default: u32| {
            settings
                .number(name, default.into())
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        c.max_attempts = small("CALLSTREAM_NOTIFIER_MAX_ATTEMPTS", c.max_attempts)?;
        c.backoff.base_delay =
            settings.millis("CALLSTREAM_NOTIFIER_RETRY_BASE_MS", c.backoff.base_delay)?;
        c.backoff.max_delay =
            settings.millis("CALLSTREAM_NOTIFIER_RETRY_MAX_MS", c.backoff.max_delay)?;
        c.result_timeout =
            settings.millis("CALLSTREAM_NOTIFIER_RESULT_TIMEOUT_MS", c.result_timeout)?;
        c.request_timeout =
            settings.millis("CALLSTREAM_NOTIFIER_REQUEST_TIMEOUT_MS", c.request_timeout)?;
        c.concurrency = usize::try_from(settings.number("CALLSTREAM_NOTIFIER_CONCURRENCY", 16)?)
            .unwrap_or(usize::MAX);
        c.memory = settings.millis("CALLSTREAM_NOTIFIER_MEMORY_MS", c.memory)?;
        let t = &mut c.thresholds;
        t.missing_backlog =
            settings.number("CALLSTREAM_NOTIFIER_MISSING_BACKLOG", t.missing_backlog)?;
        t.dead_letters = small("CALLSTREAM_NOTIFIER_DEAD_LETTERS", t.dead_letters)?;
        t.error_rate = small("CALLSTREAM_NOTIFIER_ERROR_RATE", t.error_rate)?;
        t.lag = i64::try_from(settings.number("CALLSTREAM_NOTIFIER_LAG", t.lag.unsigned_abs())?)
            .unwrap_or(i64::MAX);
        t.lag_for_ms = i64::try_from(
            settings
                .millis(
                    "CALLSTREAM_NOTIFIER_LAG_FOR_MS",
                    Duration::from_millis(t.lag_for_ms.unsigned_abs()),
                )?
                .as_millis(),
        )
        .unwrap_or(i64::MAX);
        c.lag_interval = settings.millis("CALLSTREAM_NOTIFIER_LAG_INTERVAL_MS", c.lag_interval)?;
        if let Some(groups) = settings.non_empty("CALLSTREAM_NOTIFIER_LAG_GROUPS") {
            c.lag_groups = groups
                .split(',')
                .map(|g| g.trim().to_owned())
                .filter(|g| !g.is_empty())
                .collect();
        }
        c.validate()?;
        Ok(c)
    }

    /// Refuses settings that would stall or flood.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |name, value: String, problem| {
            ConfigError::from(SettingError::Invalid {
                name,
                value,
                problem,
            })
        };
        if self.max_attempts == 0 {
            return Err(invalid(
                "CALLSTREAM_NOTIFIER_MAX_ATTEMPTS",
                "0".into(),
                "must be at least 1",
            ));
        }
        if self.concurrency == 0 {
            return Err(invalid(
                "CALLSTREAM_NOTIFIER_CONCURRENCY",
                "0".into(),
                "must be at least 1",
            ));
        }
        if self.backoff.base_delay > self.backoff.max_delay {
            return Err(invalid(
                "CALLSTREAM_NOTIFIER_RETRY_BASE_MS",
                format!("{:?}", self.backoff.base_delay),
                "must not exceed CALLSTREAM_NOTIFIER_RETRY_MAX_MS",
            ));
        }
        if self.result_timeout <= self.request_timeout {
            return Err(invalid(
                "CALLSTREAM_NOTIFIER_RESULT_TIMEOUT_MS",
                format!("{:?}", self.result_timeout),
                "must exceed CALLSTREAM_NOTIFIER_REQUEST_TIMEOUT_MS (a send still running is not lost)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn defaults_and_overrides_from_the_environment() {
        let env: HashMap<&str, &str> = HashMap::from([
            ("CALLSTREAM_NOTIFIER_MAX_ATTEMPTS", "3"),
            ("CALLSTREAM_CONSOLE_URL", "https://ops.example/console/"),
        ]);
        let c = NotifierConfig::from_lookup(|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(c.max_attempts, 3);
        assert_eq!(
            c.console_url.as_deref(),
            Some("https://ops.example/console")
        );
        assert!(c.channels.channels.is_empty());
        let bad: HashMap<&str, &str> = HashMap::from([("CALLSTREAM_NOTIFIER_MAX_ATTEMPTS", "0")]);
        let error = NotifierConfig::from_lookup(|k| bad.get(k).map(|v| v.to_string())).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("CALLSTREAM_NOTIFIER_MAX_ATTEMPTS"),
            "{error}"
        );
    }
}

//! Recovery's settings, each with its default and its environment variable.
//! The Twilio account uses the same variables as the launch dispatcher.

use std::time::Duration;

use callstream_platform::settings::SecretKind;
use callstream_platform::{SettingError, Settings, Topics};
use thiserror::Error;

/// A configuration that cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A setting is missing, does not parse, or is refused by
    /// [`RecoveryConfig::validate`].
    #[error(transparent)]
    Setting(#[from] SettingError),
}

/// Where the voice platform's call records are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TwilioAccess {
    /// Scheme and host of the REST API, no trailing slash
    /// (`TWILIO_API_BASE_URL`, default `https://api.twilio.com`; the simulator's URL in tests).
    pub base_url: String,
    /// Account sid: HTTP basic user and part of every path (`TWILIO_ACCOUNT_SID`, required).
    pub account_sid: String,
    /// Auth token: HTTP basic password (`TWILIO_AUTH_TOKEN`, required).
    pub auth_token: String,
}

/// How recovery looks calls up, waits, retries and gives up.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryConfig {
    /// Physical topic names (`CALLSTREAM_TOPIC_*`).
    pub topics: Topics,
    pub twilio: TwilioAccess,
    /// Provider requests per second per tenant, the governor's quota; a
    /// burst of missing completions waits its turn, nothing is dropped
    /// (`CALLSTREAM_RECOVERY_REQUESTS_PER_SECOND`, default 5).
    pub requests_per_second: u32,
    /// Effects (lookups) running at once (`CALLSTREAM_RECOVERY_CONCURRENCY`, default 32).
    pub concurrency: usize,
    /// Timeout of one HTTP request (`CALLSTREAM_RECOVERY_REQUEST_TIMEOUT_MS`, default 10 s).
    pub request_timeout: Duration,
    /// A lookup whose result has not come back in this long (a crash lost
    /// it) is asked again (`CALLSTREAM_RECOVERY_RESULT_TIMEOUT_MS`, default 2 min).
    pub result_timeout: Duration,
    /// Wait before looking again at a call still in progress
    /// (`CALLSTREAM_RECOVERY_POLL_DELAY_MS`, default 60 s).
    pub poll_delay: Duration,
    /// Looks at a call still in progress before raising an exception
    /// (`CALLSTREAM_RECOVERY_MAX_POLLS`, default 10).
    pub max_polls: u32,
    /// Lookups that failed (5xx, timeout, network) before raising an exception
    /// (`CALLSTREAM_RECOVERY_MAX_ATTEMPTS`, default 5).
    pub max_attempts: u32,
    /// First retry delay; it doubles, with jitter, up to the maximum
    /// (`CALLSTREAM_RECOVERY_RETRY_BASE_MS`, default 1 s).
    pub retry_base: Duration,
    /// Longest retry delay (`CALLSTREAM_RECOVERY_RETRY_MAX_MS`, default 60 s).
    pub retry_max: Duration,
    /// How long a closed case is remembered, so a repeated `completion-missing`
    /// or command for it does nothing (`CALLSTREAM_RECOVERY_CLOSED_RETENTION_MS`,
    /// default 24 hours).
    pub closed_retention: Duration,
}

impl RecoveryConfig {
    /// Defaults around a Twilio account.
    pub fn new(topics: Topics, twilio: TwilioAccess) -> Self {
        Self {
            topics,
            twilio,
            requests_per_second: 5,
            concurrency: 32,
            request_timeout: Duration::from_secs(10),
            result_timeout: Duration::from_secs(120),
            poll_delay: Duration::from_secs(60),
            max_polls: 10,
            max_attempts: 5,
            retry_base: Duration::from_secs(1),
            retry_max: Duration::from_secs(60),
            closed_retention: Duration::from_secs(24 * 3600),
        }
    }

    /// Reads the environment variables named on the fields.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env) over any lookup (tests pass a map):
    /// every setting, the topic settings included, comes from the one lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let settings = Settings::new(get);
        let topics = settings.topics()?;
        let twilio = TwilioAccess {
            base_url: settings
                .non_empty("TWILIO_API_BASE_URL")
                .unwrap_or_else(|| "https://api.twilio.com".into())
                .trim_end_matches('/')
                .to_string(),
            account_sid: settings.secret("TWILIO_ACCOUNT_SID", SecretKind::Credential)?,
            auth_token: settings.secret("TWILIO_AUTH_TOKEN", SecretKind::Credential)?,
        };
        let mut c = Self::new(topics, twilio);
        let number = |name, default| settings.number(name, default);
        let millis = |name, default| settings.millis(name, default);
        let small = |name, default: u32| {
            number(name, default.into()).map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        c.requests_per_second = small(
            "CALLSTREAM_RECOVERY_REQUESTS_PER_SECOND",
            c.requests_per_second,
        )?;
        c.concurrency = usize::try_from(number(
            "CALLSTREAM_RECOVERY_CONCURRENCY",
            c.concurrency as u64,
        )?)
        .unwrap_or(usize::MAX);
        c.request_timeout = millis("CALLSTREAM_RECOVERY_REQUEST_TIMEOUT_MS", c.request_timeout)?;
        c.result_timeout = millis("CALLSTREAM_RECOVERY_RESULT_TIMEOUT_MS", c.result_timeout)?;
        c.poll_delay = millis("CALLSTREAM_RECOVERY_POLL_DELAY_MS", c.poll_delay)?;
        c.max_polls = small("CALLSTREAM_RECOVERY_MAX_POLLS", c.max_polls)?;
        c.max_attempts = small("CALLSTREAM_RECOVERY_MAX_ATTEMPTS", c.max_attempts)?;
        c.retry_base = millis("CALLSTREAM_RECOVERY_RETRY_BASE_MS", c.retry_base)?;
        c.retry_max = millis("CALLSTREAM_RECOVERY_RETRY_MAX_MS", c.retry_max)?;
        c.closed_retention = millis(
            "CALLSTREAM_RECOVERY_CLOSED_RETENTION_MS",
            c.closed_retention,
        )?;
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
        if self.requests_per_second == 0 {
            return Err(invalid(
                "CALLSTREAM_RECOVERY_REQUESTS_PER_SECOND",
                "0".into(),
                "must be at least 1",
            ));
        }
        if self.concurrency == 0 {
            return Err(invalid(
                "CALLSTREAM_RECOVERY_CONCURRENCY",
                "0".into(),
                "must be at least 1",
            ));
        }
        if self.max_attempts == 0 {
            return Err(invalid(
                "CALLSTREAM_RECOVERY_MAX_ATTEMPTS",
                "0".into(),
                "must be at least 1",
            ));
        }
        if self.retry_base > self.retry_max {
            return Err(invalid(
                "CALLSTREAM_RECOVERY_RETRY_BASE_MS",
                format!("{:?}", self.retry_base),
                "must not exceed CALLSTREAM_RECOVERY_RETRY_MAX_MS",
            ));
        }
        if !self.twilio.base_url.starts_with("http://")
            && !self.twilio.base_url.starts_with("https://")
        {
            return Err(invalid(
                "TWILIO_API_BASE_URL",
                self.twilio.base_url.clone(),
                "must be an http(s) URL",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn reads_the_environment_and_refuses_nonsense() {
        let base = [("TWILIO_ACCOUNT_SID", "AC1"), ("TWILIO_AUTH_TOKEN", "tok")];
        let c = RecoveryConfig::from_lookup(lookup(&base)).unwrap();
        assert_eq!(c.twilio.base_url, "https://api.twilio.com");
        assert_eq!(c.requests_per_second, 5);
        let mut with = base.to_vec();
        with.push(("CALLSTREAM_RECOVERY_POLL_DELAY_MS", "250"));
        with.push(("TWILIO_API_BASE_URL", "http://127.0.0.1:8091/"));
        let c = RecoveryConfig::from_lookup(lookup(&with)).unwrap();
        assert_eq!(c.poll_delay, Duration::from_millis(250));
        assert_eq!(c.twilio.base_url, "http://127.0.0.1:8091");

        let refused: Vec<Vec<(&str, &str)>> = vec![
            vec![("TWILIO_ACCOUNT_SID", "AC1")],
            [
                &base[..],
                &[("CALLSTREAM_RECOVERY_REQUESTS_PER_SECOND", "0")],
            ]
            .concat(),
            [&base[..], &[("CALLSTREAM_RECOVERY_MAX_POLLS", "many")]].concat(),
            [&base[..], &[("TWILIO_API_BASE_URL", "ftp://x")]].concat(),
        ];
        for pairs in refused {
            assert!(
                RecoveryConfig::from_lookup(lookup(&pairs)).is_err(),
                "{pairs:?}"
            );
        }
    }

    #[test]
    fn topic_settings_come_from_the_lookup_not_the_process_environment() {
        let base = [("TWILIO_ACCOUNT_SID", "AC1"), ("TWILIO_AUTH_TOKEN", "tok")];
        let with = [
            &base[..],
            &[
                ("CALLSTREAM_TOPIC_PREFIX", "run7."),
                ("CALLSTREAM_TOPIC_PARTITIONS", "4"),
            ],
        ]
        .concat();
        let c = RecoveryConfig::from_lookup(lookup(&with)).unwrap();
        assert_eq!(
            c.topics.name("completion-missing"),
            "run7.completion-missing"
        );
        assert_eq!(c.topics.partitions, 4);
        let bad = [&base[..], &[("CALLSTREAM_TOPIC_PARTITIONS", "0")]].concat();
        let error = RecoveryConfig::from_lookup(lookup(&bad)).unwrap_err();
        assert!(
            error.to_string().contains("CALLSTREAM_TOPIC_PARTITIONS"),
            "{error}"
        );
    }

    #[test]
    fn a_placeholder_credential_is_refused_by_name_without_its_value() {
        for (name, value) in [
            ("TWILIO_ACCOUNT_SID", "ACchange-me"),
            ("TWILIO_AUTH_TOKEN", "change-me"),
        ] {
            let mut pairs = vec![("TWILIO_ACCOUNT_SID", "AC1"), ("TWILIO_AUTH_TOKEN", "tok")];
            pairs.retain(|(n, _)| *n != name);
            pairs.push((name, value));
            let error = RecoveryConfig::from_lookup(lookup(&pairs))
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(name), "{error}");
            assert!(!error.contains(value), "{error}");
        }
    }

    #[test]
    fn a_missing_setting_is_required_by_name() {
        let error =
            RecoveryConfig::from_lookup(lookup(&[("TWILIO_ACCOUNT_SID", "AC1")])).unwrap_err();
        assert_eq!(error.to_string(), "TWILIO_AUTH_TOKEN is required");
    }
}

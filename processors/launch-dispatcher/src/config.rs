//! What the dispatcher is configured with: the provider (Twilio's base URL
//! and credentials; the simulator is just another base URL), where status
//! callbacks go, the dispatch policy (timeouts, retry bound, reconciliation)
//! and the provider-wide call rate.
//!
//! Every field can come from the environment ([`DispatcherConfig::from_env`],
//! names on the fields; `config_env.rs`); [`DispatcherConfig::validate`] is the one gate, so a
//! configuration that could dial twice (a reconciliation that looks before a
//! request can have finished) or not at all never starts.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use callstream_platform::{SettingError, Topics};

use crate::backoff::RetryPolicy;
use crate::telemetry::DispatchMetrics;

/// Everything the dispatcher needs.
#[derive(Debug, Clone)]
pub struct DispatcherConfig {
    /// Topic names (`CALLSTREAM_TOPIC_PREFIX`, ...).
    pub topics: Topics,
    /// The Twilio (or Twilio-compatible) account calls are placed with.
    pub twilio: TwilioConfig,
    /// Where the platform sends status callbacks (the gateway).
    pub callbacks: CallbackConfig,
    /// Timeouts, retries and reconciliation.
    pub policy: DispatchPolicy,
    /// Cap on call creates per second across all partitions of this
    /// instance (`CALLSTREAM_DISPATCH_CALLS_PER_SECOND`, default 50). The
    /// calling grid already spaces launches; this is the safety net.
    ///
    /// Per instance, not per provider account: N instances together create
    /// up to N times this. To hold an account-wide limit L, give each
    /// instance L / N (rounded down).
    pub calls_per_second: u32,
    /// Provider requests in flight at once (`CALLSTREAM_DISPATCH_CONCURRENCY`,
    /// default 64); they share one pooled HTTP client.
    pub concurrency: usize,
    /// Shared by the processor and the effect handler built from this
    /// configuration; serve `metrics.encode()` on `/metrics`.
    pub metrics: Arc<DispatchMetrics>,
}

/// The Twilio account and how calls are set up.
#[derive(Clone, PartialEq, Eq)]
pub struct TwilioConfig {
    /// API base URL without a trailing slash (`TWILIO_API_BASE_URL`, default
    /// `https://api.twilio.com`); the simulator's URL in tests and the demo.
    pub base_url: String,
    /// Account sid: the basic-auth user and the path segment (`TWILIO_ACCOUNT_SID`).
    pub account_sid: String,
    /// Auth token: the basic-auth password (`TWILIO_AUTH_TOKEN`). Never logged.
    pub auth_token: String,
    /// Caller id for launches that name none (`TWILIO_FROM_NUMBER`).
    pub default_from: Option<String>,
    /// What the call does once answered: a TwiML URL (`TWILIO_TWIML_URL`) or
    /// inline TwiML (`TWILIO_TWIML`); inline wins when both are set.
    pub instructions: Instructions,
    /// Twilio's `MachineDetection` (`TWILIO_MACHINE_DETECTION`: `Enable` or
    /// `DetectMessageEnd`); none: not asked for.
    pub machine_detection: Option<String>,
}

impl fmt::Debug for TwilioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TwilioConfig")
            .field("base_url", &self.base_url)
            .field("account_sid", &self.account_sid)
            .field("auth_token", &"<redacted>")
            .field("default_from", &self.default_from.as_ref().map(|_| "<set>"))
            .field("instructions", &self.instructions)
            .field("machine_detection", &self.machine_detection)
            .finish()
    }
}

/// The call's instructions once it connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instructions {
    /// Twilio fetches TwiML from this URL (`Url`).
    Url(String),
    /// Inline TwiML (`Twiml`).
    Twiml(String),
}

/// Used when neither `TWILIO_TWIML_URL` nor `TWILIO_TWIML` is set.
pub const DEFAULT_TWIML: &str = "<Response><Pause length=\"1\"/></Response>";

/// Where status callbacks go: the gateway's Twilio endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackConfig {
    /// The gateway's public base URL, no trailing slash
    /// (`CALLSTREAM_DISPATCH_CALLBACK_BASE_URL`, else
    /// `CALLSTREAM_GATEWAY_PUBLIC_URL`). The gateway rebuilds the signed URL
    /// from its own public base URL, so the two must be the same.
    pub base_url: String,
    /// Integration id used for tenants without one of their own
    /// (`CALLSTREAM_DISPATCH_INTEGRATION_ID`, default `twilio`).
    pub default_integration: String,
    /// Per-tenant integration ids (`CALLSTREAM_DISPATCH_INTEGRATIONS`:
    /// `tenant=integration,...`): the gateway refuses a callback whose tenant
    /// is not its integration's.
    pub integrations: BTreeMap<String, String>,
}

impl CallbackConfig {
    /// The integration id for `tenant`.
    pub fn integration_for(&self, tenant: &str) -> &str {
        self.integrations
            .get(tenant)
            .map_or(self.default_integration.as_str(), String::as_str)
    }
}

/// Timeouts, retries and reconciliation: the numbers the state machine runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchPolicy {
    /// Bound on one provider request, connect to last byte
    /// (`CALLSTREAM_DISPATCH_REQUEST_TIMEOUT_MS`, default 10 000). A create
    /// that times out after it was sent is ambiguous and reconciled.
    pub request_timeout: Duration,
    /// Bound on connecting (`CALLSTREAM_DISPATCH_CONNECT_TIMEOUT_MS`,
    /// default 2 000); a failed connect sent nothing and is retried.
    pub connect_timeout: Duration,
    /// Longest a create may wait (for the rate limiter and the concurrency
    /// limit) before it is sent (`CALLSTREAM_DISPATCH_SEND_DEADLINE_MS`,
    /// default 10 000). Past it the request is not sent at all, so a
    /// reconciliation after `send_deadline + request_timeout + settle` never
    /// races a create still waiting in this process.
    pub send_deadline: Duration,
    /// Margin for the provider to finish what it received before we look it
    /// up (`CALLSTREAM_DISPATCH_SETTLE_MS`, default 3 000).
    pub settle: Duration,
    /// Retries of transient create failures (5xx, 429, connect errors).
    pub retry: RetryPolicy,
    /// Lookups before a reconciliation gives up and opens an exception
    /// (`CALLSTREAM_DISPATCH_MAX_LOOKUPS`, default 20); lookups back off
    /// like retries.
    pub max_lookups: u32,
    /// How far before the first request the lookup window starts, for clock
    /// skew with the provider (`CALLSTREAM_DISPATCH_LOOKUP_SKEW_MS`, default 120 000).
    pub lookup_skew: Duration,
    /// How long a finished launch stays in the ledger, so a repeated command
    /// with the same launch id is recognised (`CALLSTREAM_DISPATCH_LEDGER_RETENTION_MS`,
    /// default 7 days).
    pub ledger_retention: Duration,
}

impl Default for DispatchPolicy {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(2),
            send_deadline: Duration::from_secs(10),
            settle: Duration::from_secs(3),
            retry: RetryPolicy::default(),
            max_lookups: 20,
            lookup_skew: Duration::from_secs(120),
            ledger_retention: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

impl DispatchPolicy {
    /// The policy as the state machine keeps it on `clock`: its timers run on business
    /// time, but what they wait for (a create, the provider settling, a retry's pause, clock
    /// skew) takes real time, so on a scaled clock they are stretched to cover as much real
    /// time. The ledger's retention is business time and stays.
    pub fn in_business_time(self, clock: &dyn callstream_runtime::Clock) -> Self {
        let span = |d| clock.business_span(d);
        Self {
            request_timeout: span(self.request_timeout),
            send_deadline: span(self.send_deadline),
            settle: span(self.settle),
            lookup_skew: span(self.lookup_skew),
            retry: crate::backoff::RetryPolicy {
                base_delay: span(self.retry.base_delay),
                max_delay: span(self.retry.max_delay),
                ..self.retry
            },
            ..self
        }
    }

    /// When to reconcile a request handed to the effect runner at `now_ms`
    /// if no result came: after it can no longer be sent, and after a sent
    /// one has had its full timeout and the provider its settle margin.
    pub fn result_deadline_ms(&self, now_ms: i64) -> i64 {
        now_ms + ms(self.send_deadline) + ms(self.request_timeout) + ms(self.settle)
    }

    /// The last moment a request handed over at `now_ms` may still be sent.
    pub fn send_by_ms(&self, now_ms: i64) -> i64 {
        now_ms + ms(self.send_deadline)
    }
}

/// A duration in whole milliseconds, saturating.
pub fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A configuration that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A setting is missing, does not parse, or is refused by
    /// [`DispatcherConfig::validate`].
    #[error(transparent)]
    Setting(#[from] SettingError),
}

impl DispatcherConfig {
    /// A configuration for `base_url` with the given credentials and callback
    /// base, everything else at its default (tests and the demo start here).
    pub fn new(
        topics: Topics,
        base_url: impl Into<String>,
        account_sid: impl Into<String>,
        auth_token: impl Into<String>,
        callback_base_url: impl Into<String>,
    ) -> Self {
        Self {
            topics,
            twilio: TwilioConfig {
                base_url: trim_slash(base_url.into()),
                account_sid: account_sid.into(),
                auth_token: auth_token.into(),
                default_from: None,
                instructions: Instructions::Twiml(DEFAULT_TWIML.into()),
                machine_detection: None,
            },
            callbacks: CallbackConfig {
                base_url: trim_slash(callback_base_url.into()),
                default_integration: "twilio".into(),
                integrations: BTreeMap::new(),
            },
            policy: DispatchPolicy::default(),
            calls_per_second: 50,
            concurrency: 64,
            metrics: Arc::new(DispatchMetrics::new()),
        }
    }

    /// Checks what would make the dispatcher unsafe or unable to dial.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |name: &'static str, value: String, problem| {
            Err(SettingError::Invalid {
                name,
                value,
                problem,
            }
            .into())
        };
        for (name, url) in [
            ("TWILIO_API_BASE_URL", &self.twilio.base_url),
            (
                "CALLSTREAM_DISPATCH_CALLBACK_BASE_URL",
                &self.callbacks.base_url,
            ),
        ] {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return invalid(name, url.clone(), "not an http(s) URL");
            }
        }
        if self.calls_per_second == 0 {
            return invalid(
                "CALLSTREAM_DISPATCH_CALLS_PER_SECOND",
                "0".into(),
                "must be at least 1",
            );
        }
        if self.concurrency == 0 {
            return invalid(
                "CALLSTREAM_DISPATCH_CONCURRENCY",
                "0".into(),
                "must be at least 1",
            );
        }
        let p = &self.policy;
        if p.request_timeout.is_zero() || p.connect_timeout > p.request_timeout {
            return invalid(
                "CALLSTREAM_DISPATCH_REQUEST_TIMEOUT_MS",
                p.request_timeout.as_millis().to_string(),
                "must be positive and at least the connect timeout",
            );
        }
        if p.retry.max_attempts == 0 {
            return invalid(
                "CALLSTREAM_DISPATCH_MAX_ATTEMPTS",
                "0".into(),
                "must be at least 1",
            );
        }
        if p.retry.base_delay.is_zero() || p.retry.base_delay > p.retry.max_delay {
            return invalid(
                "CALLSTREAM_DISPATCH_RETRY_BASE_MS",
                p.retry.base_delay.as_millis().to_string(),
                "must be positive and at most CALLSTREAM_DISPATCH_RETRY_MAX_MS",
            );
        }
        Ok(())
    }
}

fn trim_slash(mut url: String) -> String {
    while url.ends_with('/') {
        url.pop();
    }
    url
}

#[path = "config_env.rs"]
mod env;

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

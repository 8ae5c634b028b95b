//! What the CRM dispatcher is configured with: the CRM (base URL, bearer
//! tokens), its rate limit, the dispatch policy (timeouts, settle time,
//! retry bound) and how many requests may be out at once.
//!
//! Every field can come from the environment ([`CrmDispatcherConfig::from_env`],
//! names on the fields); [`CrmDispatcherConfig::validate`] is the one gate,
//! so a configuration that could write twice (a search that looks before a
//! request can have finished) or exceed the CRM's limit never starts.

use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use callstream_platform::settings::{check_secret, SecretKind};
use callstream_platform::{SettingError, Settings, Topics};

use crate::backoff::RetryPolicy;
use crate::telemetry::CrmMetrics;

/// Everything the dispatcher needs.
#[derive(Clone)]
pub struct CrmDispatcherConfig {
    /// Topic names (`CALLSTREAM_TOPIC_PREFIX`, ...).
    pub topics: Topics,
    /// CRM API base URL without a trailing slash (`CALLSTREAM_CRM_BASE_URL`,
    /// default `https://api.hubapi.com`); the simulator's URL in tests.
    pub base_url: String,
    /// Bearer token of a deployment with one CRM for every tenant
    /// (`CALLSTREAM_CRM_TOKEN`, required unless tenant tokens are given).
    /// Used only while `tenant_tokens` is empty: once tenants have tokens of
    /// their own, a tenant without one is refused, never written with another
    /// tenant's token. Never logged.
    pub default_token: String,
    /// Per-tenant tokens (`CALLSTREAM_CRM_TENANT_TOKENS`: `tenant=token,...`).
    /// The CRM limits each token separately, and so does the dispatcher.
    pub tenant_tokens: BTreeMap<String, String>,
    /// The CRM's rate limit per token and how far below it to stay.
    pub rate_limit: RateLimit,
    /// The CRM's search limit per token, beside `rate_limit`
    /// (`CALLSTREAM_CRM_SEARCH_RATE_MAX` per second, default 5, HubSpot's;
    /// 0: no client-side search limit).
    pub search_limit: RateLimit,
    /// Timeouts, settle time and the retry bound.
    pub policy: DispatchPolicy,
    /// CRM requests in flight at once (`CALLSTREAM_CRM_CONCURRENCY`, default
    /// 32); they share one pooled HTTP client.
    pub concurrency: usize,
    /// The service name in `actor` fields and logs (`CALLSTREAM_CRM_SERVICE_NAME`,
    /// default `crm-dispatcher`).
    pub service_name: String,
    /// Shared by the processors built from this configuration; serve
    /// `metrics.encode()` on `/metrics`.
    pub metrics: Arc<CrmMetrics>,
}

impl fmt::Debug for CrmDispatcherConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrmDispatcherConfig")
            .field("topics", &self.topics)
            .field("base_url", &self.base_url)
            .field("default_token", &"<redacted>")
            .field(
                "tenant_tokens",
                &self.tenant_tokens.keys().collect::<Vec<_>>(),
            )
            .field("rate_limit", &self.rate_limit)
            .field("search_limit", &self.search_limit)
            .field("policy", &self.policy)
            .field("concurrency", &self.concurrency)
            .field("service_name", &self.service_name)
            .finish()
    }
}

/// The CRM's limit per token (HubSpot: 100 requests per 10 s) and the
/// share of it the dispatcher leaves unused, so clock and network jitter
/// never push a window over.
///
/// Per instance: with N dispatcher instances sharing a token, give each
/// `max_requests / N`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Requests per window the CRM allows per token
    /// (`CALLSTREAM_CRM_RATE_LIMIT_MAX`, default 100). 0: no client-side
    /// limit (benchmarks against an unlimited simulator).
    pub max_requests: u32,
    /// The CRM's window (`CALLSTREAM_CRM_RATE_LIMIT_WINDOW_MS`, default 10 000).
    pub window: Duration,
    /// Share of the limit left unused (`CALLSTREAM_CRM_RATE_LIMIT_HEADROOM`,
    /// default 0.05): the dispatcher aims at `max * (1 - headroom)`.
    pub headroom: f64,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            max_requests: 100,
            window: Duration::from_secs(10),
            headroom: 0.05,
        }
    }
}

/// A GCRA quota: one request per `period`, bursts of `burst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaPlan {
    pub period: Duration,
    pub burst: NonZeroU32,
    /// Requests this plan can send in any one window, at most.
    pub max_per_window: u32,
}

impl RateLimit {
    /// HubSpot's search limit: 5 per second per account, aimed at 4.
    pub fn search() -> Self {
        Self {
            max_requests: 5,
            window: Duration::from_secs(1),
            headroom: 0.2,
        }
    }

    /// The client-side quota, or `None` without a limit.
    ///
    /// Guarantee: in any window of `window`, a GCRA limiter with this plan
    /// lets through at most `target + burst - 1` requests (a full burst at
    /// the window's start, then one per period), where `target = floor(max *
    /// (1 - headroom))` and `burst = max(1, (max - target) / 2)`: never more
    /// than `max`; with the defaults 95 + 2 - 1 = 96 of 100.
    pub fn plan(&self) -> Option<QuotaPlan> {
        if self.max_requests == 0 {
            return None;
        }
        let max = self.max_requests;
        let target = ((f64::from(max) * (1.0 - self.headroom)).floor() as u32).clamp(1, max);
        let burst = ((max - target) / 2).max(1);
        // Rounded up: a period a nanosecond short would let one more through.
        let period_ns = self.window.as_nanos().div_ceil(u128::from(target)).max(1);
        let period = Duration::from_nanos(u64::try_from(period_ns).unwrap_or(u64::MAX));
        Some(QuotaPlan {
            period,
            burst: NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN),
            max_per_window: target + burst - 1,
        })
    }
}

/// Timeouts, settle time and retries: the numbers the state machine runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchPolicy {
    /// Bound on one CRM request, connect to last byte
    /// (`CALLSTREAM_CRM_REQUEST_TIMEOUT_MS`, default 10 000). A write that
    /// times out after it was sent has an unknown outcome and is searched for.
    pub request_timeout: Duration,
    /// Bound on connecting (`CALLSTREAM_CRM_CONNECT_TIMEOUT_MS`, default
    /// 2 000); a failed connect sent nothing and is retried.
    pub connect_timeout: Duration,
    /// Longest a request may wait (for the rate limiter and a free slot)
    /// before it is sent (`CALLSTREAM_CRM_SEND_WINDOW_MS`, default 30 000).
    /// Past it, the request is not sent and the dispatcher asks again; so no
    /// request can still be under way once `send_window + request_timeout`
    /// has passed, which is what makes a search after that safe.
    pub send_window: Duration,
    /// Time left between a write whose outcome is unknown and the search for
    /// it (`CALLSTREAM_CRM_SETTLE_MS`, default 5 000): the CRM's search index
    /// lags its writes, and a search too early would miss an object that
    /// exists. The first search goes after it.
    pub settle: Duration,
    /// How long after a create whose outcome is unknown was asked for a
    /// search that finds nothing is still not trusted
    /// (`CALLSTREAM_CRM_SETTLE_WINDOW_MS`, default 300 000): inside it the
    /// command searches again every `search_interval` and is never created
    /// again; after it, nothing found means the create never landed. Must
    /// cover the send window, the request timeout and the CRM's longest
    /// index lag (HubSpot's users report one to three minutes).
    pub settle_window: Duration,
    /// The gap between two searches for one command inside the settle
    /// window (`CALLSTREAM_CRM_SEARCH_INTERVAL_MS`, default 20 000).
    pub search_interval: Duration,
    /// Bounded, doubling, jittered retries of transient failures.
    pub retry: RetryPolicy,
}

impl Default for DispatchPolicy {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(2),
            send_window: Duration::from_secs(30),
            settle: Duration::from_secs(5),
            settle_window: Duration::from_secs(300),
            search_interval: Duration::from_secs(20),
            retry: RetryPolicy::default(),
        }
    }
}

/// Milliseconds of a duration, saturating.
pub fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

impl DispatchPolicy {
    /// The policy as the state machine keeps it on `clock`: its timers run on business
    /// time, but what they wait for (a request, the CRM's index lag, a retry's pause) takes
    /// real time, so on a scaled clock they are stretched to cover as much real time.
    pub fn in_business_time(self, clock: &dyn callstream_runtime::Clock) -> Self {
        let span = |d| clock.business_span(d);
        Self {
            request_timeout: span(self.request_timeout),
            send_window: span(self.send_window),
            settle: span(self.settle),
            settle_window: span(self.settle_window),
            search_interval: span(self.search_interval),
            retry: crate::backoff::RetryPolicy {
                base_delay: span(self.retry.base_delay),
                max_delay: span(self.retry.max_delay),
                ..self.retry
            },
            ..self
        }
    }

    /// Time left, at `now_ms`, in the settle window of a create asked for
    /// at `asked_ms`: zero once it is over.
    pub fn settle_left(&self, asked_ms: i64, now_ms: i64) -> Duration {
        let end = asked_ms.saturating_add(ms(self.settle_window));
        Duration::from_millis(u64::try_from(end.saturating_sub(now_ms)).unwrap_or(0))
    }

    /// The latest time a request asked for at `now_ms` may be sent.
    pub fn send_by_ms(&self, now_ms: i64) -> i64 {
        now_ms.saturating_add(ms(self.send_window))
    }

    /// When to stop waiting for the result of a request asked for at
    /// `now_ms`: it was sent by `send_by`, finished by `+ request_timeout`,
    /// and is searchable by `+ settle`.
    pub fn result_deadline_ms(&self, now_ms: i64) -> i64 {
        self.send_by_ms(now_ms)
            .saturating_add(ms(self.request_timeout))
            .saturating_add(ms(self.settle))
    }
}

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A setting is missing, does not parse, or is refused by
    /// [`CrmDispatcherConfig::validate`].
    #[error(transparent)]
    Setting(#[from] SettingError),
}

impl CrmDispatcherConfig {
    /// A configuration for the CRM at `base_url` with one token, everything
    /// else at its default (tests and the demo start here).
    pub fn new(topics: Topics, base_url: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            topics,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            default_token: token.into(),
            tenant_tokens: BTreeMap::new(),
            rate_limit: RateLimit::default(),
            search_limit: RateLimit::search(),
            policy: DispatchPolicy::default(),
            concurrency: 32,
            service_name: "crm-dispatcher".into(),
            metrics: Arc::new(CrmMetrics::new()),
        }
    }

    /// The token `tenant`'s requests carry: its own, or in a deployment
    /// with no tenant tokens the one token; `None` when tenants have tokens
    /// of their own and this one has none (its requests are refused).
    pub fn token_for(&self, tenant: &str) -> Option<&str> {
        match self.tenant_tokens.get(tenant) {
            Some(token) => Some(token),
            None if self.tenant_tokens.is_empty() && !self.default_token.is_empty() => {
                Some(&self.default_token)
            }
            None => None,
        }
    }

    /// Reads the environment variables named on the fields.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(Settings::env().topics()?, |name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env) over any lookup (tests pass a map),
    /// with the topics given.
    pub fn from_lookup(
        topics: Topics,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        // A blank CRM setting counts as unset: it takes its default.
        let settings = Settings::new(|name: &str| get(name).filter(|v| !v.trim().is_empty()));
        let base = settings
            .get("CALLSTREAM_CRM_BASE_URL")
            .unwrap_or_else(|| "https://api.hubapi.com".into());
        let tenant_tokens =
            settings.pairs("CALLSTREAM_CRM_TENANT_TOKENS", "expected tenant=token")?;
        let default_token = match &tenant_tokens {
            Some(_) => settings.get("CALLSTREAM_CRM_TOKEN").unwrap_or_default(),
            None => settings.required("CALLSTREAM_CRM_TOKEN")?,
        };
        // The CRM issues its tokens: only a placeholder left from example.env is refused.
        check_secret(
            "CALLSTREAM_CRM_TOKEN",
            default_token.as_bytes(),
            SecretKind::Credential,
        )
        .map_err(SettingError::from)?;
        for (tenant, token) in tenant_tokens.iter().flatten() {
            check_secret(
                &format!("CALLSTREAM_CRM_TENANT_TOKENS (tenant {tenant})"),
                token.as_bytes(),
                SecretKind::Credential,
            )
            .map_err(SettingError::from)?;
        }
        let mut config = Self::new(topics, base, default_token);
        config.tenant_tokens = tenant_tokens.unwrap_or_default();
        if let Some(name) = settings.get("CALLSTREAM_CRM_SERVICE_NAME") {
            config.service_name = name;
        }
        let number = |name, default| settings.number(name, default);
        let millis = |name, default| settings.millis(name, default);
        let small = |name, default: u32| {
            number(name, default.into()).map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        let d = DispatchPolicy::default();
        let p = &mut config.policy;
        p.request_timeout = millis("CALLSTREAM_CRM_REQUEST_TIMEOUT_MS", d.request_timeout)?;
        p.connect_timeout = millis("CALLSTREAM_CRM_CONNECT_TIMEOUT_MS", d.connect_timeout)?;
        p.send_window = millis("CALLSTREAM_CRM_SEND_WINDOW_MS", d.send_window)?;
        p.settle = millis("CALLSTREAM_CRM_SETTLE_MS", d.settle)?;
        p.settle_window = millis("CALLSTREAM_CRM_SETTLE_WINDOW_MS", d.settle_window)?;
        p.search_interval = millis("CALLSTREAM_CRM_SEARCH_INTERVAL_MS", d.search_interval)?;
        p.retry.max_failures = small("CALLSTREAM_CRM_MAX_FAILURES", d.retry.max_failures)?;
        p.retry.base_delay = millis("CALLSTREAM_CRM_RETRY_BASE_MS", d.retry.base_delay)?;
        p.retry.max_delay = millis("CALLSTREAM_CRM_RETRY_MAX_MS", d.retry.max_delay)?;
        config.search_limit.max_requests = small(
            "CALLSTREAM_CRM_SEARCH_RATE_MAX",
            RateLimit::search().max_requests,
        )?;
        let r = RateLimit::default();
        config.rate_limit.max_requests = small("CALLSTREAM_CRM_RATE_LIMIT_MAX", r.max_requests)?;
        config.rate_limit.window = millis("CALLSTREAM_CRM_RATE_LIMIT_WINDOW_MS", r.window)?;
        if let Some(value) = settings.get("CALLSTREAM_CRM_RATE_LIMIT_HEADROOM") {
            config.rate_limit.headroom =
                value.trim().parse().map_err(|_| SettingError::Invalid {
                    name: "CALLSTREAM_CRM_RATE_LIMIT_HEADROOM",
                    value,
                    problem: "not a number",
                })?;
        }
        config.concurrency = number("CALLSTREAM_CRM_CONCURRENCY", 32)?
            .try_into()
            .unwrap_or(usize::MAX);
        config.validate()?;
        Ok(config)
    }

    /// Checks what would make the dispatcher unsafe or unable to write.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |name: &'static str, value: String, problem| {
            Err(SettingError::Invalid {
                name,
                value,
                problem,
            }
            .into())
        };
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return invalid(
                "CALLSTREAM_CRM_BASE_URL",
                self.base_url.clone(),
                "not an http(s) URL",
            );
        }
        if self.default_token.trim().is_empty() && self.tenant_tokens.is_empty() {
            return Err(SettingError::Missing("CALLSTREAM_CRM_TOKEN").into());
        }
        let p = &self.policy;
        let positive = [
            ("CALLSTREAM_CRM_REQUEST_TIMEOUT_MS", p.request_timeout),
            ("CALLSTREAM_CRM_CONNECT_TIMEOUT_MS", p.connect_timeout),
            ("CALLSTREAM_CRM_SEND_WINDOW_MS", p.send_window),
            ("CALLSTREAM_CRM_RETRY_BASE_MS", p.retry.base_delay),
            ("CALLSTREAM_CRM_SEARCH_INTERVAL_MS", p.search_interval),
            (
                "CALLSTREAM_CRM_RATE_LIMIT_WINDOW_MS",
                self.rate_limit.window,
            ),
        ];
        for (name, value) in positive {
            if value.is_zero() {
                return invalid(name, "0".into(), "must be above 0");
            }
        }
        if p.connect_timeout > p.request_timeout {
            return invalid(
                "CALLSTREAM_CRM_CONNECT_TIMEOUT_MS",
                p.connect_timeout.as_millis().to_string(),
                "must not exceed the request timeout",
            );
        }
        if p.retry.max_delay < p.retry.base_delay {
            return invalid(
                "CALLSTREAM_CRM_RETRY_MAX_MS",
                p.retry.max_delay.as_millis().to_string(),
                "must not be below the base delay",
            );
        }
        let must_cover = p.send_window + p.request_timeout + p.settle;
        if p.settle_window < must_cover {
            return invalid(
                "CALLSTREAM_CRM_SETTLE_WINDOW_MS",
                p.settle_window.as_millis().to_string(),
                "must cover the send window, the request timeout and the settle time",
            );
        }
        if p.retry.max_failures == 0 {
            return invalid(
                "CALLSTREAM_CRM_MAX_FAILURES",
                "0".into(),
                "must be at least 1",
            );
        }
        if !(0.0..1.0).contains(&self.rate_limit.headroom) {
            return invalid(
                "CALLSTREAM_CRM_RATE_LIMIT_HEADROOM",
                self.rate_limit.headroom.to_string(),
                "must be in [0, 1)",
            );
        }
        if self.concurrency == 0 {
            return invalid(
                "CALLSTREAM_CRM_CONCURRENCY",
                "0".into(),
                "must be at least 1",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

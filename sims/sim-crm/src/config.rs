//! What the CRM simulator is told: where it listens, which bearer tokens it
//! accepts, its seed, and its [`CrmBehaviour`] (rate limit and faults),
//! which tests may change at runtime (`POST /_sim/config`).
//!
//! Every field works as a flag, an environment variable (`SIM_CRM_*`) and
//! a serde field, with one default for all three. Durations are real
//! milliseconds: they are about clients' timeouts and the CRM's limit.

use std::net::SocketAddr;

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where the simulator listens unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8092";

/// Everything the simulator is configured with.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default)]
pub struct SimCrmConfig {
    /// Address the HTTP server listens on.
    #[arg(long, env = "SIM_CRM_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Bearer tokens accepted (comma-separated). Empty: any non-empty token
    /// is accepted, each with its own rate-limit window.
    #[arg(
        long = "token",
        env = "SIM_CRM_TOKENS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub tokens: Vec<String>,
    /// Seed of every fault decision: the n-th admitted request gets the
    /// same faults every run.
    #[arg(long, env = "SIM_CRM_SEED", default_value_t = 1)]
    pub seed: u64,
    /// A PATCH of a contact id the CRM does not hold creates it (true), or
    /// answers 404 as HubSpot does (false).
    #[arg(long, env = "SIM_CRM_AUTO_CREATE_CONTACTS", default_value_t = true, action = clap::ArgAction::Set)]
    pub auto_create_contacts: bool,
    /// An outage starting this long after start-up (0 with
    /// `outage_for_ms` 0: none). `POST /_sim/outage` sets one at runtime.
    #[arg(long, env = "SIM_CRM_OUTAGE_AT_MS", default_value_t = 0)]
    pub outage_at_ms: u64,
    /// How long the start-up outage lasts (0: no outage).
    #[arg(long, env = "SIM_CRM_OUTAGE_FOR_MS", default_value_t = 0)]
    pub outage_for_ms: u64,
    /// Rate limit and faults (changeable at runtime).
    #[command(flatten)]
    pub behaviour: CrmBehaviour,
}

impl Default for SimCrmConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8092)),
            tokens: Vec::new(),
            seed: 1,
            auto_create_contacts: true,
            outage_at_ms: 0,
            outage_for_ms: 0,
            behaviour: CrmBehaviour::default(),
        }
    }
}

/// The CRM's limit and the faults it injects. Shares are probabilities.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrmBehaviour {
    /// Requests allowed per token in any rolling window (HubSpot: 100 per
    /// 10 s). 0 lifts the limit (benchmarks).
    #[arg(long, env = "SIM_CRM_RATE_LIMIT_MAX", default_value_t = DEFAULT_BEHAVIOUR.rate_limit_max)]
    pub rate_limit_max: u32,
    /// The rolling window's length.
    #[arg(long, env = "SIM_CRM_RATE_LIMIT_WINDOW_MS", default_value_t = DEFAULT_BEHAVIOUR.rate_limit_window_ms)]
    pub rate_limit_window_ms: u64,
    /// Share of admitted requests answered 500/502/503 without applying.
    #[arg(long, env = "SIM_CRM_ERROR_SHARE", default_value_t = DEFAULT_BEHAVIOUR.error_share)]
    pub error_share: f64,
    /// Share of admitted requests answered only after `slow_ms`.
    #[arg(long, env = "SIM_CRM_SLOW_SHARE", default_value_t = DEFAULT_BEHAVIOUR.slow_share)]
    pub slow_share: f64,
    /// How long a slow request waits before it is handled.
    #[arg(long, env = "SIM_CRM_SLOW_MS", default_value_t = DEFAULT_BEHAVIOUR.slow_ms)]
    pub slow_ms: u64,
    /// Share of writes applied and then answered only after `timeout_ms`,
    /// past the client's timeout: the client cannot know it was applied.
    #[arg(long, env = "SIM_CRM_TIMEOUT_SHARE", default_value_t = DEFAULT_BEHAVIOUR.timeout_share)]
    pub timeout_share: f64,
    /// How long the answer of an applied-then-late write is held back.
    #[arg(long, env = "SIM_CRM_TIMEOUT_MS", default_value_t = DEFAULT_BEHAVIOUR.timeout_ms)]
    pub timeout_ms: u64,
    /// The median time a new object stays invisible to search (HubSpot's
    /// search index lags its writes: "a few moments" in its documentation,
    /// one to three minutes in its users' reports). 0: visible at once.
    #[arg(long, env = "SIM_CRM_SEARCH_LAG_MS", default_value_t = DEFAULT_BEHAVIOUR.search_lag_ms)]
    pub search_lag_ms: u64,
    /// The lag's spread: each object's lag is log-normal around the median,
    /// `median * exp(sigma * z)`; 0 makes every lag the median.
    #[arg(long, env = "SIM_CRM_SEARCH_LAG_SIGMA", default_value_t = DEFAULT_BEHAVIOUR.search_lag_sigma)]
    pub search_lag_sigma: f64,
    /// No lag is longer than this (the tail's end).
    #[arg(long, env = "SIM_CRM_SEARCH_LAG_MAX_MS", default_value_t = DEFAULT_BEHAVIOUR.search_lag_max_ms)]
    pub search_lag_max_ms: u64,
    /// Searches allowed per token in any rolling second (HubSpot: 5 per
    /// account, beside the ten-second limit, answered `429` with policy
    /// `SECONDLY` and no rate-limit headers). 0 lifts it.
    #[arg(long, env = "SIM_CRM_SEARCH_RATE_MAX", default_value_t = DEFAULT_BEHAVIOUR.search_rate_max)]
    pub search_rate_max: u32,
}

/// The defaults of [`CrmBehaviour`]: HubSpot's limits and search lag (a
/// median of 3 s, p99 about 50 s, the longest 2 minutes), no faults.
pub const DEFAULT_BEHAVIOUR: CrmBehaviour = CrmBehaviour {
    rate_limit_max: 100,
    rate_limit_window_ms: 10_000,
    error_share: 0.0,
    slow_share: 0.0,
    slow_ms: 2_000,
    timeout_share: 0.0,
    timeout_ms: 30_000,
    search_lag_ms: 3_000,
    search_lag_sigma: 1.2,
    search_lag_max_ms: 120_000,
    search_rate_max: 5,
};

impl Default for CrmBehaviour {
    fn default() -> Self {
        DEFAULT_BEHAVIOUR
    }
}

/// A behaviour that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("`{0}` must be a probability in [0, 1]")]
    Share(&'static str),
    #[error("`rate_limit_window_ms` must be > 0")]
    Window,
    #[error("`search_lag_sigma` must be a finite number >= 0")]
    Sigma,
}

impl CrmBehaviour {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let shares = [
            ("error_share", self.error_share),
            ("slow_share", self.slow_share),
            ("timeout_share", self.timeout_share),
        ];
        for (name, v) in shares {
            if !(0.0..=1.0).contains(&v) {
                return Err(ConfigError::Share(name));
            }
        }
        if self.rate_limit_window_ms == 0 {
            return Err(ConfigError::Window);
        }
        if !(self.search_lag_sigma.is_finite() && self.search_lag_sigma >= 0.0) {
            return Err(ConfigError::Sigma);
        }
        Ok(())
    }

    /// How long an object stays out of search, for a standard normal draw
    /// `z`: log-normal around the median, capped at the maximum.
    pub fn search_lag(&self, z: f64) -> Duration {
        let median = self.search_lag_ms as f64;
        let ms = (median * (self.search_lag_sigma * z).exp()).min(self.search_lag_max_ms as f64);
        Duration::from_millis(if ms.is_finite() {
            ms.max(0.0) as u64
        } else {
            0
        })
    }

    /// Search at once: no lag (tests about something else).
    pub fn with_instant_search(self) -> Self {
        Self {
            search_lag_ms: 0,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        config: SimCrmConfig,
    }

    #[test]
    fn flags_default_to_the_serde_defaults() {
        let parsed = Cli::try_parse_from(["sim"]).unwrap().config;
        assert_eq!(parsed, SimCrmConfig::default());
        let empty: SimCrmConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, SimCrmConfig::default());
        let set = Cli::try_parse_from([
            "sim",
            "--token",
            "a,b",
            "--auto-create-contacts",
            "false",
            "--rate-limit-max",
            "0",
        ])
        .unwrap()
        .config;
        assert_eq!(set.tokens, vec!["a".to_string(), "b".to_string()]);
        assert!(!set.auto_create_contacts);
        assert_eq!(set.behaviour.rate_limit_max, 0);
    }

    #[test]
    fn the_search_lag_is_long_tailed_and_capped() {
        let b = CrmBehaviour::default();
        assert_eq!(b.search_lag(0.0), Duration::from_secs(3), "the median");
        let p99 = b.search_lag(2.326);
        assert!(
            p99 > Duration::from_secs(40) && p99 < Duration::from_secs(60),
            "{p99:?}"
        );
        assert_eq!(b.search_lag(5.0), Duration::from_secs(120), "capped");
        assert!(b.search_lag(-5.0) < Duration::from_millis(10));
        assert_eq!(b.with_instant_search().search_lag(3.0), Duration::ZERO);
    }

    #[test]
    fn validation() {
        type Edit = fn(&mut CrmBehaviour);
        let cases: &[(Edit, Result<(), ConfigError>)] = &[
            (|_| {}, Ok(())),
            (
                |b| b.error_share = 1.1,
                Err(ConfigError::Share("error_share")),
            ),
            (
                |b| b.timeout_share = f64::NAN,
                Err(ConfigError::Share("timeout_share")),
            ),
            (|b| b.rate_limit_window_ms = 0, Err(ConfigError::Window)),
            (|b| b.search_lag_sigma = -1.0, Err(ConfigError::Sigma)),
        ];
        for (edit, want) in cases {
            let mut b = CrmBehaviour::default();
            edit(&mut b);
            assert_eq!(b.validate(), *want);
        }
    }
}

//! Bounded retries of create requests. The delays follow the shared rule in
//! [`callstream_domain::backoff`] (doubling, equal jitter, pure: a replay
//! after a crash picks the same delay); what is the launch dispatcher's own
//! is the bound on attempts.
//!
//! Guarantee: the n-th delay lies in `[d/2, d]` with `d = min(max_delay,
//! base_delay * 2^(n-1))`.

use std::time::Duration;

pub use callstream_domain::backoff::seed_of;
use callstream_domain::backoff::Backoff;

/// How transient failures are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Create requests per launch, the first included
    /// (`CALLSTREAM_DISPATCH_MAX_ATTEMPTS`, default 5).
    pub max_attempts: u32,
    /// Delay before the first retry, before jitter
    /// (`CALLSTREAM_DISPATCH_RETRY_BASE_MS`, default 500).
    pub base_delay: Duration,
    /// Cap on any delay (`CALLSTREAM_DISPATCH_RETRY_MAX_MS`, default 30 000).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The delay rule these settings give.
    pub fn backoff(&self) -> Backoff {
        Backoff {
            base_delay: self.base_delay,
            max_delay: self.max_delay,
        }
    }

    /// The delay after failure number `failures` (1 = the first), jittered
    /// by `seed`.
    pub fn delay(&self, failures: u32, seed: u64) -> Duration {
        self.backoff().delay(failures, seed)
    }

    /// The un-jittered delay after failure number `failures`: doubling from
    /// `base_delay`, capped at `max_delay`.
    pub fn ceiling(&self, failures: u32) -> Duration {
        self.backoff().ceiling(failures)
    }

    /// Whether another attempt is allowed after `attempts` were made.
    pub fn may_retry(&self, attempts: u32) -> bool {
        attempts < self.max_attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_counts_the_first_attempt() {
        let policy = RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        };
        let allowed: Vec<bool> = (1..=4).map(|a| policy.may_retry(a)).collect();
        assert_eq!(allowed, [true, true, false, false]);
    }
}

//! Bounded retries of CRM requests. The delays follow the shared rule in
//! [`callstream_domain::backoff`] (doubling, equal jitter, pure: the same
//! failure of the same operation always waits as long); what is the CRM
//! dispatcher's own is the bound on failures and the `Retry-After` floor.
//!
//! Guarantee: the delay after failure `n` lies in `[d/2, d]` with `d =
//! min(max_delay, base_delay * 2^(n-1))`, and a `Retry-After` from the CRM
//! is a floor under it.

use std::time::Duration;

pub use callstream_domain::backoff::seed_of;
use callstream_domain::backoff::Backoff;

/// How transient failures are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Failed requests a command may have before it fails for good
    /// (`CALLSTREAM_CRM_MAX_FAILURES`, default 12: with the default delays
    /// that rides out an outage of about two minutes).
    pub max_failures: u32,
    /// Delay after the first failure, before jitter
    /// (`CALLSTREAM_CRM_RETRY_BASE_MS`, default 500).
    pub base_delay: Duration,
    /// Cap on any delay (`CALLSTREAM_CRM_RETRY_MAX_MS`, default 30 000).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_failures: 12,
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

    /// The un-jittered delay after failure number `failures` (1 = the
    /// first): doubling from `base_delay`, capped at `max_delay`.
    pub fn ceiling(&self, failures: u32) -> Duration {
        self.backoff().ceiling(failures)
    }

    /// The delay after failure number `failures`, jittered by `seed`, and
    /// never shorter than `retry_after` (the CRM's own word).
    pub fn delay(&self, failures: u32, seed: u64, retry_after: Option<Duration>) -> Duration {
        let delay = self.backoff().delay(failures, seed);
        delay.max(retry_after.unwrap_or_default())
    }

    /// Whether a command that has failed `failures` times may try again.
    pub fn may_retry(&self, failures: u32) -> bool {
        failures < self.max_failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_counts_failures() {
        let policy = RetryPolicy {
            max_failures: 3,
            ..RetryPolicy::default()
        };
        let allowed: Vec<bool> = (0..=4).map(|f| policy.may_retry(f)).collect();
        assert_eq!(allowed, [true, true, true, false, false]);
    }

    #[test]
    fn retry_after_is_a_floor_not_a_replacement() {
        let policy = RetryPolicy::default();
        let cases = [
            (
                None,
                1,
                Duration::from_millis(250),
                Duration::from_millis(500),
            ),
            (
                Some(Duration::from_secs(7)),
                1,
                Duration::from_secs(7),
                Duration::from_secs(7),
            ),
            (
                Some(Duration::from_millis(10)),
                3,
                Duration::from_secs(1),
                Duration::from_secs(2),
            ),
        ];
        for (retry_after, failures, low, high) in cases {
            let delay = policy.delay(failures, 42, retry_after);
            assert!(
                delay >= low && delay <= high,
                "{retry_after:?} {failures}: {delay:?}"
            );
        }
    }
}

//! Bounded retries with doubling, jittered delays. Pure: the jitter comes
//! from a hash of the operation id and the failure count, not from a random
//! source, so the state machine is deterministic on the test driver while
//! commands that fail together still spread out.
//!
//! Guarantee: the delay after failure `n` lies in `[d/2, d]` with `d =
//! min(max_delay, base_delay * 2^(n-1))` ("equal jitter": spread, never 0),
//! and a `Retry-After` from the CRM is a floor under it.

use std::time::Duration;

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
    /// The un-jittered delay after failure number `failures` (1 = the
    /// first): doubling from `base_delay`, capped at `max_delay`.
    pub fn ceiling(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.base_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_delay)
    }

    /// The delay after failure number `failures`, jittered by `seed`, and
    /// never shorter than `retry_after` (the CRM's own word).
    pub fn delay(&self, failures: u32, seed: u64, retry_after: Option<Duration>) -> Duration {
        let ceiling = self.ceiling(failures);
        let half = ceiling / 2;
        let spread = u64::try_from(ceiling.saturating_sub(half).as_millis()).unwrap_or(u64::MAX);
        let jitter = match spread {
            0 => 0,
            spread => mix(seed ^ u64::from(failures)) % (spread + 1),
        };
        let jittered = half + Duration::from_millis(jitter);
        jittered.max(retry_after.unwrap_or_default())
    }

    /// Whether a command that has failed `failures` times may try again.
    pub fn may_retry(&self, failures: u32) -> bool {
        failures < self.max_failures
    }
}

/// A jitter seed from an operation id.
pub fn seed_of(id: &uuid::Uuid) -> u64 {
    let (high, low) = id.as_u64_pair();
    mix(high ^ low.rotate_left(17))
}

/// SplitMix64's finaliser: a cheap, well-spread 64-bit hash.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ceilings_double_from_the_base_and_stop_at_the_cap() {
        let policy = RetryPolicy {
            max_failures: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        let ceilings: Vec<u128> = (1..=6).map(|n| policy.ceiling(n).as_millis()).collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.ceiling(u32::MAX), Duration::from_millis(1000));
    }

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

    proptest! {
        #[test]
        fn every_delay_is_between_half_and_all_of_its_ceiling(
            base in 1u64..5_000, extra in 0u64..100_000, failures in 1u32..64, seed: u64,
        ) {
            let policy = RetryPolicy {
                max_failures: 5,
                base_delay: Duration::from_millis(base),
                max_delay: Duration::from_millis(base + extra),
            };
            let ceiling = policy.ceiling(failures);
            let delay = policy.delay(failures, seed, None);
            prop_assert!(delay <= ceiling && delay >= ceiling / 2, "{delay:?} vs {ceiling:?}");
            prop_assert_eq!(delay, policy.delay(failures, seed, None));
        }

        #[test]
        fn jitter_spreads_commands_that_fail_together(failures in 1u32..6) {
            let policy = RetryPolicy::default();
            let delays: std::collections::BTreeSet<Duration> = (0..64u128)
                .map(|i| policy.delay(failures, seed_of(&uuid::Uuid::from_u128(i)), None))
                .collect();
            prop_assert!(delays.len() > 16, "only {} distinct delays", delays.len());
        }
    }
}

//! Bounded retries with doubling, jittered delays. Pure: the jitter comes
//! from a hash of the launch id and the attempt, not from a random source,
//! so a replay after a crash picks the same delay and the state machine
//! stays deterministic on the test driver.
//!
//! Guarantee: the n-th delay lies in `[d/2, d]` with `d = min(max_delay,
//! base_delay * 2^(n-1))` ("equal jitter": spread out, never zero).

use std::time::Duration;

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
    /// The delay after failure number `failures` (1 = the first), jittered
    /// by `seed`.
    pub fn delay(&self, failures: u32, seed: u64) -> Duration {
        let ceiling = self.ceiling(failures);
        let half = ceiling / 2;
        let spread = ceiling.as_millis().saturating_sub(half.as_millis()) as u64;
        let jitter = if spread == 0 {
            0
        } else {
            mix(seed ^ u64::from(failures)) % (spread + 1)
        };
        half + Duration::from_millis(jitter)
    }

    /// The un-jittered delay after failure number `failures`: doubling from
    /// `base_delay`, capped at `max_delay`.
    pub fn ceiling(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(40);
        let delay = self.base_delay.saturating_mul(1u32 << doublings.min(31));
        delay.min(self.max_delay)
    }

    /// Whether another attempt is allowed after `attempts` were made.
    pub fn may_retry(&self, attempts: u32) -> bool {
        attempts < self.max_attempts
    }
}

/// A seed for `delay` from a launch id.
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ceilings_double_from_the_base_and_stop_at_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        let ceilings: Vec<u128> = (1..=6).map(|n| policy.ceiling(n).as_millis()).collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.ceiling(u32::MAX), Duration::from_millis(1000));
    }

    #[test]
    fn the_bound_counts_the_first_attempt() {
        let policy = RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        };
        let allowed: Vec<bool> = (1..=4).map(|a| policy.may_retry(a)).collect();
        assert_eq!(allowed, [true, true, false, false]);
    }

    proptest! {
        #[test]
        fn every_delay_is_between_half_and_all_of_its_ceiling(
            base in 1u64..5_000, extra in 0u64..100_000, failures in 1u32..64, seed: u64,
        ) {
            let policy = RetryPolicy {
                max_attempts: 5,
                base_delay: Duration::from_millis(base),
                max_delay: Duration::from_millis(base + extra),
            };
            let ceiling = policy.ceiling(failures);
            let delay = policy.delay(failures, seed);
            prop_assert!(delay <= ceiling && delay >= ceiling / 2, "{delay:?} vs {ceiling:?}");
            prop_assert!(delay <= policy.max_delay);
            // Deterministic: the same inputs give the same delay.
            prop_assert_eq!(delay, policy.delay(failures, seed));
        }

        #[test]
        fn jitter_spreads_launches_that_fail_together(failures in 1u32..6) {
            let policy = RetryPolicy::default();
            let delays: std::collections::BTreeSet<Duration> = (0..64u128)
                .map(|i| policy.delay(failures, seed_of(&uuid::Uuid::from_u128(i))))
                .collect();
            prop_assert!(delays.len() > 16, "only {} distinct delays", delays.len());
        }
    }
}

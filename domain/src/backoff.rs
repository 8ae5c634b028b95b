//! Doubling, jittered retry delays: the one backoff rule of the dispatchers.
//!
//! Guarantee: the delay after failure `n` (1 = the first) lies in `[d/2, d]`
//! with `d = min(max_delay, base_delay * 2^(n-1))` ("equal jitter": failures
//! that happen together spread out, yet no retry goes out at once).
//!
//! Pure: the jitter is a hash of a seed (from the operation's id, see
//! [`seed_of`]) and `n`, not a random draw. The same inputs always give the
//! same delay, so a step replayed after a crash waits as long as its first
//! run did, and a state machine stays deterministic under test.

use std::time::Duration;

/// Delays that double from `base_delay` up to `max_delay`, jittered down
/// by at most half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Delay after the first failure, before jitter.
    pub base_delay: Duration,
    /// Cap on any delay.
    pub max_delay: Duration,
}

impl Backoff {
    /// The un-jittered delay after failure number `failures` (1 = the
    /// first): doubling from `base_delay`, capped at `max_delay`.
    pub fn ceiling(&self, failures: u32) -> Duration {
        // 2^31 doublings saturate any delay; the bound keeps the shift defined.
        let doublings = failures.saturating_sub(1).min(31);
        self.base_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_delay)
    }

    /// The delay after failure number `failures`, jittered by `seed`: half
    /// the ceiling plus whole milliseconds of jitter.
    pub fn delay(&self, failures: u32, seed: u64) -> Duration {
        let ceiling = self.ceiling(failures);
        let half = ceiling / 2;
        // Subtracting before rounding to milliseconds keeps the longest
        // delay, `half + spread`, within a ceiling of odd milliseconds.
        let spread = u64::try_from(ceiling.saturating_sub(half).as_millis()).unwrap_or(u64::MAX);
        let hash = mix(seed ^ u64::from(failures));
        let jitter = match spread.checked_add(1) {
            Some(choices) => hash % choices,
            // All 2^64 jitters are choices: the hash is one already.
            None => hash,
        };
        half + Duration::from_millis(jitter)
    }
}

/// A jitter seed from an operation's id, so that operations failing
/// together get different delays.
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

    fn millis(base: u64, max: u64) -> Backoff {
        Backoff {
            base_delay: Duration::from_millis(base),
            max_delay: Duration::from_millis(max),
        }
    }

    #[test]
    fn ceilings_double_from_the_base_and_stop_at_the_cap() {
        let backoff = millis(100, 1000);
        let ceilings: Vec<u128> = (1..=6).map(|n| backoff.ceiling(n).as_millis()).collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(backoff.ceiling(0), Duration::from_millis(100));
        assert_eq!(backoff.ceiling(u32::MAX), Duration::from_millis(1000));
    }

    /// The dispatchers' state machines replay these delays: a change here
    /// changes when retries go out. The values are the ones the CRM
    /// dispatcher's own copy of this rule gave before it moved here (the
    /// launch dispatcher's copy agreed on even-millisecond ceilings only).
    #[test]
    fn delays_are_pinned() {
        let seed = seed_of(&uuid::Uuid::from_u128(
            0x0123_4567_89ab_cdef_0123_4567_89ab_cdef,
        ));
        let even = millis(500, 30_000);
        let delays: Vec<u128> = (1..=8).map(|n| even.delay(n, seed).as_millis()).collect();
        assert_eq!(delays, [462, 556, 1821, 3669, 4455, 10968, 21689, 26566]);
        // Odd ceilings (333 ms, then the 10 001 ms cap) have a half
        // millisecond in their half.
        let odd = millis(333, 10_001);
        let delays: Vec<u128> = (1..=8).map(|n| odd.delay(n, seed).as_micros()).collect();
        assert_eq!(
            delays,
            [222_500, 556_000, 1_306_000, 2_147_000, 5_157_000, 7_794_500, 6_705_500, 9_167_500]
        );
    }

    #[test]
    fn huge_delays_do_not_overflow() {
        let backoff = Backoff {
            base_delay: Duration::MAX,
            max_delay: Duration::MAX,
        };
        for failures in [1, 2, u32::MAX] {
            let delay = backoff.delay(failures, 7);
            assert!(delay >= Duration::MAX / 2, "{delay:?}");
        }
    }

    proptest! {
        #[test]
        fn every_delay_is_between_half_and_all_of_its_ceiling(
            base in 1u64..5_000, extra in 0u64..100_000, failures in 1u32..64, seed: u64,
        ) {
            let backoff = millis(base, base + extra);
            let ceiling = backoff.ceiling(failures);
            let delay = backoff.delay(failures, seed);
            prop_assert!(delay <= ceiling && delay >= ceiling / 2, "{delay:?} vs {ceiling:?}");
            prop_assert!(delay <= backoff.max_delay);
            // Deterministic: the same inputs give the same delay.
            prop_assert_eq!(delay, backoff.delay(failures, seed));
        }

        #[test]
        fn odd_and_sub_millisecond_ceilings_stay_in_range(
            base_ns in 1u64..10_000_000_000, extra_ns in 0u64..100_000_000_000,
            failures in 1u32..40, seed: u64,
        ) {
            let backoff = Backoff {
                base_delay: Duration::from_nanos(base_ns),
                max_delay: Duration::from_nanos(base_ns + extra_ns),
            };
            let ceiling = backoff.ceiling(failures);
            let delay = backoff.delay(failures, seed);
            prop_assert!(delay <= ceiling && delay >= ceiling / 2, "{delay:?} vs {ceiling:?}");
        }

        #[test]
        fn jitter_spreads_operations_that_fail_together(failures in 1u32..6) {
            let backoff = millis(500, 30_000);
            let delays: std::collections::BTreeSet<Duration> = (0..64u128)
                .map(|i| backoff.delay(failures, seed_of(&uuid::Uuid::from_u128(i))))
                .collect();
            prop_assert!(delays.len() > 16, "only {} distinct delays", delays.len());
        }
    }
}

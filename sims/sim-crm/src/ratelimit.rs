//! HubSpot's rolling rate limit: at most `max` requests per token in any
//! window of `window`, refused ones not counted (they were not served).
//! Also keeps, for tests, the most requests that ever *arrived* in one
//! window (refused ones included), which is what "the client never
//! exceeded the limit" is checked against.
//!
//! Pure: the caller passes the instant, so tests drive it without a clock.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// One token's window.
#[derive(Debug, Default)]
pub struct Rolling {
    admitted: VecDeque<Instant>,
    arrived: VecDeque<Instant>,
    /// Most requests arrived in any one window.
    pub max_arrived_in_window: u32,
    /// Most requests admitted in any one window (never above the limit).
    pub max_admitted_in_window: u32,
    pub arrived_total: u64,
    pub refused_total: u64,
}

/// Refused: wait this long (until the oldest admitted request leaves the
/// window).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub retry_after: Duration,
}

fn expire(queue: &mut VecDeque<Instant>, now: Instant, window: Duration) {
    while queue
        .front()
        .is_some_and(|t| now.saturating_duration_since(*t) >= window)
    {
        queue.pop_front();
    }
}

fn len_u32(q: &VecDeque<Instant>) -> u32 {
    u32::try_from(q.len()).unwrap_or(u32::MAX)
}

impl Rolling {
    /// Admits a request arriving at `now`, or says how long to wait; on
    /// admission, the requests left in the window. `max` 0 admits all.
    pub fn admit(&mut self, now: Instant, window: Duration, max: u32) -> Result<u32, Refused> {
        expire(&mut self.arrived, now, window);
        expire(&mut self.admitted, now, window);
        self.arrived.push_back(now);
        self.arrived_total += 1;
        self.max_arrived_in_window = self.max_arrived_in_window.max(len_u32(&self.arrived));
        if max > 0 && len_u32(&self.admitted) >= max {
            self.refused_total += 1;
            let oldest = self.admitted.front().copied().unwrap_or(now);
            let free_at = oldest + window;
            return Err(Refused {
                retry_after: free_at.saturating_duration_since(now),
            });
        }
        self.admitted.push_back(now);
        let in_window = len_u32(&self.admitted);
        self.max_admitted_in_window = self.max_admitted_in_window.max(in_window);
        Ok(max.saturating_sub(in_window))
    }
}

/// `Retry-After` in whole seconds, rounded up, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const W: Duration = Duration::from_secs(10);

    #[test]
    fn the_101st_request_waits_for_the_first_to_leave() {
        let t0 = Instant::now();
        let mut r = Rolling::default();
        for i in 0..100u64 {
            let left = r.admit(t0 + Duration::from_millis(i * 10), W, 100).unwrap();
            assert_eq!(u64::from(left), 99 - i);
        }
        let refused = r.admit(t0 + Duration::from_secs(2), W, 100).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(8));
        assert_eq!(retry_after_secs(refused.retry_after), 8);
        // The first left the window at 10 s: one slot.
        assert!(r.admit(t0 + Duration::from_secs(10), W, 100).is_ok());
        assert!(r.admit(t0 + Duration::from_secs(10), W, 100).is_err());
        assert_eq!(r.max_admitted_in_window, 100);
        assert_eq!(
            r.max_arrived_in_window, 102,
            "99 + the refused one + two at 10 s"
        );
        assert_eq!(r.refused_total, 2);
    }

    #[test]
    fn no_limit_admits_all() {
        let t0 = Instant::now();
        let mut r = Rolling::default();
        for _ in 0..1000 {
            assert!(r.admit(t0, W, 0).is_ok());
        }
        assert_eq!(r.max_arrived_in_window, 1000);
    }

    #[test]
    fn retry_after_rounds_up() {
        let cases = [(0, 1), (1, 1), (999, 1), (1000, 1), (1001, 2), (8000, 8)];
        for (ms, want) in cases {
            assert_eq!(retry_after_secs(Duration::from_millis(ms)), want, "{ms}");
        }
    }

    proptest! {
        /// However requests arrive, no window ever admits more than the limit.
        #[test]
        fn admitted_never_exceed_the_limit(gaps in proptest::collection::vec(0u64..300, 1..600), max in 1u32..50) {
            let t0 = Instant::now();
            let window = Duration::from_millis(1000);
            let mut r = Rolling::default();
            let mut now = t0;
            let mut admitted = Vec::new();
            for gap in gaps {
                now += Duration::from_millis(gap);
                if r.admit(now, window, max).is_ok() {
                    admitted.push(now);
                }
            }
            for (i, start) in admitted.iter().enumerate() {
                let in_window = admitted[i..].iter().take_while(|t| t.duration_since(*start) < window).count();
                prop_assert!(in_window <= max as usize);
            }
            prop_assert!(r.max_admitted_in_window <= max);
        }
    }
}

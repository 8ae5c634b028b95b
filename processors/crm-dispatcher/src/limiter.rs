//! The client-side rate limit: one GCRA limiter (governor) per bearer
//! token, each below the CRM's own limit for that token, so `429`s are rare
//! rather than the flow control. A `429` with `Retry-After` also holds back
//! every request of that token until the time it names.
//!
//! Guarantees: requests of one token pass at most `QuotaPlan::max_per_window`
//! per window (see `RateLimit::plan`); they pass in the order they started
//! waiting (a fair queue in front of the GCRA, whose own waiters race), so
//! a contact's request waits its turn behind the requests already waiting,
//! never for a backlog that keeps coming; a wait never outlasts the
//! deadline given, so a request that could not go in time is not sent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::config::RateLimit;

/// One token's limiter.
#[derive(Debug)]
struct TokenLimit {
    gcra: Option<DefaultDirectRateLimiter>,
    /// The queue of waiters: tokio's mutex hands itself on in FIFO order.
    turn: tokio::sync::Mutex<()>,
    /// Until when (ms since `epoch`) the CRM asked this token to hold off.
    paused_until: AtomicU64,
}

/// The limiters of every configured token.
#[derive(Debug, Clone)]
pub struct Limiters {
    by_token: Arc<HashMap<String, Arc<TokenLimit>>>,
    limit: RateLimit,
    epoch: Instant,
}

impl Limiters {
    /// Limiters for `tokens` (duplicates share one).
    pub fn new<'a>(limit: RateLimit, tokens: impl IntoIterator<Item = &'a str>) -> Self {
        let by_token = tokens
            .into_iter()
            .map(|t| (t.to_owned(), Arc::new(token_limit(&limit))))
            .collect();
        Self {
            by_token: Arc::new(by_token),
            limit,
            epoch: Instant::now(),
        }
    }

    fn token(&self, token: &str) -> Arc<TokenLimit> {
        match self.by_token.get(token) {
            Some(limit) => limit.clone(),
            // Tokens come from the configuration, so this is not reached;
            // a fresh limiter is still better than none.
            None => Arc::new(token_limit(&self.limit)),
        }
    }

    fn since_epoch_ms(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    /// Waits for `token`'s turn; `false` if it would come after `deadline`.
    pub async fn acquire(&self, token: &str, deadline: Instant) -> bool {
        let limit = self.token(token);
        let paused_until = limit.paused_until.load(Ordering::Relaxed);
        let now = self.since_epoch_ms(Instant::now());
        if paused_until > now {
            // A time past what `Instant` can hold is after any deadline.
            let resume = self
                .epoch
                .checked_add(Duration::from_millis(paused_until))
                .filter(|resume| *resume <= deadline);
            let Some(resume) = resume else {
                return false;
            };
            tokio::time::sleep_until(resume.into()).await;
        }
        match &limit.gcra {
            None => Instant::now() <= deadline,
            Some(gcra) => {
                let in_turn = async {
                    let _turn = limit.turn.lock().await;
                    gcra.until_ready().await;
                };
                tokio::time::timeout_at(deadline.into(), in_turn)
                    .await
                    .is_ok()
            }
        }
    }

    /// The CRM refused with `Retry-After`: hold `token` back until then.
    pub fn pause(&self, token: &str, retry_after: Duration) {
        // `Instant + Duration` panics past what `Instant` can hold; such a
        // wait is "for good" (u64::MAX ms), which `acquire` understands.
        let until = Instant::now()
            .checked_add(retry_after)
            .map_or(u64::MAX, |at| self.since_epoch_ms(at));
        self.token(token)
            .paused_until
            .fetch_max(until, Ordering::Relaxed);
    }
}

fn token_limit(limit: &RateLimit) -> TokenLimit {
    let gcra = limit.plan().and_then(|plan| {
        Quota::with_period(plan.period).map(|q| RateLimiter::direct(q.allow_burst(plan.burst)))
    });
    TokenLimit {
        gcra,
        turn: tokio::sync::Mutex::new(()),
        paused_until: AtomicU64::new(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_token_gets_its_burst_then_waits_for_the_period() {
        // 10 per second, 2 of headroom: target 8, burst 1; period 125 ms.
        let limit = RateLimit {
            max_requests: 10,
            window: Duration::from_secs(1),
            headroom: 0.2,
        };
        let limiters = Limiters::new(limit, ["a", "b"]);
        let soon = Instant::now() + Duration::from_millis(40);
        assert!(limiters.acquire("a", soon).await);
        assert!(!limiters.acquire("a", soon).await, "the second must wait");
        assert!(
            limiters.acquire("b", soon).await,
            "tokens are limited apart"
        );
        let later = Instant::now() + Duration::from_millis(400);
        assert!(limiters.acquire("a", later).await);
    }

    #[tokio::test]
    async fn waiters_pass_in_the_order_they_came() {
        // 2 per 100 ms, headroom 0.5: one request per 100 ms, burst 1.
        let limit = RateLimit {
            max_requests: 2,
            window: Duration::from_millis(100),
            headroom: 0.5,
        };
        let limiters = Limiters::new(limit, ["a"]);
        let passed = Arc::new(std::sync::Mutex::new(Vec::new()));
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut waiters = Vec::new();
        for n in 0..6 {
            let (limiters, passed) = (limiters.clone(), passed.clone());
            waiters.push(tokio::spawn(async move {
                assert!(limiters.acquire("a", deadline).await);
                passed.lock().unwrap().push(n);
            }));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert_eq!(*passed.lock().unwrap(), [0, 1, 2, 3, 4, 5]);
    }

    #[tokio::test]
    async fn retry_after_holds_the_token_back() {
        let limiters = Limiters::new(
            RateLimit {
                max_requests: 0,
                ..RateLimit::default()
            },
            ["a"],
        );
        limiters.pause("a", Duration::from_millis(300));
        let started = Instant::now();
        assert!(
            !limiters
                .acquire("a", started + Duration::from_millis(100))
                .await
        );
        assert!(
            limiters
                .acquire("a", started + Duration::from_secs(2))
                .await
        );
        assert!(started.elapsed() >= Duration::from_millis(290));
    }

    #[tokio::test]
    async fn a_retry_after_too_large_for_the_clock_holds_back_without_panicking() {
        let limiters = Limiters::new(
            RateLimit {
                max_requests: 0,
                ..RateLimit::default()
            },
            ["a"],
        );
        limiters.pause("a", Duration::MAX);
        limiters.pause("a", Duration::from_millis(u64::MAX));
        let deadline = Instant::now() + Duration::from_millis(50);
        assert!(!limiters.acquire("a", deadline).await);
    }

    #[tokio::test]
    async fn in_any_window_no_more_than_the_plan_passes() {
        let limit = RateLimit {
            max_requests: 20,
            window: Duration::from_millis(500),
            headroom: 0.1,
        };
        let plan = limit.plan().unwrap();
        let limiters = Limiters::new(limit, ["a"]);
        let mut passed = Vec::new();
        let end = Instant::now() + Duration::from_millis(1600);
        while Instant::now() < end {
            if limiters.acquire("a", end).await {
                passed.push(Instant::now());
            }
        }
        let most = passed
            .iter()
            .map(|start| {
                passed
                    .iter()
                    .filter(|t| **t >= *start && t.duration_since(*start) < limit.window)
                    .count()
            })
            .max()
            .unwrap_or(0);
        assert!(
            most as u32 <= plan.max_per_window,
            "{most} > {}",
            plan.max_per_window
        );
        assert!(most as u32 <= limit.max_requests);
        assert!(
            most >= 15,
            "the limiter should let the target through, got {most}"
        );
    }
}

//! The API's brakes: a request budget per token and per peer address (governor token
//! buckets, keyed), and a cap on how many requests may wait (`?wait=`) at once.
//!
//! Guarantees: a request over a budget, or a wait over the cap, is answered at once with
//! 429 `rate_limited` and `Retry-After`, before it reads a view or sends a command (an
//! action refused for the wait cap was not sent, so retrying it sends it once). A token's
//! budget is its own: another token is not slowed by it. The address budget is keyed by
//! the socket's peer IP (`ConnectInfo`, which `serve` provides); a request without one (a
//! test calling the router directly) has no address budget.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use crate::app::AppState;
use crate::config::RateLimit;
use crate::error::ApiError;

/// How often (in checks) idle keys are dropped, so the maps do not grow with every token
/// or address ever seen.
const SWEEP_EVERY: u64 = 4096;

/// What a waiting request is told when every wait slot is taken: slots free as waits end
/// (at most `max_wait`), so one second is a fair first back-off.
const WAIT_FULL_RETRY_AFTER: Duration = Duration::from_secs(1);

/// One keyed budget; `None` when its rate is 0 (off).
struct Budget<K: std::hash::Hash + Eq + Clone> {
    limiter: Option<DefaultKeyedRateLimiter<K>>,
    checks: AtomicU64,
}

impl<K: std::hash::Hash + Eq + Clone> Budget<K> {
    fn new(rate: RateLimit) -> Self {
        let limiter = NonZeroU32::new(rate.per_minute).map(|per_minute| {
            let burst = NonZeroU32::new(rate.burst).unwrap_or(per_minute);
            RateLimiter::keyed(Quota::per_minute(per_minute).allow_burst(burst))
        });
        Self {
            limiter,
            checks: AtomicU64::new(0),
        }
    }

    fn spend(&self, key: &K) -> Result<(), ApiError> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            limiter.retain_recent();
        }
        limiter
            .check_key(key)
            .map_err(|not_until| ApiError::RateLimited {
                retry_after: not_until.wait_time_from(DefaultClock::default().now()),
            })
    }
}

/// The budgets and the wait slots of one API.
pub struct Limits {
    per_token: Budget<Uuid>,
    per_address: Budget<IpAddr>,
    waits: Arc<Semaphore>,
}

impl Limits {
    pub fn new(per_token: RateLimit, per_address: RateLimit, max_waiting: usize) -> Self {
        Self {
            per_token: Budget::new(per_token),
            per_address: Budget::new(per_address),
            waits: Arc::new(Semaphore::new(max_waiting.max(1))),
        }
    }

    /// Spends one request of the token's budget.
    pub fn spend_token(&self, token_id: Uuid) -> Result<(), ApiError> {
        self.per_token.spend(&token_id)
    }

    /// Spends one request of the address's budget.
    pub fn spend_address(&self, ip: IpAddr) -> Result<(), ApiError> {
        self.per_address.spend(&ip)
    }

    /// A wait slot for a request that waits (`Some` non-zero wait), held until it answers;
    /// none needed for one that does not.
    pub fn wait_slot(
        &self,
        wait: Option<Duration>,
    ) -> Result<Option<OwnedSemaphorePermit>, ApiError> {
        if wait.is_none_or(|w| w.is_zero()) {
            return Ok(None);
        }
        Arc::clone(&self.waits)
            .try_acquire_owned()
            .map(Some)
            .map_err(|_| {
                tracing::warn!("every wait slot taken; a waiting request refused");
                ApiError::RateLimited {
                    retry_after: WAIT_FULL_RETRY_AFTER,
                }
            })
    }
}

/// Middleware: the peer address's budget, before anything else runs.
pub async fn per_address(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    if let Some(ip) = peer {
        if let Err(refused) = state.limits().spend_address(ip) {
            tracing::warn!(%ip, "address over its request budget");
            return refused.into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_minute: u32, burst: u32) -> RateLimit {
        RateLimit { per_minute, burst }
    }

    #[test]
    fn a_token_gets_its_burst_then_429_and_another_token_is_unaffected() {
        let limits = Limits::new(rate(1, 3), rate(0, 0), 1);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        for _ in 0..3 {
            assert_eq!(limits.spend_token(a), Ok(()));
        }
        let Err(ApiError::RateLimited { retry_after }) = limits.spend_token(a) else {
            panic!("the fourth request of a burst of 3 is refused");
        };
        // One request a minute: the next one is free within the minute.
        assert!(retry_after > Duration::ZERO && retry_after <= Duration::from_secs(60));
        assert_eq!(limits.spend_token(b), Ok(()));
    }

    #[test]
    fn a_rate_of_zero_is_no_limit() {
        let limits = Limits::new(rate(0, 0), rate(0, 0), 1);
        let ip: IpAddr = [10, 0, 0, 1].into();
        for _ in 0..10_000 {
            assert_eq!(limits.spend_address(ip), Ok(()));
        }
    }

    #[test]
    fn waits_past_the_cap_are_refused_until_a_slot_frees() {
        let limits = Limits::new(rate(0, 0), rate(0, 0), 2);
        let wait = Some(Duration::from_secs(5));
        let first = limits.wait_slot(wait);
        let second = limits.wait_slot(wait);
        assert!(matches!(first, Ok(Some(_))) && matches!(second, Ok(Some(_))));
        assert_eq!(
            limits.wait_slot(wait).err(),
            Some(ApiError::RateLimited {
                retry_after: WAIT_FULL_RETRY_AFTER
            })
        );
        // No wait, or a zero one, needs no slot.
        assert!(matches!(limits.wait_slot(None), Ok(None)));
        assert!(matches!(limits.wait_slot(Some(Duration::ZERO)), Ok(None)));
        drop(first);
        assert!(matches!(limits.wait_slot(wait), Ok(Some(_))));
    }
}

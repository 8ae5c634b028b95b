//! The effect handler: runs the CRM requests the processor asked for,
//! after their transaction committed, on the runtime's effect executor.
//!
//! Guarantee: a request is sent only before its `not_after_ms` (checked
//! after the wait for the rate limiter, right before sending), and the HTTP
//! client's timeout bounds it after that; so once `not_after_ms +
//! request_timeout` has passed, the request is over, whatever happened to
//! the process that asked for it. The state machine's reconciliation timer
//! is set past that point.

use std::sync::Arc;
use std::time::{Duration, Instant};

use callstream_runtime::{Clock, EffectHandler, EffectRequest};
use futures::future::BoxFuture;

use crate::client::CrmClient;
use crate::config::CrmDispatcherConfig;
use crate::limiter::Limiters;
use crate::wire::{CrmRequest, EffectCall, Outcome};

/// Runs CRM requests: one shared client and per-token limiters.
#[derive(Clone)]
pub struct CrmEffects {
    inner: Arc<Inner>,
}

struct Inner {
    client: CrmClient,
    limiters: Limiters,
    /// The search limit's, passed before `limiters` by searches only.
    search_limiters: Limiters,
    config: CrmDispatcherConfig,
    clock: Arc<dyn Clock>,
}

impl CrmEffects {
    pub fn new(config: &CrmDispatcherConfig) -> Result<Self, crate::client::ClientError> {
        let client = CrmClient::new(
            &config.base_url,
            config.policy.request_timeout,
            config.policy.connect_timeout,
            config.concurrency,
        )?;
        let tokens = std::iter::once(config.default_token.as_str())
            .filter(|t| !t.is_empty())
            .chain(config.tenant_tokens.values().map(String::as_str));
        let limiters = Limiters::new(config.rate_limit, tokens.clone());
        let search_limiters = Limiters::new(config.search_limit, tokens);
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                limiters,
                search_limiters,
                config: config.clone(),
                clock: callstream_runtime::process_clock(),
            }),
        })
    }

    /// Uses `clock` for the send deadline (the processor's clock).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                client: inner.client.clone(),
                limiters: inner.limiters.clone(),
                search_limiters: inner.search_limiters.clone(),
                config: inner.config.clone(),
                clock,
            }),
        }
    }

    /// Runs one call and says what came of it.
    pub async fn run(&self, call: &EffectCall) -> Outcome {
        let inner = &self.inner;
        let left = call.not_after_ms.saturating_sub(inner.clock.now_ms());
        let Ok(left) = u64::try_from(left) else {
            return Outcome::Expired;
        };
        let Some(token) = inner.config.token_for(&call.tenant_id) else {
            // Never another tenant's token: refused here, nothing sent.
            return Outcome::Refused {
                status: 401,
                retry_after_ms: None,
                message: format!(
                    "no CRM token for tenant {} (CALLSTREAM_CRM_TENANT_TOKENS); nothing was sent",
                    call.tenant_id
                ),
            };
        };
        let deadline = Instant::now() + inner.clock.real_wait(Duration::from_millis(left));
        // A search passes the search limit first, then the one every request passes.
        let search = matches!(call.request, CrmRequest::Search { .. });
        if search && !inner.search_limiters.acquire(token, deadline).await {
            return Outcome::Expired;
        }
        if !inner.limiters.acquire(token, deadline).await {
            return Outcome::Expired;
        }
        // The limiter may have let it through right at the deadline.
        if inner.clock.now_ms() > call.not_after_ms {
            return Outcome::Expired;
        }
        let outcome = inner.client.send(token, &call.request).await;
        // HubSpot's search limit answers 429 without Retry-After: hold the
        // token's searches back a second. Otherwise the ten-second limit's
        // Retry-After holds every request back (one tenth of its window
        // without one).
        let search_limited = search
            && matches!(
                outcome,
                Outcome::Refused {
                    status: 429,
                    retry_after_ms: None,
                    ..
                }
            );
        let (limiters, fallback) = if search_limited {
            (&inner.search_limiters, inner.config.search_limit.window)
        } else {
            (&inner.limiters, inner.config.rate_limit.window / 10)
        };
        if let Some(wait) = hold_back(limiters, token, &outcome, fallback) {
            tracing::warn!(tenant = %call.tenant_id, wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "CRM rate limit hit; holding this token's requests back");
        }
        outcome
    }
}

/// After a `429`, holds `token`'s requests back for the CRM's `Retry-After`
/// (`fallback` without one) and says for how long; any other outcome holds
/// nothing back.
pub fn hold_back(
    limiters: &Limiters,
    token: &str,
    outcome: &Outcome,
    fallback: Duration,
) -> Option<Duration> {
    let Outcome::Refused {
        status: 429,
        retry_after_ms,
        ..
    } = outcome
    else {
        return None;
    };
    let wait = retry_after_ms.map_or(fallback, Duration::from_millis);
    limiters.pause(token, wait);
    Some(wait)
}

impl EffectHandler for CrmEffects {
    fn call(&self, request: EffectRequest) -> BoxFuture<'static, Vec<u8>> {
        let this = self.clone();
        Box::pin(async move {
            let outcome = match serde_json::from_slice::<EffectCall>(&request.payload) {
                Ok(call) => this.run(&call).await,
                // The processor wrote the payload; not decoding it is a bug,
                // and nothing was sent.
                Err(e) => Outcome::Refused {
                    status: 0,
                    retry_after_ms: None,
                    message: format!("unreadable effect request: {e}"),
                },
            };
            outcome.encode()
        })
    }
}

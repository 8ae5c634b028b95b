//! The effect handler: reads an [`EffectCall`], waits for the provider-wide
//! rate limiter (creates only; lookups are reads), and calls the provider,
//! unless the request's send deadline has passed, in which case it sends
//! nothing and says so. That deadline is what lets the state machine
//! reconcile on a timer without ever racing a create still queued here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use callstream_runtime::{Clock, EffectHandler, EffectRequest, SystemClock};
use futures::future::BoxFuture;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tracing::{debug, warn};

use crate::provider::{CreateOutcome, LookupOutcome, VoiceProvider};
use crate::telemetry::DispatchMetrics;
use crate::wire::{EffectCall, EffectReply};

/// Runs the dispatcher's effects against a provider.
pub struct DispatchEffects {
    provider: Arc<dyn VoiceProvider>,
    limiter: Arc<DefaultDirectRateLimiter>,
    clock: Arc<dyn Clock>,
    metrics: Arc<DispatchMetrics>,
}

impl DispatchEffects {
    /// `calls_per_second` caps creates across every partition of this
    /// instance; a burst of up to one second's worth may go at once.
    pub fn new(
        provider: Arc<dyn VoiceProvider>,
        calls_per_second: std::num::NonZeroU32,
        metrics: Arc<DispatchMetrics>,
    ) -> Self {
        Self {
            provider,
            limiter: Arc::new(RateLimiter::direct(Quota::per_second(calls_per_second))),
            clock: Arc::new(SystemClock),
            metrics,
        }
    }

    /// Uses `clock` for send deadlines (it must be the runtime's clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

/// How long until `deadline_ms`, if it is still ahead.
fn remaining(clock: &dyn Clock, deadline_ms: i64) -> Option<Duration> {
    let left = deadline_ms - clock.now_ms();
    (left > 0).then(|| Duration::from_millis(left.unsigned_abs()))
}

impl EffectHandler for DispatchEffects {
    fn call(&self, request: EffectRequest) -> BoxFuture<'static, Vec<u8>> {
        let provider = self.provider.clone();
        let limiter = self.limiter.clone();
        let clock = self.clock.clone();
        let metrics = self.metrics.clone();
        Box::pin(async move {
            let call = match EffectCall::decode(&request.payload) {
                Ok(call) => call,
                Err(error) => {
                    warn!(id = %request.id, %error, "unreadable effect request refused");
                    return EffectReply::Refused {
                        reason: error.to_string(),
                    }
                    .encode();
                }
            };
            let reply = match call {
                EffectCall::Create {
                    seq,
                    send_by_ms,
                    call,
                } => {
                    let outcome = match remaining(clock.as_ref(), send_by_ms) {
                        None => not_sent_create(),
                        Some(left) => {
                            match tokio::time::timeout(left, limiter.until_ready()).await {
                                // Re-check: the wait may have used up the deadline exactly.
                                Ok(()) if remaining(clock.as_ref(), send_by_ms).is_some() => {
                                    let started = Instant::now();
                                    let outcome = provider.create_call(call).await;
                                    let took = started.elapsed().as_secs_f64();
                                    metrics.request("create", outcome.kind(), Some(took));
                                    outcome
                                }
                                _ => not_sent_create(),
                            }
                        }
                    };
                    if matches!(outcome, CreateOutcome::NotSent { .. }) {
                        metrics.request("create", outcome.kind(), None);
                    }
                    debug!(id = %request.id, outcome = outcome.kind(), "create");
                    EffectReply::Create { seq, outcome }
                }
                EffectCall::Lookup {
                    seq,
                    send_by_ms,
                    find,
                } => {
                    let outcome = if remaining(clock.as_ref(), send_by_ms).is_some() {
                        let started = Instant::now();
                        let outcome = provider.find_call(find).await;
                        let took = started.elapsed().as_secs_f64();
                        metrics.request("lookup", outcome.kind(), Some(took));
                        outcome
                    } else {
                        metrics.request("lookup", "not_sent", None);
                        LookupOutcome::NotSent {
                            reason: "send_deadline".into(),
                        }
                    };
                    debug!(id = %request.id, outcome = outcome.kind(), "lookup");
                    EffectReply::Lookup { seq, outcome }
                }
            };
            reply.encode()
        })
    }
}

fn not_sent_create() -> CreateOutcome {
    CreateOutcome::NotSent {
        reason: "send_deadline".into(),
    }
}

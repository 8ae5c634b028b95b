//! The effect handler: reads an [`EffectCall`], waits for the provider-wide
//! rate limiter (creates only; lookups are reads), and calls the provider,
//! unless the request's send deadline has passed, in which case it sends
//! nothing and says so. That deadline is what lets the state machine
//! reconcile on a timer without ever racing a create still queued here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use callstream_runtime::{Clock, EffectHandler, EffectRequest};
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
            clock: callstream_runtime::process_clock(),
            metrics,
        }
    }

    /// Uses `clock` for send deadlines (it must be the runtime's clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

/// How long in real time until `deadline_ms` (business time), if it is still ahead.
fn remaining(clock: &dyn Clock, deadline_ms: i64) -> Option<Duration> {
    let left = deadline_ms - clock.now_ms();
    (left > 0).then(|| clock.real_wait(Duration::from_millis(left.unsigned_abs())))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{CreateCall, FindCall};
    use callstream_runtime::SystemClock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts creates and accepts them all.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl VoiceProvider for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn create_call(&self, _: CreateCall) -> BoxFuture<'static, CreateOutcome> {
            let n = self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                CreateOutcome::Accepted {
                    call_id: format!("CA{n}"),
                }
            })
        }
        fn find_call(&self, _: FindCall) -> BoxFuture<'static, LookupOutcome> {
            Box::pin(async { LookupOutcome::NotFound })
        }
    }

    fn create(seq: u32, send_by_ms: i64) -> EffectRequest {
        let call = EffectCall::Create {
            seq,
            send_by_ms,
            call: CreateCall {
                launch_id: uuid::Uuid::from_u128(u128::from(seq)),
                tenant_id: "t".into(),
                contact_id: "c".into(),
                campaign_id: "k".into(),
                to: "+15550001111".into(),
                from: None,
            },
        };
        EffectRequest {
            partition: 0,
            key: b"k".to_vec(),
            id: format!("op/{seq}"),
            payload: call.encode(),
        }
    }

    fn reply(bytes: &[u8]) -> EffectReply {
        EffectReply::decode(bytes).unwrap()
    }

    #[tokio::test]
    async fn nothing_is_sent_past_the_send_deadline() {
        let provider = Arc::new(Counting::default());
        let metrics = Arc::new(DispatchMetrics::new());
        let handler = DispatchEffects::new(provider.clone(), std::num::NonZeroU32::MIN, metrics);
        let now = SystemClock.now_ms();
        let late = reply(&handler.call(create(1, now - 1)).await);
        assert!(
            matches!(
                late,
                EffectReply::Create {
                    seq: 1,
                    outcome: CreateOutcome::NotSent { .. }
                }
            ),
            "{late:?}"
        );
        // One call per second: the first goes, the second cannot get a
        // permit within its 200 ms and is not sent either.
        let first = reply(&handler.call(create(2, now + 200)).await);
        let second = reply(&handler.call(create(3, now + 200)).await);
        assert!(
            matches!(
                first,
                EffectReply::Create {
                    outcome: CreateOutcome::Accepted { .. },
                    ..
                }
            ),
            "{first:?}"
        );
        assert!(
            matches!(
                second,
                EffectReply::Create {
                    outcome: CreateOutcome::NotSent { .. },
                    ..
                }
            ),
            "{second:?}"
        );
        assert_eq!(provider.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn the_rate_limiter_spaces_creates() {
        let provider = Arc::new(Counting::default());
        let rate = std::num::NonZeroU32::new(20).unwrap();
        let handler =
            DispatchEffects::new(provider.clone(), rate, Arc::new(DispatchMetrics::new()));
        let deadline = SystemClock.now_ms() + 10_000;
        let started = Instant::now();
        let calls: Vec<_> = (0..40).map(|i| handler.call(create(i, deadline))).collect();
        let replies = futures::future::join_all(calls).await;
        // A burst of 20, then 20 more at 20 per second: about a second.
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(900), "{took:?}");
        assert!(replies.iter().all(|r| matches!(
            reply(r),
            EffectReply::Create {
                outcome: CreateOutcome::Accepted { .. },
                ..
            }
        )));
        assert_eq!(provider.0.load(Ordering::SeqCst), 40);
    }

    #[tokio::test]
    async fn an_unreadable_request_is_refused_without_a_call() {
        let provider = Arc::new(Counting::default());
        let handler = DispatchEffects::new(
            provider.clone(),
            std::num::NonZeroU32::MIN,
            Arc::new(DispatchMetrics::new()),
        );
        let mut request = create(1, i64::MAX);
        request.payload = b"{}".to_vec();
        assert!(matches!(
            reply(&handler.call(request).await),
            EffectReply::Refused { .. }
        ));
        assert_eq!(provider.0.load(Ordering::SeqCst), 0);
    }
}

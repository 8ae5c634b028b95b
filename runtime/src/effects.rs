//! Running side effects outside Kafka (an HTTP call to a provider), after the
//! transaction that asked for them commits: the intent is durable before
//! the world is touched. The result comes back to the processor's
//! `on_effect` in a later transaction.
//!
//! The runtime gives at-least-once execution at best and may lose a result
//! in a crash: a processor that needs exactly-once in effect records the
//! intent in its state and a durable timer that reconciles (looks the
//! operation up at the provider) if no result came. Operation ids make the
//! provider's side idempotent where it can be.

use futures::future::BoxFuture;

use crate::api::EffectRequest;

/// Runs effects (on the runtime's own async executor). Errors are results
/// too: encode them in the returned bytes so the processor can decide.
pub trait EffectHandler: Send + Sync + 'static {
    fn call(&self, request: EffectRequest) -> BoxFuture<'static, Vec<u8>>;
}

//! The launch dispatcher (`callstream process launch-dispatcher`): turns each
//! `launch-command` into exactly one call at the voice platform, or a
//! recorded, explained failure; never two calls.
//!
//! For a launch, with its stable operation id (`launch_id`):
//! 1. one transaction records `dispatching` in the ledger (store
//!    `launches`), sets a durable wall-clock step timer and asks for the
//!    create effect, which the runtime runs only after that commit;
//! 2. the effect calls the provider (Twilio's form API) with a
//!    `StatusCallback` URL that carries tenant, contact, campaign and launch;
//! 3. a later transaction records the outcome and emits a `call-launch`
//!    keyed by contact: `accepted`, `failed` (plus an exception) or
//!    `ambiguous`, which goes to reconciliation: the call is looked up at
//!    the provider and what is found is recorded. A crash between 1 and 3
//!    leaves `dispatching` with its timer, which reconciles the same way.
//!
//! Transient failures retry on the step timer (doubling, jittered, bounded),
//! so a retry never blocks the partition; shadow mode, read from `control`
//! for every dial, records `shadow` and calls no one; a governor rate
//! limiter caps creates per second, per instance (N instances: N times the
//! cap; see `DispatcherConfig::calls_per_second`).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use callstream_launch_dispatcher as dispatcher;
//! let config = dispatcher::DispatcherConfig::from_env()?;
//! let spec = dispatcher::spec(&config.topics, dispatcher::APP_ID);
//! let mut runtime = callstream_runtime::RuntimeConfig::new(
//!     callstream_platform::KafkaSettings::from_env(dispatcher::APP_ID),
//!     dispatcher::APP_ID,
//!     "0",
//! );
//! runtime.effects = Some(dispatcher::effect_runner(&config)?);
//! callstream_runtime::run(dispatcher::processor(&config), spec, runtime)?;
//! # Ok(()) }
//! ```

pub mod backoff;
pub mod config;
pub mod control;
pub mod emit;
pub mod handler;
pub mod ledger;
pub mod machine;
pub mod numbers;
pub mod processor;
pub mod provider;
pub mod step;
pub mod telemetry;
pub mod wire;

use std::num::NonZeroU32;
use std::sync::Arc;

use callstream_platform::topics::{
    AUDIT, CALL_LAUNCHES, CONTROL, DEAD_LETTERS, EXCEPTIONS, LAUNCH_COMMANDS,
};
use callstream_platform::Topics;
use callstream_runtime::{EffectRunner, ProcessorSpec};

pub use backoff::RetryPolicy;
pub use config::{
    CallbackConfig, ConfigError, DispatchPolicy, DispatcherConfig, Instructions, TwilioConfig,
};
pub use handler::DispatchEffects;
pub use ledger::{LAUNCHES_STORE, STORES};
pub use processor::LaunchDispatcher;
pub use provider::twilio::{ClientError, Twilio};
pub use provider::VoiceProvider;
pub use telemetry::DispatchMetrics;

/// The default application id: consumer group and changelog prefix.
pub const APP_ID: &str = "launch-dispatcher";

/// The processor for the Twilio adapter that [`effect_runner`] builds.
pub fn processor(config: &DispatcherConfig) -> LaunchDispatcher {
    processor_named(config, provider::twilio::NAME)
}

/// The processor for `provider`, the adapter given to [`effect_runner_with`]:
/// its launches record the adapter's name.
pub fn processor_for(config: &DispatcherConfig, provider: &dyn VoiceProvider) -> LaunchDispatcher {
    processor_named(config, provider.name())
}

fn processor_named(config: &DispatcherConfig, provider: &'static str) -> LaunchDispatcher {
    let topics = &config.topics;
    LaunchDispatcher {
        policy: config
            .policy
            .in_business_time(callstream_runtime::process_clock().as_ref()),
        topics: emit::OutputTopics {
            call_launches: topics.name(CALL_LAUNCHES),
            exceptions: topics.name(EXCEPTIONS),
            audit: topics.name(AUDIT),
        },
        control: callstream_kit::control::ControlTable::new(topics.name(CONTROL)),
        provider,
        has_default_from: config.twilio.default_from.is_some(),
        metrics: config.metrics.clone(),
    }
}

/// Inputs, global table and dead letters of the dispatcher (its store,
/// [`STORES`], the processor declares).
pub fn spec(topics: &Topics, app_id: &str) -> ProcessorSpec {
    ProcessorSpec::new(app_id, topics.name(DEAD_LETTERS))
        .input(topics.name(LAUNCH_COMMANDS))
        .global_table(topics.name(CONTROL))
}

/// The Twilio adapter, with its pooled HTTP client.
pub fn provider(config: &DispatcherConfig) -> Result<Twilio, ClientError> {
    Twilio::new(
        config.twilio.clone(),
        config.callbacks.clone(),
        &config.policy,
        config.concurrency,
    )
}

/// The effect runner to put in `RuntimeConfig.effects`: the Twilio adapter
/// behind the rate limiter, `config.concurrency` requests at once.
pub fn effect_runner(config: &DispatcherConfig) -> Result<EffectRunner, ClientError> {
    let provider: Arc<dyn VoiceProvider> = Arc::new(provider(config)?);
    Ok(effect_runner_with(config, provider))
}

/// Like [`effect_runner`] over any provider adapter.
pub fn effect_runner_with(
    config: &DispatcherConfig,
    provider: Arc<dyn VoiceProvider>,
) -> EffectRunner {
    let rate = NonZeroU32::new(config.calls_per_second).unwrap_or(NonZeroU32::MIN);
    EffectRunner {
        handler: Arc::new(DispatchEffects::new(provider, rate, config.metrics.clone())),
        concurrency: config.concurrency.max(1),
    }
}

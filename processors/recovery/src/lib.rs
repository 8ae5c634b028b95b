//! Recovery of missing completions (`callstream process recovery`).
//!
//! For each `completion-missing`, recovery reads the call record from the
//! voice platform, read-only, and replays it through the ordinary pipeline:
//! a final status, mapped by the one shared normaliser, becomes a
//! `call-event` with `source = recovery` and the gateway's own event id
//! rule, so a replay of a callback that did arrive changes nothing
//! downstream. A call still in progress is looked at again later, a bounded
//! number of times; a call the platform cannot find advances the contact as
//! no-answer (a `call-event` with outcome `no_answer`, so the contact
//! processor's one workflow path handles it); lookups that keep failing are
//! retried with jittered, doubling delays, then raise an exception. Lookups
//! are rate-limited per tenant (governor) and delayed, never dropped.
//! Operators' recover, advance and ignore commands act the same way; every
//! recovery, advance and ignore is an audit event naming its actor.
//!
//! Guarantees, on the exactly-once runtime: each case closes once, with one
//! `completion-resolved`; all ids are derived, so a crash and replay writes
//! identical records; a lookup result lost in a crash is asked for again.

mod case;
mod close;
mod commands;
pub mod config;
mod emit;
pub mod handler;
pub mod ids;
mod processor;
pub mod wire;

use std::sync::Arc;

use callstream_platform::topics::{self, Topics};
use callstream_runtime::{EffectRunner, ProcessorSpec};

pub use case::{retry_delay_ms, Phase};
pub use config::{ConfigError, RecoveryConfig, TwilioAccess};
pub use emit::ACTOR;
pub use handler::TwilioFetcher;
pub use processor::{Recovery, CASES_STORE, STORES};

/// The app id `callstream process recovery` runs under.
pub const APP_ID: &str = "recovery";

/// The recovery processor, ready for `callstream_runtime::run` or the test driver.
pub fn processor(config: RecoveryConfig) -> Recovery {
    Recovery::new(config)
}

/// Recovery's inputs, with physical names (its store, [`STORES`], the
/// processor declares).
pub fn spec(topics: &Topics, app_id: &str) -> ProcessorSpec {
    ProcessorSpec::new(app_id, topics.name(topics::DEAD_LETTERS))
        .input(topics.name(topics::COMPLETION_MISSING))
        .input(topics.name(topics::COMPLETION_RESOLVED))
        .input(topics.name(topics::CONTACT_COMMANDS))
}

/// The effect handler that looks calls up (set it as `RuntimeConfig::effects`).
/// Fails only when the HTTP client cannot be built (no TLS backend).
pub fn effect_runner(config: &RecoveryConfig) -> Result<EffectRunner, reqwest::Error> {
    Ok(EffectRunner {
        handler: Arc::new(TwilioFetcher::new(config)?),
        concurrency: config.concurrency,
    })
}

//! The CRM dispatcher (`callstream process crm-dispatcher`): applies
//! `crm-commands` to the CRM (HubSpot's CRM v3 API) exactly once in
//! effect, in order per contact, under the CRM's rate limit, and turns every
//! permanent failure into an exception an operator can act on.
//!
//! Guarantees (see DESIGN.md, "Side effects"):
//! - Never twice: every created object carries the command's operation id
//!   as `callstream_op_id`; the effect ledger (operation id → outcome, CRM
//!   object id) in the processor's state answers repeats, and a create
//!   whose outcome is unknown (timeout, `5xx`, crash between request and
//!   record) is searched for by `callstream_op_id` before it is sent again,
//!   and a search that finds nothing is trusted only once the settle window
//!   (longer than the CRM's longest index lag) is over; until then it
//!   searches again, within the CRM's search limit.
//! - In order per contact: one command per contact in flight, later ones
//!   queue behind it; a contact update carries its fact time and a property
//!   whose applied fact is newer is not overwritten (all stale: skipped).
//! - Never stuck: transient failures and `429`s retry with doubling,
//!   jittered delays, honouring `Retry-After`, up to a bound; the waiting
//!   command is parked on a durable timer, so only its contact's later
//!   commands wait. At the bound: a `failed` result and a `crm_failed`
//!   exception with the contact, the command and the last error; the
//!   ledger keeps the command, and an operator's retry of the exception
//!   (a `retry_now` contact command on `crm-commands`, see [`retry`]) runs
//!   it again, searching first, so a retry never duplicates.
//! - The write switch and shadow mode are read from `control` for every
//!   command: writes off records `suppressed` (the command kept for replay);
//!   shadow mode logs what would be sent.
//! - A client-side GCRA limiter per token keeps requests under the CRM's
//!   limit, so a `429` is rare rather than the flow control.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use callstream_crm_dispatcher as crm;
//! let config = crm::CrmDispatcherConfig::from_env()?;
//! let spec = crm::spec(&config.topics, crm::APP_ID);
//! let mut runtime = callstream_runtime::RuntimeConfig::new(
//!     callstream_platform::KafkaSettings::from_env(crm::APP_ID), crm::APP_ID, "0");
//! runtime.effects = Some(crm::effect_runner(&config)?);
//! callstream_runtime::run(crm::processor(&config), spec, runtime)?;
//! # Ok(()) }
//! ```

pub mod backoff;
pub mod client;
pub mod config;
pub mod control;
pub mod emit;
pub mod handler;
pub mod limiter;
mod machine;
pub mod policy;
mod processor;
pub mod request;
pub mod retry;
mod settle;
pub mod state;
pub mod telemetry;
pub mod wire;

use std::sync::Arc;

use callstream_platform::topics::{self, Topics};
use callstream_runtime::{EffectRunner, Processor, ProcessorSpec};

pub use callstream_kit::control::ControlTable;
pub use client::ClientError;
pub use config::{ConfigError, CrmDispatcherConfig, DispatchPolicy, RateLimit};
pub use control::Switches;
pub use emit::OutputTopics;
pub use handler::CrmEffects;
pub use machine::{Env, TIMER};
pub use processor::CrmDispatcher;
pub use request::OP_ID_PROPERTY;
pub use telemetry::CrmMetrics;

/// The application id: consumer group, transactional-id and changelog prefix.
pub const APP_ID: &str = "crm-dispatcher";

/// The processor's shape: `crm-commands` in, `control` as a global table,
/// dead letters to `dead-letters` (its stores, [`state::STORES`], the
/// processor declares).
pub fn spec(topics: &Topics, app_id: &str) -> ProcessorSpec {
    ProcessorSpec::new(app_id, topics.name(topics::DEAD_LETTERS))
        .input(topics.name(topics::CRM_COMMANDS))
        .global_table(topics.name(topics::CONTROL))
}

/// The topics the dispatcher writes.
pub fn output_topics(topics: &Topics) -> OutputTopics {
    OutputTopics {
        results: topics.name(topics::CRM_RESULTS),
        exceptions: topics.name(topics::EXCEPTIONS),
        audit: topics.name(topics::AUDIT),
    }
}

/// The dispatcher, reading its switches from the `control` table.
pub fn processor(config: &CrmDispatcherConfig) -> impl Processor {
    processor_with(
        config,
        ControlTable::new(config.topics.name(topics::CONTROL)),
    )
}

/// The dispatcher over other switches (tests).
pub fn processor_with<S: Switches>(config: &CrmDispatcherConfig, switches: S) -> CrmDispatcher<S> {
    let mut config = config.clone();
    config.policy = config
        .policy
        .in_business_time(callstream_runtime::process_clock().as_ref());
    CrmDispatcher::new(Env {
        config: config.clone(),
        topics: output_topics(&config.topics),
        switches,
    })
}

/// The effect runner that carries out the dispatcher's CRM requests; set it
/// as `RuntimeConfig::effects`.
pub fn effect_runner(config: &CrmDispatcherConfig) -> Result<EffectRunner, ClientError> {
    Ok(EffectRunner {
        handler: Arc::new(CrmEffects::new(config)?),
        concurrency: config.concurrency,
    })
}

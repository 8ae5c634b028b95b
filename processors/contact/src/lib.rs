//! The contact processor (`callstream process contact`): per contact, it
//! applies the workflow and the next-step policy to call outcomes, runs the
//! launch-time guards when the scheduler says a job is due, and carries out
//! launch requests and operator commands.
//!
//! Inputs `call-events` and `contact-commands` (co-partitioned, keyed by
//! contact) and the `control` table; outputs `schedule-requests` (keyed by
//! tenant), `launch-commands`, `crm-commands`, `exceptions`,
//! `contact-state` (keyed by contact) and `audit` (keyed by tenant).
//!
//! Guarantees, on the runtime's exactly-once engine: every decision is an
//! event with a reason code, a causation id and a correlation id (envelope
//! and headers); event ids are UUIDv5 over the cause's id and what was
//! decided, so a replay produces identical events; a duplicate input
//! changes nothing and produces nothing; a rejected workflow transition is
//! counted and logged, never applied; a job launches at most once, under a
//! stable operation id (UUIDv5 over tenant and job id).

mod calls;
mod commands;
pub mod config;
pub mod control;
mod decisions;
mod details;
mod emit;
mod failures;
pub mod guards;
mod jobs;
mod launch;
mod outcomes;
pub mod processor;
mod snapshot;
pub mod state;
pub mod telemetry;

use callstream_platform::Topics;
use callstream_runtime::{Processor, ProcessorSpec};

pub use config::{ContactConfig, ContactTopics, APP_ID, CONTACTS_STORE, STORES};
pub use control::{ControlRead, ControlSource};
pub use processor::{ContactProcessor, PAUSE_RECHECK_TIMER};
pub use telemetry::{ContactMetrics, DecisionKind};

/// The contact processor, reading `control` through the runtime's global
/// table; its counters are not registered anywhere.
pub fn processor(config: ContactConfig) -> impl Processor {
    processor_with_metrics(config, ContactMetrics::default())
}

/// The contact processor counting into `metrics` (register them with
/// [`ContactMetrics::register`] on the registry that `/metrics` serves).
pub fn processor_with_metrics(config: ContactConfig, metrics: ContactMetrics) -> impl Processor {
    let control = callstream_kit::control::ControlTable::new(config.topics.control.clone());
    ContactProcessor::new(config, control, metrics)
}

/// The processor's inputs and global table for `topics`; `app_id` names its
/// consumer group and changelog (normally [`APP_ID`]).
pub fn spec(topics: &Topics, app_id: &str) -> ProcessorSpec {
    config::spec(topics, app_id)
}

//! The scheduler: the single writer of each tenant's slot grid.
//!
//! It consumes `schedule-requests` (keyed by tenant: the partition that
//! owns a tenant is the only writer of its grid, so no lock is needed and
//! no two callers can take one slot), reads grid and campaign settings
//! from the `control` table, keeps the grid (in chunks) and the jobs in
//! changelog-backed stores, sets a durable wall-clock timer per booked job,
//! and at the slot's time sends `LaunchDue` to `contact-commands`. Every
//! way onto the grid comes through here; nothing moves a booked job.
//!
//! Wiring: [`spec`] gives the topics and stores, [`processor`] the
//! processor; `callstream_runtime::run(processor(config), spec(..), ..)`.
//! Determinism: the same requests, control table and clock give the same
//! outputs with the same ids. The clock enters once: no slot is booked
//! before the wall clock, because a slot in the past would launch at once
//! and break the rate cap.

pub mod config;
pub mod emit;
pub mod grid_store;
pub mod jobs;
pub mod placement;
pub mod processor;

use callstream_platform::{topics, Topics};
use callstream_runtime::ProcessorSpec;

pub use config::SchedulerConfig;
pub use processor::{Scheduler, STORES};

/// The default application id (consumer group, changelog prefix).
pub const APP_ID: &str = "scheduler";

/// The scheduler processor with `config`.
pub fn processor(config: SchedulerConfig) -> Scheduler {
    Scheduler::new(config)
}

/// Inputs and global table of the scheduler on `topics` (its stores, [`STORES`],
/// the processor declares).
pub fn spec(topics: &Topics, app_id: &str) -> ProcessorSpec {
    ProcessorSpec::new(app_id, topics.name(topics::DEAD_LETTERS))
        .input(topics.name(topics::SCHEDULE_REQUESTS))
        .global_table(topics.name(topics::CONTROL))
}

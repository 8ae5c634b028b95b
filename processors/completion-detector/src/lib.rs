//! The missing-completion detector (`callstream process completion-detector`).
//!
//! A windowed stream join of `call-launches` (accepted launches) and
//! `call-events` (completions), co-partitioned and keyed by contact. A
//! launch with no completion within its window W plus grace is reported on
//! `completion-missing` (with an open exception) the moment the window
//! closes, by stream time or by the wall clock, whichever comes first, so a
//! partition with no traffic still reports on time. A completion arriving
//! after that emits `completion-resolved` (late) and closes the exception.
//! A delivery monitor alerts on `alerts` when a tenant's 10-minute bucket
//! has under 80% of its completions delivered by the platform.
//!
//! Guarantees, on the exactly-once runtime: one `completion-missing` per
//! lost completion and none for delivered ones, across crashes and restarts
//! (the windows, deadlines and counts are changelog state and durable
//! timers); all ids are derived, so a replay writes identical records.

mod avro_fields;
mod codec;
pub mod completion;
pub mod config;
mod contact_io;
pub mod control;
pub mod emit;
mod inputs;
pub mod join;
pub mod monitor;
mod monitor_io;
mod processor;
pub mod state;
pub mod testkit;

use callstream_platform::topics::{self, Topics};
use callstream_runtime::ProcessorSpec;

pub use codec::CodecError;
pub use config::{ConfigError, DetectorConfig};
pub use emit::ACTOR;
pub use processor::{
    Detector, AGGREGATES_STORE, ALERTS_STORE, BUCKETS_STORE, CONTACTS_STORE, STORES,
};

/// The logical topic carrying each partition's counts of a closed delivery
/// bucket to the partition of its tenant (JSON values, keyed by tenant).
/// An input of the detector, declared with the design's topics.
pub use callstream_platform::topics::DELIVERY_PARTIALS;

/// The app id `callstream process completion-detector` runs under.
pub const APP_ID: &str = "completion-detector";

/// The detector, ready for `callstream_runtime::run` or the test driver.
pub fn processor(config: DetectorConfig) -> Detector {
    Detector::new(config)
}

/// The detector's inputs and global table, with physical names (its
/// stores, [`STORES`], the processor declares).
pub fn spec(topics: &Topics, app_id: &str) -> ProcessorSpec {
    ProcessorSpec::new(app_id, topics.name(topics::DEAD_LETTERS))
        .input(topics.name(topics::CALL_LAUNCHES))
        .input(topics.name(topics::CALL_EVENTS))
        .input(topics.name(DELIVERY_PARTIALS))
        .global_table(topics.name(topics::CONTROL))
}

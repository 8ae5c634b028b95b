//! The callstream processor runtime.
//!
//! A processor is plain code (`Processor::process`, `Processor::on_timer`)
//! over keyed state stores and durable timers. The Kafka engine runs it
//! exactly once: each transaction holds the outputs, the state changes (to
//! compacted `<app>-<store>-changelog` topics, partition for partition with
//! the input) and the consumed offsets, so a crash at any point loses
//! nothing and repeats nothing that a `read_committed` reader can see.
//! The test driver runs the same processor in memory with a manual clock.

pub mod api;
pub mod clock;
pub mod commit;
pub mod context;
mod dead_letter;
pub mod driver;
pub mod effects;
pub mod error;
pub mod globals;
pub mod kafka;
pub mod metrics;
pub mod partitioner;
pub mod spec;
mod store;
mod task;
pub mod testkit;
mod timers;

pub use api::{
    header, Headers, Output, ProcessError, Processor, Record, TimeDomain, Timer, TimerHandle,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use commit::CommitPolicy;
pub use context::Context;
pub use driver::{Input, Produced, TestDriver};
pub use effects::{EffectHandler, EffectRequest, EffectResult};
pub use error::RuntimeError;
pub use globals::Globals;
pub use kafka::{run, EffectRunner, Guarantee, RuntimeConfig};
pub use metrics::RuntimeMetrics;
pub use spec::ProcessorSpec;

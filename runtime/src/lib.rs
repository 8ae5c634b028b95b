//! The callstream processor runtime.
//!
//! A processor is plain code (`Processor::process`, `Processor::on_timer`)
//! over the keyed state stores it declares and durable timers. The Kafka
//! engine runs it exactly once: each transaction holds the outputs, the
//! state changes (to compacted `<app>-<store>-changelog` topics, partition
//! for partition with the input) and the consumed offsets, so a crash at any
//! point loses nothing and repeats nothing that a `read_committed` reader
//! can see. The test kit runs the same processor in memory with a manual
//! clock. `README.md` is the one-page tour.
//!
//! Layers, bottom up: `api` (what processors see; depends on nothing of the
//! engine), then the engine's parts (`task`, `store`, `timers`,
//! `dead_letter`, `globals`, `commit`), then the two ways to run a
//! processor: `kafka` and `testkit`.

pub mod api;
pub mod clock;
pub mod commit;
mod dead_letter;
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
    header, Context, EffectRequest, EffectResult, Headers, Output, ProcessError, Processor, Record,
    TimeDomain, Timer, TimerHandle,
};
pub use clock::{process_clock, Clock, ManualClock, ScaledClock, SystemClock};
pub use commit::CommitPolicy;
pub use effects::EffectHandler;
pub use error::RuntimeError;
pub use globals::Globals;
pub use kafka::{run, EffectRunner, Guarantee, RuntimeConfig, ValueGate};
pub use metrics::RuntimeMetrics;
pub use spec::{ProcessorSpec, StoreError};
pub use testkit::{Input, Produced, TestDriver};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

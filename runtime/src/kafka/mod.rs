//! The Kafka engine: one consumer group over the inputs (read_committed, no
//! auto-commit), one transactional producer, and a loop on its own thread
//! (rdkafka's transaction calls block) that commits outputs, changelog
//! writes and offsets together.
//!
//! Files by concern: `config` (how an instance runs), `run` (start-up and
//! stop), `event_loop` (one turn after another), `core` (the tasks and the
//! open transaction, with `core/txn` for commit and abort and `core/output`
//! for what a step sends), `rebalance` (partitions moving), `restore`
//! (state and global tables from Kafka), `setup` (topic checks) and
//! `effects` (the effect runner).

mod config;
mod core;
mod effects;
mod event_loop;
mod rebalance;
mod restore;
mod run;
mod setup;

pub use self::config::{Guarantee, RuntimeConfig, ValueGate};
pub use self::effects::EffectRunner;
pub use self::run::run;

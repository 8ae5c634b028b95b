//! The `Processor` trait and its error: the one required method
//! (`process`), the stores it declares, and the defaulted hooks.

use std::fmt;

use super::context::Context;
use super::effect::EffectResult;
use super::record::Record;
use super::timer::Timer;

/// Why a processor could not handle a record, timer or effect result.
/// Either way it is dead-lettered with the reason and processing goes on:
/// nothing is dropped silently, and one bad input does not stop a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessError {
    /// The bytes are not a value of the expected type.
    Decode(String),
    /// The value decoded but the processor cannot act on it.
    Invalid(String),
    /// The processor used a state store it does not declare in
    /// `Processor::stores` (set by the runtime, not by processors).
    UndeclaredStore(String),
}

impl fmt::Display for ProcessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessError::Decode(reason) => write!(f, "cannot decode: {reason}"),
            ProcessError::Invalid(reason) => write!(f, "cannot process: {reason}"),
            ProcessError::UndeclaredStore(store) => write!(
                f,
                "state store {store:?} is not declared by the processor (Processor::stores)"
            ),
        }
    }
}

impl std::error::Error for ProcessError {}

/// A stream processor: plain code over records, state and timers.
///
/// One instance serves every partition assigned to the runtime instance;
/// keep state in the context's stores (they are per partition, restored from
/// their changelogs), not in fields. Fields are for configuration, and for
/// caches of what the stores hold (`on_revoke` says when to drop them).
pub trait Processor: Send + 'static {
    /// Handles one record. Everything done through `ctx` (outputs, state,
    /// timers) commits atomically with the record's offset, or not at all.
    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError>;

    /// The keyed state stores this processor reads and writes, by name;
    /// each one is kept in the changelog topic `<app>-<store>-changelog`.
    /// The runtime checks the list when it starts (no duplicates, no name
    /// reserved for the runtime, each one legal in a topic name) and a use
    /// of a store not listed fails that step with
    /// [`ProcessError::UndeclaredStore`]. A processor that wraps another
    /// returns the inner one's stores.
    fn stores(&self) -> &'static [&'static str] {
        &[]
    }

    /// Handles a due timer, with the same atomicity as `process`.
    fn on_timer(&mut self, _ctx: &mut Context<'_>, _timer: &Timer) -> Result<(), ProcessError> {
        Ok(())
    }

    /// Handles the result of an effect this processor asked for.
    fn on_effect(
        &mut self,
        _ctx: &mut Context<'_>,
        _result: &EffectResult,
    ) -> Result<(), ProcessError> {
        Ok(())
    }

    /// `partition` is this instance's now: its state is restored, and none
    /// of its records or timers has been handled yet.
    fn on_assign(&mut self, _partition: i32) {}

    /// `partition` has left this instance (its open transaction finished
    /// and its state dropped): forget whatever was cached for it.
    fn on_revoke(&mut self, _partition: i32) {}
}

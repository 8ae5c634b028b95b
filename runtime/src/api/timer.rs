//! Durable timers as a processor sees them: which clock a timer follows,
//! the handle that names it, and the timer handed back when it is due.
//! How a timer is kept in the state is `timer_key`'s business.

/// Which clock a timer follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeDomain {
    /// The partition's stream time: the largest record timestamp seen on it.
    /// Deterministic under replay; does not advance when the partition is quiet.
    EventTime,
    /// The wall clock. Fires even when the partition receives nothing.
    WallClock,
    /// Whichever passes the due time first: the partition's stream time or
    /// the wall clock. One timer, and one changelog record, for a deadline
    /// that would otherwise be set in both domains. `Timer::due_ms` against
    /// `Context::stream_time_ms` tells which clock fired it.
    Either,
}

/// Names a timer: one timer per (name, key) and domain; setting it again moves it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerHandle {
    pub domain: TimeDomain,
    pub name: String,
    pub key: Vec<u8>,
}

/// A timer that is due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timer {
    pub handle: TimerHandle,
    /// When it was due, in ms since the epoch (in its domain).
    pub due_ms: i64,
    /// What the processor stored with it.
    pub payload: Vec<u8>,
}

//! The processor API: what domain code sees. No rdkafka type appears here,
//! so processors run unchanged on Kafka and on the in-memory test driver.

use std::fmt;

use crate::context::Context;

/// Header names the runtime reads and writes.
pub mod header {
    /// The id of the event a record carries (set by whoever produced it).
    pub const EVENT_ID: &str = "event-id";
    /// The event that caused this one.
    pub const CAUSATION_ID: &str = "causation-id";
    /// The conversation this event belongs to (first cause of the chain).
    pub const CORRELATION_ID: &str = "correlation-id";
    /// W3C trace context.
    pub const TRACEPARENT: &str = "traceparent";
    /// Why a record was dead-lettered.
    pub const DLQ_REASON: &str = "dlq-reason";
    /// Where a dead-lettered record came from: `topic/partition/offset`.
    pub const DLQ_SOURCE: &str = "dlq-source";
    /// Which processor dead-lettered it.
    pub const DLQ_APP: &str = "dlq-app";
    /// What the processor failed on: `record`, `timer` or `effect`.
    pub const DLQ_KIND: &str = "dlq-kind";
    /// A failed timer's name.
    pub const DLQ_TIMER_NAME: &str = "dlq-timer-name";
    /// A failed timer's domain: `wall-clock`, `event-time` or `either`.
    pub const DLQ_TIMER_DOMAIN: &str = "dlq-timer-domain";
    /// When a failed timer was due, in ms since the epoch (decimal).
    pub const DLQ_TIMER_DUE_MS: &str = "dlq-timer-due-ms";
    /// A failed effect result's operation id.
    pub const DLQ_EFFECT_ID: &str = "dlq-effect-id";
}

/// Record headers, in order; names may repeat, as in Kafka.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, Vec<u8>)>);

impl Headers {
    pub fn new() -> Self {
        Self::default()
    }

    /// The last value of `name`, as Kafka clients usually read it.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// The last value of `name` if it is UTF-8.
    pub fn get_str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Sets `name`, replacing any earlier values.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<Vec<u8>>) {
        let name = name.into();
        self.0.retain(|(n, _)| *n != name);
        self.0.push((name, value.into()));
    }

    /// Adds a value for `name`, keeping earlier ones.
    pub fn append(&mut self, name: impl Into<String>, value: impl Into<Vec<u8>>) {
        self.0.push((name.into(), value.into()));
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_slice()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Replaces every header with `headers`, reusing the buffers of the
    /// ones there: the engine refills one record per input instead of
    /// allocating a name and a value per header.
    pub(crate) fn refill<'a>(&mut self, headers: impl Iterator<Item = (&'a str, &'a [u8])>) {
        let mut count = 0;
        for (name, value) in headers {
            match self.0.get_mut(count) {
                Some((n, v)) => {
                    n.clear();
                    n.push_str(name);
                    v.clear();
                    v.extend_from_slice(value);
                }
                None => self.0.push((name.to_string(), value.to_vec())),
            }
            count += 1;
        }
        self.0.truncate(count);
    }
}

/// A consumed record: where it came from and what it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// Milliseconds since the Unix epoch (the record's Kafka timestamp).
    pub timestamp_ms: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Headers,
}

/// A record to produce. Without a partition, the producer picks one from
/// the key with `murmur2_random`, as Java clients do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub topic: String,
    pub partition: Option<i32>,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Headers,
    /// Milliseconds since the epoch; `None` lets the runtime use the
    /// timestamp of the input (or timer) that produced it.
    pub timestamp_ms: Option<i64>,
}

impl Output {
    pub fn new(
        topic: impl Into<String>,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> Self {
        Self {
            topic: topic.into(),
            partition: None,
            key: Some(key.into()),
            value: Some(value.into()),
            headers: Headers::new(),
            timestamp_ms: None,
        }
    }

    /// A tombstone: deletes `key` from a compacted topic.
    pub fn tombstone(topic: impl Into<String>, key: impl Into<Vec<u8>>) -> Self {
        Self {
            value: None,
            ..Self::new(topic, key, Vec::new())
        }
    }

    pub fn header(mut self, name: impl Into<String>, value: impl Into<Vec<u8>>) -> Self {
        self.headers.insert(name, value);
        self
    }

    pub fn partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    pub fn timestamp_ms(mut self, timestamp_ms: i64) -> Self {
        self.timestamp_ms = Some(timestamp_ms);
        self
    }
}

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

/// Why a processor could not handle a record, timer or effect result.
/// Either way it is dead-lettered with the reason and processing goes on:
/// nothing is dropped silently, and one bad input does not stop a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessError {
    /// The bytes are not a value of the expected type.
    Decode(String),
    /// The value decoded but the processor cannot act on it.
    Invalid(String),
}

impl fmt::Display for ProcessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessError::Decode(reason) => write!(f, "cannot decode: {reason}"),
            ProcessError::Invalid(reason) => write!(f, "cannot process: {reason}"),
        }
    }
}

impl std::error::Error for ProcessError {}

/// A stream processor: plain code over records, state and timers.
///
/// One instance serves every partition assigned to the runtime instance;
/// keep state in the context's stores (they are per partition, restored from
/// their changelogs), not in fields. Fields are for configuration.
pub trait Processor: Send + 'static {
    /// Handles one record. Everything done through `ctx` (outputs, state,
    /// timers) commits atomically with the record's offset, or not at all.
    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError>;

    /// Handles a due timer, with the same atomicity as `process`.
    fn on_timer(&mut self, _ctx: &mut Context<'_>, _timer: &Timer) -> Result<(), ProcessError> {
        Ok(())
    }

    /// Handles the result of an effect this processor asked for.
    fn on_effect(
        &mut self,
        _ctx: &mut Context<'_>,
        _result: &crate::effects::EffectResult,
    ) -> Result<(), ProcessError> {
        Ok(())
    }
}

//! Records in and out: what a processor reads (`Record`), what it emits
//! (`Output`), their headers, and the header names the runtime itself
//! reads and writes. Plain data: no Kafka client type appears here.

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
    // A dead letter's headers: a contract with whoever reads the dead-letter topic (the
    // projections' dead-letters view), so they are defined beside the topic.
    pub use callstream_platform::topics::dead_letter::{
        DLQ_APP, DLQ_EFFECT_ID, DLQ_KIND, DLQ_REASON, DLQ_SOURCE, DLQ_TIMER_DOMAIN,
        DLQ_TIMER_DUE_MS, DLQ_TIMER_NAME,
    };
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

/// Fills the headers an output inherits from its cause (the input record;
/// none for a timer or an effect result) and its default timestamp, so a
/// chain of events keeps its causation, correlation and trace without each
/// processor copying them.
pub(crate) fn inherit_headers(output: &mut Output, cause: Option<&Headers>, timestamp_ms: i64) {
    use header::{CAUSATION_ID, CORRELATION_ID, EVENT_ID, TRACEPARENT};
    if output.timestamp_ms.is_none() {
        output.timestamp_ms = Some(timestamp_ms);
    }
    let Some(cause) = cause else { return };
    let cause_event = cause.get(EVENT_ID);
    if output.headers.get(CAUSATION_ID).is_none() {
        if let Some(id) = cause_event {
            output.headers.insert(CAUSATION_ID, id.to_vec());
        }
    }
    if output.headers.get(CORRELATION_ID).is_none() {
        if let Some(id) = cause.get(CORRELATION_ID).or(cause_event) {
            output.headers.insert(CORRELATION_ID, id.to_vec());
        }
    }
    if output.headers.get(TRACEPARENT).is_none() {
        if let Some(trace) = cause.get(TRACEPARENT) {
            output.headers.insert(TRACEPARENT, trace.to_vec());
        }
    }
}

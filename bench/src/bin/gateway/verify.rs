//! The loss check: every event id answered 202 must be on the call-events
//! topic, as a `read_committed` consumer reads it from offset 0 once the
//! gateway has stopped (and flushed). Records there that were never
//! answered 202 (a request the client gave up on that still landed) are
//! counted apart: they are allowed (the sender retries with the same id,
//! downstream dedupes), a missing 202 is not.
//!
//! The reader stops only once it has read every partition up to the end
//! offset the broker gave it before reading (or at the deadline), so a
//! `lost` above zero means the records are not in the log, never that the
//! reader gave up early; a read-back that could not reach the end fails
//! the benchmark as such, with how far it got.
//!
//! In a framing comparison it also counts the records whose value is not in
//! the framing the gateway was to write (`misframed`, which must be 0).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callstream_platform::KafkaSettings;
use rdkafka::consumer::Consumer;
use rdkafka::message::{BorrowedMessage, Headers};
use rdkafka::Message;
use tracing::{info, warn};
use uuid::Uuid;

use callstream_bench::framing::{self, Framing};
use callstream_bench::kafka::committed_reader;

/// What the topic held, against what was acknowledged.
#[derive(Debug, Default)]
pub struct Loss {
    /// Records read.
    pub records: u64,
    /// 202s whose event id is not on the topic.
    pub lost: u64,
    /// Distinct ids on the topic that were never answered 202.
    pub unacknowledged: u64,
    /// Records whose id was read before (a retried produce).
    pub duplicates: u64,
    /// Records without a readable `event-id` header.
    pub unreadable: u64,
    /// Records whose value is not in the framing expected (none expected: 0).
    pub misframed: u64,
    /// The acknowledged ids not on the topic (`lost` of them), so a caller can
    /// tell which of its levels they were answered in.
    pub missing: HashSet<u128>,
}

impl Loss {
    /// Fails when a record on the topic had no readable event id, or an
    /// acknowledged event is not on the topic.
    pub fn ensure_complete(&self) -> Result<()> {
        if self.unreadable > 0 {
            bail!(
                "{} records on the topic had no readable event-id header",
                self.unreadable
            );
        }
        if self.lost > 0 {
            bail!("{} acknowledged events are not on the topic", self.lost);
        }
        Ok(())
    }
}

/// Reads all of `topic` (to the end offsets taken before reading) and
/// matches it against `acknowledged`, within `timeout`; with `framing`,
/// checks every value is in it.
pub fn check(
    settings: &KafkaSettings,
    topic: &str,
    partitions: i32,
    acknowledged: &HashSet<u128>,
    timeout: Duration,
    framing: Option<Framing>,
) -> Result<Loss> {
    let reader = committed_reader(settings, topic, partitions, 100)?;
    // The gateway has flushed and stopped: nothing is added after this.
    let mut ranges = Vec::with_capacity(usize::try_from(partitions).unwrap_or(0));
    for partition in 0..partitions {
        let (low, high) = reader
            .fetch_watermarks(topic, partition, Duration::from_secs(10))
            .with_context(|| format!("end offsets of {topic} [{partition}]"))?;
        ranges.push((low, high));
    }
    // The next offset to read in each partition.
    let mut next: Vec<i64> = ranges.iter().map(|(low, _)| *low).collect();
    let in_log: i64 = ranges.iter().map(|(low, high)| high - low).sum();
    let done = |next: &[i64]| next.iter().zip(&ranges).all(|(n, (_, high))| n >= high);

    let mut seen: HashSet<u128> = HashSet::with_capacity(acknowledged.len());
    let mut loss = Loss::default();
    let mut found: usize = 0;
    let deadline = Instant::now() + timeout;
    let mut last_progress = Instant::now();
    while !done(&next) {
        if Instant::now() >= deadline {
            let short: Vec<(usize, i64, i64)> = next
                .iter()
                .zip(&ranges)
                .enumerate()
                .filter(|(_, (n, (_, high)))| n < &high)
                .map(|(p, (n, (_, high)))| (p, *n, *high))
                .collect();
            bail!(
                "the read-back stopped at its deadline before the end of the log \
                 (read {} of {in_log} records; partition, next offset, end: {short:?}); \
                 no loss can be concluded",
                loss.records
            );
        }
        match reader.poll(Duration::from_millis(100)) {
            None => {}
            Some(Err(error)) => warn!(%error, "reader error"),
            Some(Ok(message)) => {
                if let Some(n) = usize::try_from(message.partition())
                    .ok()
                    .and_then(|p| next.get_mut(p))
                {
                    *n = (*n).max(message.offset() + 1);
                }
                loss.records += 1;
                if let Some(framing) = framing {
                    let value = message.payload().unwrap_or_default();
                    if framing::check_written(framing, value).is_err() {
                        loss.misframed += 1;
                    }
                }
                match event_id(&message) {
                    None => loss.unreadable += 1,
                    Some(id) if !seen.insert(id) => loss.duplicates += 1,
                    Some(id) if acknowledged.contains(&id) => found += 1,
                    Some(_) => loss.unacknowledged += 1,
                }
            }
        }
        if last_progress.elapsed() >= Duration::from_secs(5) {
            last_progress = Instant::now();
            info!(
                read = loss.records,
                in_log, found, "reading call-events back"
            );
        }
    }
    loss.lost = (acknowledged.len() - found) as u64;
    if loss.lost > 0 {
        loss.missing = acknowledged
            .iter()
            .filter(|id| !seen.contains(id))
            .copied()
            .collect();
        let missing: Vec<String> = loss
            .missing
            .iter()
            .take(10)
            .map(|id| Uuid::from_u128(*id).to_string())
            .collect();
        warn!(
            lost = loss.lost,
            ?missing,
            in_log,
            read = loss.records,
            "acknowledged event ids missing from the whole log"
        );
    }
    Ok(loss)
}

/// The record's `event-id` header, if it holds a UUID.
fn event_id(message: &BorrowedMessage<'_>) -> Option<u128> {
    let headers = message.headers()?;
    let header = headers.iter().find(|h| h.key == "event-id")?;
    let text = std::str::from_utf8(header.value?).ok()?;
    Uuid::parse_str(text).ok().map(|id| id.as_u128())
}

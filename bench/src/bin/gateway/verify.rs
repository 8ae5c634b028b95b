//! The loss check: every event id answered 202 must be on the call-events
//! topic, as a `read_committed` consumer reads it from offset 0 once the
//! gateway has stopped (and flushed). Records there that were never
//! answered 202 (a request the client gave up on that still landed) are
//! counted apart: they are allowed (the sender retries with the same id,
//! downstream dedupes), a missing 202 is not.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::Result;
use callstream_platform::KafkaSettings;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Headers;
use rdkafka::Message;
use tracing::{info, warn};
use uuid::Uuid;

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
}

/// How long to keep reading once every acknowledged id was seen, for extras.
const DRAIN: Duration = Duration::from_secs(1);

/// Reads `topic` until every id in `acknowledged` is seen (then a little
/// longer) or `timeout` passes.
pub fn check(
    settings: &KafkaSettings,
    topic: &str,
    partitions: i32,
    acknowledged: &HashSet<u128>,
    timeout: Duration,
) -> Result<Loss> {
    let reader = committed_reader(settings, topic, partitions, 100)?;
    let mut seen: HashSet<u128> = HashSet::with_capacity(acknowledged.len());
    let mut loss = Loss::default();
    let mut found: usize = 0;
    let deadline = Instant::now() + timeout;
    let mut drain_until: Option<Instant> = None;
    let mut last_progress = Instant::now();
    loop {
        let now = Instant::now();
        if now >= deadline || drain_until.is_some_and(|d| now >= d) {
            break;
        }
        read_some(&reader, &mut |id| {
            loss.records += 1;
            match id {
                None => loss.unreadable += 1,
                Some(id) if !seen.insert(id) => loss.duplicates += 1,
                Some(id) if acknowledged.contains(&id) => found += 1,
                Some(_) => loss.unacknowledged += 1,
            }
        });
        if found >= acknowledged.len() && drain_until.is_none() {
            drain_until = Some(Instant::now() + DRAIN);
        }
        if last_progress.elapsed() >= Duration::from_secs(5) {
            last_progress = Instant::now();
            info!(
                found,
                expected = acknowledged.len(),
                "reading call-events back"
            );
        }
    }
    loss.lost = (acknowledged.len() - found) as u64;
    if loss.lost > 0 {
        let missing: Vec<String> = acknowledged
            .iter()
            .filter(|id| !seen.contains(id))
            .take(10)
            .map(|id| Uuid::from_u128(*id).to_string())
            .collect();
        warn!(
            lost = loss.lost,
            ?missing,
            "acknowledged event ids missing from the topic"
        );
        // Tells a reader that stopped short from records that never got there.
        let mut in_log: i64 = 0;
        for partition in 0..partitions {
            match reader.fetch_watermarks(topic, partition, Duration::from_secs(5)) {
                Ok((low, high)) => in_log += high - low,
                Err(error) => warn!(partition, %error, "no watermarks"),
            }
        }
        warn!(
            in_log,
            read = loss.records,
            "records in the log by its watermarks, and read"
        );
    }
    Ok(loss)
}

/// Reads what is there (waiting briefly for the first record), passing
/// each record's event id to `each`.
fn read_some(reader: &BaseConsumer, each: &mut impl FnMut(Option<u128>)) {
    let mut wait = Duration::from_millis(100);
    for _ in 0..10_000 {
        match reader.poll(wait) {
            Some(Ok(message)) => {
                let id = message.headers().and_then(|headers| {
                    let header = headers.iter().find(|h| h.key == "event-id")?;
                    let text = std::str::from_utf8(header.value?).ok()?;
                    Uuid::parse_str(text).ok().map(|id| id.as_u128())
                });
                each(id);
            }
            Some(Err(error)) => {
                warn!(%error, "reader error");
                break;
            }
            None => break,
        }
        wait = Duration::ZERO;
    }
}

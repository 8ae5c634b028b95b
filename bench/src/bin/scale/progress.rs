//! How far each processor's group has come: the offsets it committed (in its transactions)
//! against the ends of its input partitions, read from the brokers as any lag monitor does.
//! A processor has drained its backlog when its committed offsets reach the ends.
//!
//! Offsets, not records: a transactional input (`schedule-requests`, which the contact
//! processor writes) also holds one marker per partition and transaction, which these counts
//! include (about one in a hundred offsets at these rates).

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use callstream_platform::kafka::{read_spans, Span, SpansRead};
use callstream_platform::{KafkaSettings, Topics};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use crate::fleet::Proc;

const TIMEOUT: Duration = Duration::from_secs(30);

/// Reads one processor group's position.
pub struct Probe {
    proc: Proc,
    inputs: Vec<String>,
    partitions: i32,
    /// A client of the group that never joins it: it only asks for the committed offsets.
    consumer: BaseConsumer,
}

/// A processor group's committed offsets and the ends of its inputs, per input partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Position {
    pub committed: Vec<i64>,
    pub end: Vec<i64>,
}

impl Position {
    pub fn committed(&self) -> i64 {
        self.committed.iter().sum()
    }

    pub fn lag(&self) -> i64 {
        self.committed
            .iter()
            .zip(&self.end)
            .map(|(c, e)| (e - c).max(0))
            .sum()
    }

    /// Settled: nothing committed since `before`, taken a moment earlier. With lag left, the
    /// offsets past the committed ones may all be transaction markers (a processor commits
    /// the offset after the last record it handled, and every commit and abort leaves a
    /// marker after it): [`Probe::drained`] looks.
    pub fn settled_since(&self, before: &Position) -> bool {
        self.committed == before.committed
    }
}

impl Probe {
    pub fn new(settings: &KafkaSettings, topics: &Topics, proc: Proc) -> Result<Self> {
        // read_uncommitted: a read_committed client's offset fetch waits (`require_stable`)
        // while a transaction with offsets is open, up to the transaction timeout after an
        // instance is SIGKILLed; the probe wants the committed offsets as they stand.
        let consumer = settings
            .consumer_config(&proc.group(topics))
            .set("isolation.level", "read_uncommitted")
            .create()
            .context("creating an offsets probe")?;
        Ok(Self {
            proc,
            inputs: proc.inputs(topics),
            partitions: topics.partitions,
            consumer,
        })
    }

    pub fn proc(&self) -> Proc {
        self.proc
    }

    /// The group's position, asked again (for a minute) while a broker is not the
    /// coordinator or leader it was.
    pub fn position(&self) -> Result<Position> {
        let started = Instant::now();
        loop {
            match self.try_position() {
                Ok(position) => return Ok(position),
                Err(e) if started.elapsed() < Duration::from_secs(60) => {
                    tracing::debug!(error = %format!("{e:#}"), "asking for the position again");
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether the group has handled every record of its inputs: settled since `before`, and
    /// nothing but transaction markers after its committed offsets (read `read_committed`
    /// from there to the ends).
    pub fn drained(
        &self,
        settings: &KafkaSettings,
        now: &Position,
        before: &Position,
    ) -> Result<bool> {
        if !now.settled_since(before) {
            return Ok(false);
        }
        if now.lag() == 0 {
            return Ok(true);
        }
        let consumer: BaseConsumer = settings
            .consumer_config(&crate::unique("scale-peek"))
            .create()
            .context("creating a reader")?;
        let mut spans = Vec::new();
        let mut at = 0;
        for topic in &self.inputs {
            for partition in 0..self.partitions {
                let (committed, end) = (now.committed[at], now.end[at]);
                at += 1;
                if committed < end {
                    spans.push(Span {
                        topic: topic.clone(),
                        partition,
                        from: Offset::Offset(committed),
                        end,
                    });
                }
            }
        }
        // A record past the committed offsets is one the group has yet to handle.
        let read = read_spans(&consumer, &spans, TIMEOUT, |_| ControlFlow::Break(()))?;
        Ok(read == SpansRead::Ended)
    }

    fn try_position(&self) -> Result<Position> {
        let mut list = TopicPartitionList::new();
        let mut end = Vec::new();
        for topic in &self.inputs {
            for partition in 0..self.partitions {
                list.add_partition(topic, partition);
                let (_, high) = self
                    .consumer
                    .fetch_watermarks(topic, partition, TIMEOUT)
                    .with_context(|| format!("the end of {topic}/{partition}"))?;
                end.push(high);
            }
        }
        let committed = self
            .consumer
            .committed_offsets(list, TIMEOUT)
            .context("the group's committed offsets")?
            .elements()
            .iter()
            .map(|e| match e.offset() {
                Offset::Offset(o) => o,
                // Nothing committed yet: from the start (every topic here begins at 0).
                _ => 0,
            })
            .collect();
        Ok(Position { committed, end })
    }
}

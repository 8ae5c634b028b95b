//! Reads `call-launches` as downstream sees it (`read_committed`) and
//! keeps, per launch of this run, when its first non-`ambiguous` status
//! became visible and what it was: that is when the launch is decided.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::Result;
use callstream_platform::KafkaSettings;
use callstream_schemas::{CallLaunch, Event, LaunchStatus};
use rdkafka::consumer::BaseConsumer;
use rdkafka::Message;
use tracing::warn;

use callstream_bench::kafka::committed_reader;

/// The decided launches seen so far.
pub struct Outcomes {
    reader: BaseConsumer,
    run: u64,
    /// By launch number `n`: when it was decided, and how.
    pub decided: HashMap<u64, (Instant, LaunchStatus)>,
    /// Decisions by status.
    pub by_status: BTreeMap<String, u64>,
    /// A second decision for an already decided launch (must stay 0).
    pub redecided: u64,
    /// `ambiguous` reports (reconciliation followed).
    pub ambiguous: u64,
    /// Records that did not decode.
    pub undecodable: u64,
}

impl Outcomes {
    pub fn new(settings: &KafkaSettings, topic: &str, partitions: i32, run: u64) -> Result<Self> {
        Ok(Self {
            // A short fetch wait: the visible time is the latency's end.
            reader: committed_reader(settings, topic, partitions, 5)?,
            run,
            decided: HashMap::new(),
            by_status: BTreeMap::new(),
            redecided: 0,
            ambiguous: 0,
            undecodable: 0,
        })
    }

    /// Reads what is there, waiting at most `wait` for the first record.
    pub fn read_some(&mut self, wait: Duration) {
        let mut timeout = wait;
        // Bounded, so the caller's clock checks still run under a flood.
        for _ in 0..10_000 {
            match self.reader.poll(timeout) {
                Some(Ok(message)) => {
                    let at = Instant::now();
                    match CallLaunch::decode(message.payload().unwrap_or_default()) {
                        Ok(launch) => self.record(&launch, at),
                        Err(_) => self.undecodable += 1,
                    }
                }
                Some(Err(error)) => {
                    warn!(%error, "reader error");
                    break;
                }
                None => break,
            }
            timeout = Duration::ZERO;
        }
    }

    fn record(&mut self, launch: &CallLaunch, at: Instant) {
        let (run, n) = launch.launch_id.as_u64_pair();
        if run != self.run {
            return;
        }
        if launch.status == LaunchStatus::Ambiguous {
            self.ambiguous += 1;
            return;
        }
        if self.decided.contains_key(&n) {
            self.redecided += 1;
            return;
        }
        self.decided.insert(n, (at, launch.status));
        let status = format!("{:?}", launch.status).to_lowercase();
        *self.by_status.entry(status).or_default() += 1;
    }

    /// How many launches are decided.
    pub fn count(&self) -> u64 {
        self.decided.len() as u64
    }

    /// Decided launches that were not `accepted` (with no faults, all should be).
    pub fn not_accepted(&self) -> u64 {
        self.decided
            .values()
            .filter(|(_, s)| *s != LaunchStatus::Accepted)
            .count() as u64
    }
}

//! How one engine instance runs: the processing guarantee and every knob of
//! `RuntimeConfig`, with defaults that suit a small development cluster.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use callstream_platform::KafkaSettings;

use super::effects::EffectRunner;
use crate::clock::Clock;
use crate::commit::CommitPolicy;
use crate::metrics::RuntimeMetrics;

/// The processing guarantee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarantee {
    /// Outputs, changelog writes and offsets commit in one transaction.
    ExactlyOnce,
    /// Outputs and changelog writes are flushed, then offsets committed: a
    /// crash in between repeats records. For benchmarks and comparisons.
    AtLeastOnce,
}

/// How one instance runs.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub kafka: KafkaSettings,
    /// Stable per instance (e.g. `0`, `1`, a pod ordinal): the producer's
    /// `transactional.id` is `<app>-<instance>`, so a restarted instance
    /// fences its predecessor and aborts what it left open.
    pub instance_id: String,
    pub commit: CommitPolicy,
    pub guarantee: Guarantee,
    /// How long an open transaction may live before the broker aborts it;
    /// it bounds how long a crashed instance's open transaction holds back
    /// readers of its partitions.
    pub transaction_timeout: Duration,
    /// Settings of the changelog topics the runtime creates.
    pub changelog_replication_factor: i32,
    pub changelog_min_insync_replicas: i32,
    /// How long the group waits for a silent instance before moving its
    /// partitions (`session.timeout.ms`).
    pub session_timeout: Duration,
    /// Static group membership (`group.instance.id` = the transactional id):
    /// an instance that restarts within the session timeout gets its
    /// partitions back without a rebalance of the whole group.
    pub static_membership: bool,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<RuntimeMetrics>,
    /// Runs the effects processors ask for; `None` for processors without.
    pub effects: Option<EffectRunner>,
    /// Set it to stop: the open transaction commits, then `run` returns.
    pub shutdown: Arc<AtomicBool>,
    /// Asked before each input record is handled (a schema registry's fetch of a writer
    /// schema this process does not know yet); `None` hands records over as they come.
    pub value_gate: Option<Arc<dyn ValueGate>>,
}

/// What must happen before a record's value can be read, done on the event loop's thread
/// (it blocks the loop: the record cannot be handled before, nor those behind it).
pub trait ValueGate: Send + Sync + std::fmt::Debug {
    /// Returns once the value can be handled (`true`), or `false` when `stop` was set while
    /// waiting: the record is then left unhandled, its offset not committed.
    fn admit(&self, value: &[u8], stop: &AtomicBool) -> bool;
}

impl RuntimeConfig {
    pub fn new(kafka: KafkaSettings, app_id: &str, instance_id: impl Into<String>) -> Self {
        Self {
            kafka,
            instance_id: instance_id.into(),
            commit: CommitPolicy::default(),
            guarantee: Guarantee::ExactlyOnce,
            transaction_timeout: Duration::from_secs(60),
            changelog_replication_factor: 1,
            changelog_min_insync_replicas: 1,
            session_timeout: Duration::from_secs(10),
            static_membership: true,
            clock: callstream_platform::clock::process_clock(),
            metrics: Arc::new(RuntimeMetrics::new(app_id)),
            effects: None,
            shutdown: Arc::new(AtomicBool::new(false)),
            value_gate: None,
        }
    }

    /// Replicates the changelogs and the dead-letter topic as the deployment's topics are
    /// (`CALLSTREAM_REPLICATION_FACTOR`, `CALLSTREAM_MIN_INSYNC_REPLICAS`: 3 and 2 on a
    /// cluster).
    pub fn replicate_like(&mut self, topics: &callstream_platform::Topics) {
        self.changelog_replication_factor = topics.replication_factor;
        self.changelog_min_insync_replicas = topics.min_insync_replicas;
    }
}

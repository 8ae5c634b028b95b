//! The Kafka engine: one consumer group over the inputs (read_committed, no
//! auto-commit), one transactional producer, and a loop on its own thread
//! (rdkafka's transaction calls block) that commits outputs, changelog
//! writes and offsets together.

mod core;
mod rebalance;
mod restore;
mod setup;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use callstream_platform::KafkaSettings;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers as _, Message};
use rdkafka::producer::{Producer, ThreadedProducer};
use tracing::{info, warn};

use crate::api::{Headers, Processor, Record};
use crate::clock::{Clock, SystemClock};
use crate::commit::CommitPolicy;
use crate::error::RuntimeError;
use crate::metrics::RuntimeMetrics;
use crate::spec::ProcessorSpec;

use self::core::Core;
use self::rebalance::EngineContext;
use self::restore::Restorer;

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
    /// Set it to stop: the open transaction commits, then `run` returns.
    pub shutdown: Arc<AtomicBool>,
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
            clock: Arc::new(SystemClock),
            metrics: Arc::new(RuntimeMetrics::new(app_id)),
            shutdown: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Runs `processor` until `config.shutdown` is set or a fatal error occurs.
/// Blocks the calling thread: call it from a thread of its own (or
/// `tokio::task::spawn_blocking`).
pub fn run<P: Processor>(
    mut processor: P,
    spec: ProcessorSpec,
    config: RuntimeConfig,
) -> Result<(), RuntimeError> {
    let partitions = setup::prepare_topics(&spec, &config)?;
    info!(app = %spec.app_id, partitions, inputs = ?spec.inputs, "starting processor");

    let client_error = |source| RuntimeError::Client {
        app: spec.app_id.clone(),
        source,
    };
    let transactional_id = format!("{}-{}", spec.app_id, config.instance_id);
    let producer: ThreadedProducer<_> = match config.guarantee {
        Guarantee::ExactlyOnce => {
            let mut producer_config = config
                .kafka
                .transactional_producer_config(&transactional_id);
            producer_config.set(
                "transaction.timeout.ms",
                config.transaction_timeout.as_millis().to_string(),
            );
            let producer: ThreadedProducer<_> = producer_config.create().map_err(client_error)?;
            producer
                .init_transactions(Duration::from_secs(30))
                .map_err(|source| RuntimeError::Fatal {
                    app: spec.app_id.clone(),
                    source,
                })?;
            producer
        }
        Guarantee::AtLeastOnce => config
            .kafka
            .producer_config()
            .create()
            .map_err(client_error)?,
    };

    let core = Arc::new(Mutex::new(Core::new(
        producer,
        spec.clone(),
        config.clone(),
    )));
    let mut consumer_config = config.kafka.consumer_config(&spec.app_id);
    // Co-partitioned inputs must land on the same instance, partition for
    // partition. librdkafka's cooperative-sticky assignor does not promise
    // that across topics; the range assignor does (equal partition counts,
    // same subscription). One input: cooperative-sticky, which moves only
    // the partitions that must move.
    let strategy = if spec.inputs.len() > 1 {
        "range"
    } else {
        "cooperative-sticky"
    };
    consumer_config
        .set("partition.assignment.strategy", strategy)
        .set("statistics.interval.ms", "5000")
        .set(
            "session.timeout.ms",
            config.session_timeout.as_millis().to_string(),
        );
    if config.static_membership {
        consumer_config.set("group.instance.id", &transactional_id);
    }
    let consumer: BaseConsumer<EngineContext> = consumer_config
        .create_with_context(EngineContext::new(core.clone(), config.metrics.clone()))
        .map_err(client_error)?;
    let inputs: Vec<&str> = spec.inputs.iter().map(String::as_str).collect();
    consumer.subscribe(&inputs).map_err(client_error)?;
    let restorer = Restorer::new(&spec, &config).map_err(client_error)?;

    let result = event_loop(&mut processor, &consumer, &core, &restorer, &config);
    let finish = lock(&core).commit(&consumer);
    consumer.unsubscribe();
    drop(consumer);
    info!(app = %spec.app_id, "processor stopped");
    result.and(finish)
}

fn lock(core: &Mutex<Core>) -> std::sync::MutexGuard<'_, Core> {
    // A panic while the lock was held poisoned it; the state inside is still
    // the best we have and the transaction will be aborted by the broker.
    core.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Most records handled between two checks of timers and commit.
const MAX_BATCH: usize = 2_000;

fn event_loop<P: Processor>(
    processor: &mut P,
    consumer: &BaseConsumer<EngineContext>,
    core: &Mutex<Core>,
    restorer: &Restorer,
    config: &RuntimeConfig,
) -> Result<(), RuntimeError> {
    while !config.shutdown.load(Ordering::SeqCst) {
        let pending = lock(core).take_pending_restore();
        if !pending.is_empty() {
            let started = Instant::now();
            let tasks = restorer.restore(&pending)?;
            config
                .metrics
                .restore_seconds
                .observe(started.elapsed().as_secs_f64());
            lock(core).install(tasks, consumer);
        }
        let wait = lock(core).poll_timeout(config.clock.now_ms());
        let mut wait = wait;
        for _ in 0..MAX_BATCH {
            match consumer.poll(wait) {
                None => break,
                Some(Err(error)) => {
                    warn!(%error, "consumer error");
                    break;
                }
                Some(Ok(message)) => {
                    let record = to_record(&message);
                    lock(core).handle(processor, record, config.clock.now_ms());
                }
            }
            wait = Duration::ZERO;
        }
        let mut core = lock(core);
        core.fire_timers(processor, config.clock.now_ms());
        core.maybe_commit(consumer);
        core.take_fatal()?;
    }
    Ok(())
}

fn to_record<M: Message>(message: &M) -> Record {
    let mut headers = Headers::new();
    if let Some(kafka_headers) = message.headers() {
        for header in kafka_headers.iter() {
            headers.append(header.key, header.value.unwrap_or_default().to_vec());
        }
    }
    Record {
        topic: message.topic().to_string(),
        partition: message.partition(),
        offset: message.offset(),
        timestamp_ms: message.timestamp().to_millis().unwrap_or_default(),
        key: message.key().map(<[u8]>::to_vec),
        value: message.payload().map(<[u8]>::to_vec),
        headers,
    }
}

//! The Kafka engine: one consumer group over the inputs (read_committed, no
//! auto-commit), one transactional producer, and a loop on its own thread
//! (rdkafka's transaction calls block) that commits outputs, changelog
//! writes and offsets together.

mod core;
mod rebalance;
mod restore;
mod setup;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use callstream_platform::KafkaSettings;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers as _, Message};
use rdkafka::producer::{Producer, ProducerContext, ThreadedProducer};
use tracing::{error, info, warn};

use crate::api::{Processor, Record};
use crate::clock::{Clock, SystemClock};
use crate::commit::CommitPolicy;
use crate::effects::{EffectHandler, EffectRequest, EffectResult};
use crate::error::RuntimeError;
use crate::metrics::RuntimeMetrics;
use crate::spec::ProcessorSpec;

use self::core::Core;
use self::rebalance::EngineContext;
use self::restore::{GlobalReader, Restorer};

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
            effects: None,
            shutdown: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// An effect handler and how many of its effects may run at once.
#[derive(Clone)]
pub struct EffectRunner {
    pub handler: Arc<dyn EffectHandler>,
    pub concurrency: usize,
}

impl std::fmt::Debug for EffectRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EffectRunner")
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

/// Runs effects on a small async executor of the engine's own and sends
/// their results back to the event loop.
struct EffectExecutor {
    runtime: tokio::runtime::Runtime,
    runner: Option<EffectRunner>,
    permits: Arc<tokio::sync::Semaphore>,
    results_tx: std::sync::mpsc::Sender<EffectResult>,
    results: std::sync::mpsc::Receiver<EffectResult>,
    in_flight: Arc<AtomicUsize>,
}

impl EffectExecutor {
    fn new(runner: Option<EffectRunner>) -> std::io::Result<Self> {
        let (results_tx, results) = std::sync::mpsc::channel();
        let concurrency = runner.as_ref().map_or(1, |r| r.concurrency.max(1));
        Ok(Self {
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("effects")
                .enable_all()
                .build()?,
            runner,
            permits: Arc::new(tokio::sync::Semaphore::new(concurrency)),
            results_tx,
            results,
            in_flight: Arc::new(AtomicUsize::new(0)),
        })
    }

    fn start(&self, app_id: &str, requests: Vec<EffectRequest>) {
        let Some(runner) = &self.runner else {
            if !requests.is_empty() {
                warn!(
                    app = app_id,
                    count = requests.len(),
                    "effects asked for, but no effect handler is configured; dropped"
                );
            }
            return;
        };
        for request in requests {
            let handler = runner.handler.clone();
            let permits = self.permits.clone();
            let results = self.results_tx.clone();
            let in_flight = self.in_flight.clone();
            in_flight.fetch_add(1, Ordering::SeqCst);
            self.runtime.spawn(async move {
                // The semaphore is never closed, so acquiring only waits.
                let _permit = permits.acquire_owned().await;
                let payload = handler.call(request.clone()).await;
                let _ = results.send(EffectResult { request, payload });
                in_flight.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }

    fn busy(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) > 0
    }
}

/// How long one `init_transactions` call may block, and how long the runtime keeps retrying.
const INIT_TRANSACTIONS_TIMEOUT: Duration = Duration::from_secs(30);
const INIT_TRANSACTIONS_GIVE_UP: Duration = Duration::from_secs(300);

/// `init_transactions`, retried while its error is retriable (as librdkafka's
/// `examples/transactions.c` and Kafka Streams do): on a new cluster the first
/// producer's call can time out while the broker creates and loads
/// `__transaction_state`, and a busy broker can be slow to answer. Gives up after
/// [`INIT_TRANSACTIONS_GIVE_UP`] or when shutdown is asked for.
fn init_transactions<C: ProducerContext>(
    producer: &ThreadedProducer<C>,
    app: &str,
    shutdown: &AtomicBool,
) -> Result<(), KafkaError> {
    let started = Instant::now();
    loop {
        match producer.init_transactions(INIT_TRANSACTIONS_TIMEOUT) {
            Err(KafkaError::Transaction(e))
                if e.is_retriable()
                    && started.elapsed() < INIT_TRANSACTIONS_GIVE_UP
                    && !shutdown.load(Ordering::Relaxed) =>
            {
                warn!(%app, error = %e, waited_s = started.elapsed().as_secs(),
                    "init_transactions retriable; retrying");
                std::thread::sleep(Duration::from_secs(1));
            }
            other => return other,
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
    let prepared = setup::prepare_topics(&spec, &config)?;
    let partitions = prepared.partitions;
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
            init_transactions(&producer, &spec.app_id, &config.shutdown).map_err(|source| {
                RuntimeError::Fatal {
                    app: spec.app_id.clone(),
                    source,
                }
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
    let globals = GlobalReader::start(&spec, &config, &prepared.counts, &mut lock(&core).globals)?;
    let executor =
        EffectExecutor::new(config.effects.clone()).map_err(|e| RuntimeError::Setup {
            app: spec.app_id.clone(),
            reason: format!("cannot start the effect executor: {e}"),
        })?;
    let parts = LoopParts {
        consumer: &consumer,
        core: &core,
        restorer: &restorer,
        globals: globals.as_ref(),
        executor: &executor,
        config: &config,
        app_id: &spec.app_id,
    };

    let result = event_loop(&mut processor, &parts);
    let finish = match result {
        Ok(()) => lock(&core).commit(&consumer),
        // After a fatal error (fenced, most likely) nothing may commit: the
        // successor owns these partitions now. Abort what is open, if the
        // producer still can, and report the error.
        Err(_) => {
            lock(&core).abort();
            Ok(())
        }
    };
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

/// What the event loop works with.
struct LoopParts<'a> {
    consumer: &'a BaseConsumer<EngineContext>,
    core: &'a Mutex<Core>,
    restorer: &'a Restorer,
    globals: Option<&'a GlobalReader>,
    executor: &'a EffectExecutor,
    config: &'a RuntimeConfig,
    app_id: &'a str,
}

/// How long the loop waits for records while effects are out, so their
/// results are picked up promptly.
const EFFECT_POLL: Duration = Duration::from_millis(5);

fn event_loop<P: Processor>(processor: &mut P, parts: &LoopParts<'_>) -> Result<(), RuntimeError> {
    let LoopParts {
        consumer,
        core,
        restorer,
        globals,
        executor,
        config,
        app_id,
    } = *parts;
    // One record, refilled for every input: its buffers are reused.
    let mut record = Record::default();
    while !config.shutdown.load(Ordering::SeqCst) {
        // One span per turn of the loop (a batch and the commit it may end
        // with), so every log line carries the processor's name.
        let _batch = tracing::debug_span!("batch", app = app_id).entered();
        if let Some(reader) = globals {
            reader.poll(&mut lock(core).globals);
        }
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
        let mut wait = lock(core).poll_timeout(config.clock.now_ms());
        if executor.busy() {
            wait = wait.min(EFFECT_POLL);
        }
        for _ in 0..MAX_BATCH {
            match consumer.poll(wait) {
                None => break,
                // A fatal consumer error (a static member fenced by another
                // instance with our group.instance.id) never clears: polling on
                // would spin forever. Exit for the supervisor to restart us.
                Some(Err(error @ KafkaError::MessageConsumptionFatal(_))) => {
                    error!(app = app_id, %error, "fatal consumer error; the process must restart");
                    return Err(RuntimeError::Fatal {
                        app: app_id.to_string(),
                        source: error,
                    });
                }
                Some(Err(error)) => {
                    warn!(%error, "consumer error");
                    break;
                }
                Some(Ok(message)) => {
                    fill_record(&message, &mut record);
                    lock(core).handle(processor, &record, config.clock.now_ms());
                }
            }
            wait = Duration::ZERO;
        }
        let mut core = lock(core);
        while let Ok(result) = executor.results.try_recv() {
            core.complete_effect(processor, result, config.clock.now_ms());
        }
        core.fire_timers(processor, config.clock.now_ms());
        core.maybe_commit(consumer);
        core.take_fatal()?;
        executor.start(app_id, core.take_ready_effects());
    }
    Ok(())
}

/// Copies `message` into `record`, reusing the record's buffers (a topic
/// name, key, value and headers per input were most of the engine's
/// allocations).
fn fill_record<M: Message>(message: &M, record: &mut Record) {
    let headers = message.headers();
    let headers = headers
        .iter()
        .flat_map(|h| h.iter())
        .map(|h| (h.key, h.value.unwrap_or_default()));
    record.headers.refill(headers);
    record.topic.clear();
    record.topic.push_str(message.topic());
    record.partition = message.partition();
    record.offset = message.offset();
    record.timestamp_ms = message.timestamp().to_millis().unwrap_or_default();
    refill_bytes(&mut record.key, message.key());
    refill_bytes(&mut record.value, message.payload());
}

fn refill_bytes(buffer: &mut Option<Vec<u8>>, bytes: Option<&[u8]>) {
    match (buffer.as_mut(), bytes) {
        (Some(buffer), Some(bytes)) => {
            buffer.clear();
            buffer.extend_from_slice(bytes);
        }
        (None, Some(bytes)) => *buffer = Some(bytes.to_vec()),
        // Kept as an empty buffer would read as an empty key: it must be `None`.
        (_, None) => *buffer = None,
    }
}

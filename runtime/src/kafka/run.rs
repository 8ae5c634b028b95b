//! Starting and stopping the engine: checks the processor's stores and the
//! topics (refusing to start with the reason), makes the transactional
//! producer (fencing any predecessor with the same transactional id), the
//! group consumer, the restorer and the global tables, runs the event loop,
//! and on the way out commits the open transaction, or aborts it after a
//! fatal error (a successor may own the partitions by then).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{Producer, ProducerContext, ThreadedProducer};
use tracing::{info, warn};

use super::config::{Guarantee, RuntimeConfig};
use super::core::{lock, Core};
use super::effects::EffectExecutor;
use super::event_loop::{event_loop, LoopParts};
use super::rebalance::EngineContext;
use super::restore::{GlobalReader, Restorer};
use super::setup;
use crate::api::Processor;
use crate::error::RuntimeError;
use crate::spec::ProcessorSpec;

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

/// How many times in [`REPLACEMENT_WINDOW`] the runtime replaces clients the cluster refused
/// before it gives up and exits for the supervisor.
/// Few enough that two instances fencing each other (the same `group.instance.id` twice, a
/// deployment's mistake that looks the same to the consumer) give up within a minute.
const MAX_REPLACEMENTS: usize = 5;
const REPLACEMENT_WINDOW: Duration = Duration::from_secs(600);
/// How long new clients' start-up checks are retried after a replacement (the brokers that
/// answered them may all be down for a while) before the refusal ends `run`.
const SETTLE_GIVE_UP: Duration = Duration::from_secs(300);

/// Runs `processor` until `config.shutdown` is set or a fatal error occurs.
/// Blocks the calling thread: call it from a thread of its own (or
/// `tokio::task::spawn_blocking`).
///
/// Fatal errors that are the cluster's state after a broker's loss rather than a successor
/// with our ids ([`RuntimeError::is_replaceable`]) are survived in-process. Two were seen
/// under broker death: librdkafka fencing its own static member when a group coordinator
/// dies (a JoinGroup it resends to the new coordinator registers a new member id for our
/// `group.instance.id`, and the old one is then refused: `FENCED_INSTANCE_ID`), and a new
/// transaction coordinator refusing to end a transaction whose state it lost
/// (`INVALID_TXN_STATE`). As Kafka Streams replaces a stream thread, the runtime then drops
/// its clients and starts again with new ones: the new producer's `init_transactions`
/// aborts whatever the old one left open, the consumer resumes from the committed offsets
/// and the state is restored from the changelogs, so nothing is lost or repeated. The
/// replacements are bounded ([`MAX_REPLACEMENTS`] in [`REPLACEMENT_WINDOW`]); after that the
/// error ends `run`, for the supervisor.
pub fn run<P: Processor>(
    mut processor: P,
    spec: ProcessorSpec,
    config: RuntimeConfig,
) -> Result<(), RuntimeError> {
    let mut replacements: Vec<Instant> = Vec::new();
    // When the last clients were given up for new ones: their start-up checks passed
    // before, so new ones failing them is the cluster still settling, waited out.
    let mut replacing_since: Option<Instant> = None;
    loop {
        let error = match run_clients(&mut processor, &spec, &config) {
            Err(error @ RuntimeError::Setup { .. })
                if replacing_since.is_some_and(|at| at.elapsed() < SETTLE_GIVE_UP)
                    && !config.shutdown.load(Ordering::SeqCst) =>
            {
                warn!(app = %spec.app_id, %error,
                    "new clients cannot start yet (the cluster is settling); trying again");
                std::thread::sleep(Duration::from_secs(2));
                continue;
            }
            Err(error) if error.is_replaceable() => error,
            other => return other,
        };
        replacing_since = Some(Instant::now());
        replacements.retain(|at| at.elapsed() < REPLACEMENT_WINDOW);
        if replacements.len() >= MAX_REPLACEMENTS || config.shutdown.load(Ordering::SeqCst) {
            return Err(error);
        }
        replacements.push(Instant::now());
        config.metrics.client_replacements.inc();
        warn!(app = %spec.app_id, %error, replaced = replacements.len(),
            "the cluster refused these clients after losing their state; replacing them");
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// One life of the runtime's clients: made, run until shutdown or a fatal error, dropped.
fn run_clients<P: Processor>(
    processor: &mut P,
    spec: &ProcessorSpec,
    config: &RuntimeConfig,
) -> Result<(), RuntimeError> {
    // The processor's stores, checked before anything is created: a store
    // the code gets wrong is a refusal naming it, not a failure mid-run.
    let stores = processor.stores();
    spec.check_stores(stores)
        .map_err(|source| RuntimeError::Stores {
            app: spec.app_id.clone(),
            source,
        })?;
    let prepared = setup::prepare_topics(spec, stores, config)?;
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
        stores,
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
    let restorer = Restorer::new(spec, stores, config).map_err(client_error)?;
    let globals = GlobalReader::start(spec, config, &prepared.counts, &mut lock(&core).globals)?;
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
        config,
        app_id: &spec.app_id,
    };

    let result = event_loop(processor, &parts);
    config.metrics.set_ready(false);
    let finish = match result {
        Ok(()) => lock(&core).commit(&consumer),
        // After a fatal error (fenced, most likely) nothing may commit: the
        // successor owns these partitions now. Abort what is open, if the
        // producer still can, and report the error.
        Err(_) => {
            let mut core = lock(&core);
            core.abandon();
            // Their state goes with these clients: the processor hears so, as on a revocation.
            for partition in core.installed() {
                processor.on_revoke(partition);
            }
            Ok(())
        }
    };
    consumer.unsubscribe();
    drop(consumer);
    info!(app = %spec.app_id, "processor stopped");
    result.and(finish)
}

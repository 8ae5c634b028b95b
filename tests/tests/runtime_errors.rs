//! The runtime's error paths against the real broker: it refuses to start
//! on co-partitioned inputs with different partition counts; a fenced
//! instance (another one took its transactional id or its static group
//! membership) exits with an error instead of looping, and its successor
//! loses and repeats nothing; an abortable transaction error (the broker
//! refusing a record) aborts, rewinds and goes on with every output exactly
//! once; a transaction the broker timed out (a stalled processor) fences
//! the instance, which exits, and its restart redoes the records once.

mod support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use callstream_e2e::{
    client_config, create_topic, create_topic_with, produce, producer, unique_name,
};
use callstream_platform::KafkaSettings;
use callstream_runtime::testkit::{CountingProcessor, COUNTS_STORE};
use callstream_runtime::{
    CommitPolicy, Context, Output, ProcessError, Processor, ProcessorSpec, Record, RuntimeConfig,
    RuntimeError, RuntimeMetrics,
};
use rdkafka::producer::{BaseProducer, Producer};
use support::runtime::{
    await_assignment, check_exactly_once, produce_range, read_partitions, read_topic,
    restored_counts, true_counts, Instance, Topics, PARTITIONS,
};

/// A processor running on a thread of its own, whose exit (or not) the
/// test can wait for without asking it to stop.
struct Watched {
    shutdown: Arc<AtomicBool>,
    done: mpsc::Receiver<Result<(), RuntimeError>>,
    /// The result, once `exited_within` has seen it.
    exited: Option<Result<(), RuntimeError>>,
}

impl Watched {
    fn start<P: Processor>(
        processor: P,
        spec: ProcessorSpec,
        configure: impl FnOnce(&mut RuntimeConfig),
    ) -> Self {
        let mut config = RuntimeConfig::new(
            KafkaSettings::from_env(spec.app_id.clone()),
            &spec.app_id,
            "0",
        );
        configure(&mut config);
        let shutdown = config.shutdown.clone();
        let (tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(callstream_runtime::run(processor, spec, config));
        });
        Self {
            shutdown,
            done,
            exited: None,
        }
    }

    /// Whether the runtime returned on its own within `timeout`.
    fn exited_within(&mut self, timeout: Duration) -> bool {
        if self.exited.is_none() {
            self.exited = self.done.recv_timeout(timeout).ok();
        }
        self.exited.is_some()
    }

    /// The runtime's result, if it returned on its own within `timeout`.
    fn result_within(mut self, timeout: Duration) -> Option<Result<(), RuntimeError>> {
        self.exited_within(timeout);
        self.exited
    }

    fn stop(mut self) -> Result<()> {
        self.shutdown.store(true, Ordering::SeqCst);
        if let Some(result) = self.exited.take() {
            return result.context("runtime failed");
        }
        match self.done.recv_timeout(Duration::from_secs(60)) {
            Ok(result) => result.context("runtime failed"),
            Err(_) => bail!("runtime did not stop within 60 s"),
        }
    }
}

fn counting(app: &str, input: &str, output: &str) -> (CountingProcessor, ProcessorSpec) {
    let spec = ProcessorSpec::new(app, format!("{app}-dlq")).input(input);
    let processor = CountingProcessor {
        output_topic: output.to_string(),
    };
    (processor, spec)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn co_partitioned_inputs_with_different_counts_are_refused_at_start() -> Result<()> {
    let app = unique_name("rt-copart");
    let (left, right) = (format!("{app}-left"), format!("{app}-right"));
    create_topic(&left, 2).await?;
    create_topic(&right, 3).await?;
    let (processor, spec) = counting(&app, &left, &format!("{app}-out"));
    let watched = Watched::start(processor, spec.input(&right), |_| {});
    let result =
        tokio::task::spawn_blocking(move || watched.result_within(Duration::from_secs(30)))
            .await?
            .context("the runtime did not refuse within 30 s")?;
    let Err(error @ RuntimeError::Setup { .. }) = result else {
        bail!("expected a setup refusal, got {result:?}");
    };
    let message = error.to_string();
    for part in [
        "refusing to start",
        "co-partitioned inputs differ",
        &format!("{left} has 2 partitions"),
        &format!("{right} has 3"),
    ] {
        ensure!(message.contains(part), "{part:?} missing from: {message}");
    }
    // Refused before anything was created.
    let metadata = tokio::task::spawn_blocking(move || {
        let client: BaseProducer = client_config().create()?;
        anyhow::Ok(
            client
                .client()
                .fetch_metadata(None, Duration::from_secs(10))?,
        )
    })
    .await??;
    let changelog = format!("{app}-{COUNTS_STORE}-changelog");
    ensure!(
        metadata.topics().iter().all(|t| t.name() != changelog),
        "a changelog was created for a processor that refused to start"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_fenced_by_a_newer_one_exits_and_the_successor_repeats_nothing() -> Result<()> {
    let app = unique_name("rt-fenced");
    let (input, output) = (format!("{app}-in"), format!("{app}-out"));
    create_topic(&input, 3).await?;
    create_topic(&output, 3).await?;
    let (processor, spec) = counting(&app, &input, &output);
    // Without static membership only the producer can be fenced here.
    let first = Watched::start(processor.clone(), spec.clone(), |c| {
        c.static_membership = false
    });
    let feed = producer()?;
    produce(&feed, &input, "k", b"first").await?;
    let outputs = values_on(&output, 3, 1).await?;
    ensure!(outputs == ["first:1"], "before fencing: {outputs:?}");

    // What a restarted instance does first: take over the transactional id.
    let transactional_id = format!("{app}-0");
    tokio::task::spawn_blocking(move || {
        let zombie_killer: BaseProducer = client_config()
            .set("transactional.id", &transactional_id)
            .create()?;
        zombie_killer.init_transactions(Duration::from_secs(30))?;
        anyhow::Ok(())
    })
    .await??;
    produce(&feed, &input, "k", b"second").await?;
    let result = tokio::task::spawn_blocking(move || first.result_within(Duration::from_secs(60)))
        .await?
        .context("the fenced instance kept running for 60 s")?;
    let Err(error @ RuntimeError::Fatal { .. }) = result else {
        bail!("expected a fatal error, got {result:?}");
    };
    ensure!(
        error.to_string().to_lowercase().contains("fenced"),
        "the reason should say fenced: {error}"
    );

    // The successor handles "second" once, from the restored count.
    let second = Watched::start(processor, spec, |c| c.static_membership = false);
    let outputs = values_on(&output, 3, 2).await?;
    tokio::task::spawn_blocking(move || second.stop()).await??;
    ensure!(
        outputs == ["first:1", "second:2"],
        "after fencing: {outputs:?}"
    );
    Ok(())
}

/// Every value on `topic` of `partitions` partitions (read_committed), once
/// `expected` have arrived and nothing more follows for a few seconds.
async fn values_on(topic: &str, partitions: i32, expected: usize) -> Result<Vec<String>> {
    let records = read_partitions(topic, partitions, expected, Duration::from_secs(60)).await?;
    Ok(records
        .into_iter()
        .map(|(_, v)| String::from_utf8_lossy(&v).into_owned())
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_member_fenced_by_its_successor_exits_non_zero_even_when_idle() -> Result<()> {
    const KEYS: usize = 100;
    let topics = Topics::create("rt-static").await?;
    let client_id = format!("{}-0", topics.app);
    let first = Instance::start(&topics, "0")?;
    produce_range(topics.input.clone(), 0..2_000, KEYS, Duration::from_secs(2)).await?;
    await_assignment(&topics.app, &topics.input, Duration::from_secs(30), |o| {
        o.get(&client_id)
            .is_some_and(|p| p.len() == PARTITIONS as usize)
    })
    .await?;
    read_topic(&topics.output, 2_000, Duration::from_secs(60)).await?;

    // Same instance id: same transactional id and group.instance.id. The
    // first is idle (no transaction to fail), so only the group can tell it.
    let second = Instance::start(&topics, "0")?;
    let status =
        tokio::task::spawn_blocking(move || first.wait_exit(Duration::from_secs(60))).await??;
    ensure!(
        !status.success(),
        "the fenced instance exited with {status}"
    );

    produce_range(
        topics.input.clone(),
        2_000..4_000,
        KEYS,
        Duration::from_secs(2),
    )
    .await?;
    let outputs = read_topic(&topics.output, 4_000, Duration::from_secs(90)).await?;
    second.stop()?;
    check_exactly_once(&outputs, 4_000, KEYS)?;
    assert_eq!(
        restored_counts(&topics, KEYS).await?,
        true_counts(4_000, KEYS)
    );
    Ok(())
}

/// The counting processor with one fault, injected on the first attempt
/// at the record whose value is `trigger` only (a retry goes through).
#[derive(Clone)]
struct Faulty {
    inner: CountingProcessor,
    trigger: &'static [u8],
    fault: Fault,
    fired: Arc<AtomicBool>,
}

#[derive(Clone, Copy)]
enum Fault {
    /// Stall inside `process` for this long.
    Stall(Duration),
    /// Emit one extra output of this many incompressible bytes.
    Oversized(usize),
}

impl Processor for Faulty {
    fn stores(&self) -> &'static [&'static str] {
        self.inner.stores()
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        if record.value.as_deref() == Some(self.trigger) && !self.fired.swap(true, Ordering::SeqCst)
        {
            match self.fault {
                Fault::Stall(how_long) => std::thread::sleep(how_long),
                Fault::Oversized(bytes) => {
                    let noise: Vec<u8> = (0..bytes).map(|_| rand::random::<u8>()).collect();
                    ctx.emit(Output::new(&self.inner.output_topic, "noise", noise));
                }
            }
        }
        self.inner.process(ctx, record)
    }
}

/// Starts `Faulty` on a one-partition input, with commits every 5 s so
/// that "before" and the trigger share one transaction (the trigger's
/// failure must take "before" down with it).
async fn start_faulty(
    prefix: &str,
    fault: Fault,
    trigger: &'static [u8],
    output_settings: &[(&str, &str)],
    configure: impl FnOnce(&mut RuntimeConfig),
) -> Result<(Watched, Faulty, ProcessorSpec, String, String)> {
    let app = unique_name(prefix);
    let (input, output) = (format!("{app}-in"), format!("{app}-out"));
    create_topic(&input, 1).await?;
    create_topic_with(&output, 1, output_settings).await?;
    let (inner, spec) = counting(&app, &input, &output);
    let processor = Faulty {
        inner,
        trigger,
        fault,
        fired: Arc::new(AtomicBool::new(false)),
    };
    let watched = Watched::start(processor.clone(), spec.clone(), |c| {
        c.commit = CommitPolicy {
            interval: Duration::from_secs(5),
            max_records: 10_000,
        };
        configure(c);
    });
    let feed = producer()?;
    produce(&feed, &input, "k", b"before").await?;
    produce(&feed, &input, "k", trigger).await?;
    Ok((watched, processor, spec, input, output))
}

/// The broker refuses a record larger than the output topic allows: the
/// transaction can only abort (an abortable error at commit). The runtime
/// aborts, rolls its state back, rewinds, and redoes "before" and the
/// trigger (which emits nothing oversized the second time), exactly once,
/// without exiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_the_broker_refuses_aborts_the_transaction_which_is_redone() -> Result<()> {
    let metrics = Arc::new(RuntimeMetrics::new("rt-too-large"));
    let (mut watched, processor, _, input, output) = start_faulty(
        "rt-too-large",
        Fault::Oversized(64 * 1024),
        b"big",
        &[("max.message.bytes", "16384")],
        |c| c.metrics = metrics.clone(),
    )
    .await?;
    let outputs = values_on(&output, 1, 2).await?;
    produce(&producer()?, &input, "k", b"after").await?;
    let all = values_on(&output, 1, 3).await?;
    let exited = watched.exited_within(Duration::ZERO);
    tokio::task::spawn_blocking(move || watched.stop()).await??;

    ensure!(
        processor.fired.load(Ordering::SeqCst),
        "the fault was never injected"
    );
    ensure!(outputs == ["before:1", "big:2"], "outputs: {outputs:?}");
    ensure!(all == ["before:1", "big:2", "after:3"], "outputs: {all:?}");
    ensure!(!exited, "the runtime exited instead of going on");
    let aborts = metrics.aborts.get();
    ensure!(aborts >= 1, "no transaction was aborted ({aborts})");
    Ok(())
}

/// A processor stalled past `transaction.timeout.ms`: the broker's
/// coordinator aborts the open transaction and bumps the producer's epoch
/// (it checks every 10 s by default). librdkafka 2.12 against Kafka 4.1
/// reports that, at the next transactional call, as fatal "fenced by a
/// newer instance" (from the client's side the two look the same), so this
/// is not an abortable error here: the instance must exit with the reason
/// rather than go on, nothing of the aborted transaction may be visible,
/// and its restart redoes those records exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_the_broker_timed_out_fences_the_stalled_instance_and_the_restart_redoes_it(
) -> Result<()> {
    let (first, processor, spec, input, output) = start_faulty(
        "rt-txn-timeout",
        Fault::Stall(Duration::from_secs(16)),
        b"stall",
        &[],
        |c| c.transaction_timeout = Duration::from_secs(2),
    )
    .await?;
    let result = tokio::task::spawn_blocking(move || first.result_within(Duration::from_secs(60)))
        .await?
        .context("the stalled instance kept running for 60 s")?;
    let Err(error @ RuntimeError::Fatal { .. }) = result else {
        bail!("expected a fatal error, got {result:?}");
    };
    ensure!(
        processor.fired.load(Ordering::SeqCst),
        "the stall never happened"
    );
    ensure!(
        error.to_string().to_lowercase().contains("fenced"),
        "the reason should say fenced: {error}"
    );
    let visible = values_on(&output, 1, 0).await?;
    ensure!(
        visible.is_empty(),
        "the aborted transaction leaked: {visible:?}"
    );

    // The restart (the fault already fired: no stall) redoes both records.
    let second = Watched::start(processor, spec, |_| {});
    produce(&producer()?, &input, "k", b"after").await?;
    let all = values_on(&output, 1, 3).await?;
    tokio::task::spawn_blocking(move || second.stop()).await??;
    ensure!(
        all == ["before:1", "stall:2", "after:3"],
        "outputs: {all:?}"
    );
    Ok(())
}

/// A partition is never handled without every co-partitioned input. A consumer in the
/// processor's group subscribed to one input only (what a group leader missing a topic from
/// its metadata assigns, as after a broker's death) takes half of that input's partitions
/// under the range assignor; the runtime holds its partitions that lack that input (no
/// task, nothing handled), asks the group again while they lack it, and handles them, once
/// each, when the other member leaves and the assignment is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_without_all_its_inputs_is_held_until_the_assignment_is_whole() -> Result<()> {
    const PARTS: i32 = 4;
    let app = unique_name("rt-whole");
    let (left, right, output) = (
        format!("{app}-left"),
        format!("{app}-right"),
        format!("{app}-out"),
    );
    create_topic(&left, PARTS).await?;
    create_topic(&right, PARTS).await?;
    create_topic(&output, PARTS).await?;

    // The other member: in the processor's group, subscribed to `right` only.
    let other: rdkafka::consumer::BaseConsumer = client_config()
        .set("group.id", &app)
        .set("partition.assignment.strategy", "range")
        .set("client.id", "right-only")
        .create()?;
    rdkafka::consumer::Consumer::subscribe(&other, &[right.as_str()])?;
    let other = Arc::new(std::sync::Mutex::new(other));
    let polling = Arc::new(AtomicBool::new(true));
    let poller = {
        let (other, polling) = (other.clone(), polling.clone());
        std::thread::spawn(move || {
            while polling.load(Ordering::SeqCst) {
                let consumer = other.lock().unwrap();
                let _ = consumer.poll(Duration::from_millis(100));
            }
        })
    };

    // One record per partition of `left`, keyed by its partition.
    let records = producer()?;
    for partition in 0..PARTS {
        let key = format!("p{partition}");
        records
            .send(
                rdkafka::producer::FutureRecord::to(&left)
                    .key(&key)
                    .payload(&key)
                    .partition(partition),
                Duration::from_secs(30),
            )
            .await
            .map_err(|(e, _)| e)?;
    }

    let (processor, spec) = counting(&app, &left, &output);
    let watched = Watched::start(processor, spec.input(&right), |_| {});
    // The group settles with `right` split between the two members.
    let owners = await_assignment(&app, &right, Duration::from_secs(60), |o| {
        o.get("right-only").is_some_and(|p| !p.is_empty()) && o.len() == 2
    })
    .await?;
    let held: BTreeSet<i32> = owners["right-only"].clone();
    let whole: BTreeSet<i32> = (0..PARTS).filter(|p| !held.contains(p)).collect();
    ensure!(
        !whole.is_empty(),
        "the runtime got no whole partition: {owners:?}"
    );

    // The whole partitions' records are handled; then, after the runtime has asked the group
    // again at least once (the other member still holding its half), the held ones are not.
    let first = read_partitions(&output, PARTS, whole.len(), Duration::from_secs(60)).await?;
    tokio::time::sleep(Duration::from_secs(25)).await;
    let first_and_more =
        read_partitions(&output, PARTS, first.len(), Duration::from_secs(30)).await?;
    let handled: BTreeSet<String> = first_and_more.iter().map(|(k, _)| k.clone()).collect();
    let expected: BTreeSet<String> = whole.iter().map(|p| format!("p{p}")).collect();
    ensure!(
        handled == expected,
        "with {held:?} of `right` elsewhere, the runtime handled {handled:?}; only {expected:?} \
         have both inputs"
    );

    // The other member leaves: the assignment is whole, and everything is handled once.
    polling.store(false, Ordering::SeqCst);
    poller
        .join()
        .map_err(|_| anyhow::anyhow!("the poller panicked"))?;
    drop(other);
    let all = read_partitions(&output, PARTS, PARTS as usize, Duration::from_secs(120)).await?;
    let mut keys: Vec<String> = all.iter().map(|(k, _)| k.clone()).collect();
    keys.sort();
    let wanted: Vec<String> = (0..PARTS).map(|p| format!("p{p}")).collect();
    ensure!(
        keys == wanted,
        "handled {keys:?}, wanted each of {wanted:?} once"
    );
    watched.stop()
}

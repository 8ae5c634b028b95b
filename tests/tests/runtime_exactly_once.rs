//! The runtime against the real broker: the counting processor runs as its
//! own OS process and is killed with SIGKILL mid-stream, again and again;
//! afterwards a `read_committed` reader must see exactly one output per
//! input, and the restored counts must equal the true counts.

use std::collections::{BTreeMap, HashMap};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use callstream_e2e::{bootstrap_servers, create_topic, producer, unique_name};
use callstream_runtime::testkit::decode_count;
use rand::Rng;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::producer::FutureRecord;
use rdkafka::util::Timeout;
use rdkafka::{Offset, TopicPartitionList};

const PARTITIONS: i32 = 6;

struct Topics {
    app: String,
    input: String,
    output: String,
    dead_letters: String,
}

impl Topics {
    async fn create(prefix: &str) -> Result<Self> {
        let app = unique_name(prefix);
        let topics = Self {
            input: format!("{app}-in"),
            output: format!("{app}-out"),
            dead_letters: format!("{app}-dlq"),
            app,
        };
        create_topic(&topics.input, PARTITIONS).await?;
        create_topic(&topics.output, PARTITIONS).await?;
        Ok(topics)
    }

    fn changelog(&self) -> String {
        format!("{}-counts-changelog", self.app)
    }
}

/// One counter_processor OS process.
struct Instance {
    child: Child,
}

impl Instance {
    fn start(topics: &Topics, instance: &str) -> Result<Self> {
        let log = std::env::temp_dir().join(format!("{}-{instance}.log", topics.app));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        let child = Command::new(env!("CARGO_BIN_EXE_counter_processor"))
            .args([
                &topics.app,
                instance,
                &topics.input,
                &topics.output,
                &topics.dead_letters,
            ])
            .env("KAFKA_BOOTSTRAP_SERVERS", bootstrap_servers())
            .env("CALLSTREAM_LOG_FORMAT", "text")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting counter_processor")?;
        Ok(Self { child })
    }

    /// SIGKILL: no chance to commit, abort or leave the group.
    fn kill(mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }

    fn stop(mut self) -> Result<()> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status()?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                ensure!(status.success(), "counter_processor exited with {status}");
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill()?;
        bail!("counter_processor did not stop within 30 s of SIGTERM")
    }
}

/// Produces `count` inputs `"<i>"` keyed `k<i % keys>`, spread over `over`.
async fn produce_inputs(topic: String, count: usize, keys: usize, over: Duration) -> Result<()> {
    let producer = producer()?;
    let started = Instant::now();
    let chunk = 500;
    for start in (0..count).step_by(chunk) {
        let sends: Vec<_> = (start..(start + chunk).min(count))
            .map(|i| {
                let key = format!("k{}", i % keys);
                let value = i.to_string();
                let producer = producer.clone();
                let topic = topic.clone();
                async move {
                    producer
                        .send(
                            FutureRecord::to(&topic).key(&key).payload(&value),
                            Timeout::After(Duration::from_secs(30)),
                        )
                        .await
                        .map_err(|(e, _)| e)
                }
            })
            .collect();
        for result in futures::future::join_all(sends).await {
            result.context("producing an input")?;
        }
        let target = over.mul_f64((start + chunk) as f64 / count as f64);
        if let Some(wait) = target.checked_sub(started.elapsed()) {
            tokio::time::sleep(wait).await;
        }
    }
    Ok(())
}

/// Reads `topic` from the beginning with `read_committed` until `expected`
/// records arrived, then a little longer to catch any extra.
async fn read_topic(
    topic: &str,
    expected: usize,
    timeout: Duration,
) -> Result<Vec<(String, Vec<u8>)>> {
    let consumer: StreamConsumer = callstream_e2e::client_config()
        .set("group.id", unique_name("reader"))
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .create()?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..PARTITIONS {
        assignment.add_partition_offset(topic, partition, Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;
    let mut records = Vec::new();
    let deadline = Instant::now() + timeout;
    let mut settle_until: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if settle_until.is_some_and(|t| now >= t) || now >= deadline {
            break;
        }
        if settle_until.is_none() && records.len() >= expected {
            settle_until = Some(now + Duration::from_secs(3));
        }
        match tokio::time::timeout(Duration::from_millis(500), consumer.recv()).await {
            Ok(Ok(message)) => records.push((
                String::from_utf8_lossy(message.key().unwrap_or_default()).into_owned(),
                message.payload().unwrap_or_default().to_vec(),
            )),
            Ok(Err(e)) => return Err(e).context("reading outputs"),
            Err(_) => {}
        }
    }
    Ok(records)
}

/// Checks one output per input, and per key the counts 1..=n in some order.
fn check_exactly_once(outputs: &[(String, Vec<u8>)], inputs: usize, keys: usize) -> Result<()> {
    let mut seen = vec![0u32; inputs];
    let mut counts: HashMap<String, Vec<u64>> = HashMap::new();
    for (key, value) in outputs {
        let text = std::str::from_utf8(value)?;
        let (input, count) = text
            .split_once(':')
            .context("output is not <input>:<count>")?;
        let input: usize = input.parse()?;
        ensure!(input < inputs, "output for an input never sent: {text}");
        seen[input] += 1;
        counts.entry(key.clone()).or_default().push(count.parse()?);
    }
    let lost: Vec<usize> = (0..inputs).filter(|&i| seen[i] == 0).collect();
    let twice: Vec<usize> = (0..inputs).filter(|&i| seen[i] > 1).collect();
    ensure!(
        lost.is_empty() && twice.is_empty(),
        "{} inputs lost (first {:?}), {} seen more than once (first {:?})",
        lost.len(),
        lost.iter().take(5).collect::<Vec<_>>(),
        twice.len(),
        twice.iter().take(5).collect::<Vec<_>>()
    );
    for (key, mut values) in counts {
        values.sort_unstable();
        let index: usize = key.trim_start_matches('k').parse()?;
        let expected = (inputs - index).div_ceil(keys) as u64;
        ensure!(
            values == (1..=expected).collect::<Vec<_>>(),
            "key {key}: counts are not 1..={expected}"
        );
    }
    Ok(())
}

/// The last committed count per key in the changelog.
async fn restored_counts(topics: &Topics, keys: usize) -> Result<BTreeMap<String, u64>> {
    let records = read_topic(&topics.changelog(), 0, Duration::from_secs(5)).await?;
    let mut counts = BTreeMap::new();
    for (key, value) in records {
        counts.insert(
            key,
            decode_count(&value).context("changelog value is not a count")?,
        );
    }
    ensure!(
        counts.len() == keys,
        "changelog holds {} keys, expected {keys}",
        counts.len()
    );
    Ok(counts)
}

fn true_counts(inputs: usize, keys: usize) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for i in 0..inputs {
        *counts.entry(format!("k{}", i % keys)).or_insert(0) += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_loses_and_repeats_nothing() -> Result<()> {
    const INPUTS: usize = 100_000;
    const KEYS: usize = 1_000;
    const KILLS: usize = 6;
    let topics = Topics::create("rt-crash").await?;
    let feeder = tokio::spawn(produce_inputs(
        topics.input.clone(),
        INPUTS,
        KEYS,
        Duration::from_secs(20),
    ));

    let mut rng = rand::rng();
    let mut instance = Instance::start(&topics, "0")?;
    for _ in 0..KILLS {
        tokio::time::sleep(Duration::from_millis(rng.random_range(1_500..4_000))).await;
        instance.kill()?;
        instance = Instance::start(&topics, "0")?;
    }
    feeder.await??;
    let outputs = read_topic(&topics.output, INPUTS, Duration::from_secs(180)).await?;
    instance.stop()?;
    check_exactly_once(&outputs, INPUTS, KEYS)?;
    assert_eq!(
        restored_counts(&topics, KEYS).await?,
        true_counts(INPUTS, KEYS)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instance_hands_its_partitions_and_state_to_the_other() -> Result<()> {
    const INPUTS: usize = 30_000;
    const KEYS: usize = 300;
    let topics = Topics::create("rt-rebalance").await?;
    let feeder = tokio::spawn(produce_inputs(
        topics.input.clone(),
        INPUTS,
        KEYS,
        Duration::from_secs(12),
    ));
    let first = Instance::start(&topics, "a")?;
    let second = Instance::start(&topics, "b")?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    first.kill()?;
    feeder.await??;
    let outputs = read_topic(&topics.output, INPUTS, Duration::from_secs(120)).await?;
    second.stop()?;
    check_exactly_once(&outputs, INPUTS, KEYS)?;
    assert_eq!(
        restored_counts(&topics, KEYS).await?,
        true_counts(INPUTS, KEYS)
    );
    Ok(())
}

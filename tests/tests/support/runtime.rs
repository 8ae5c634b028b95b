//! Shared by the runtime's broker tests (`runtime_*.rs`): the counting
//! processor as its own OS process, input feeders, a `read_committed`
//! reader, the exactly-once check, and who in a consumer group owns which
//! partitions (as the group coordinator says, not as the processes claim).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use callstream_e2e::{bootstrap_servers, client_config, create_topic, producer, unique_name};
use callstream_runtime::testkit::decode_count;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::FutureRecord;
use rdkafka::util::Timeout;

pub const PARTITIONS: i32 = 6;

pub struct Topics {
    pub app: String,
    pub input: String,
    pub output: String,
    pub dead_letters: String,
}

impl Topics {
    pub async fn create(prefix: &str) -> Result<Self> {
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

    pub fn changelog(&self) -> String {
        format!("{}-counts-changelog", self.app)
    }
}

/// One counter_processor OS process.
pub struct Instance {
    child: Child,
    /// Its stderr (shared by every process of the same instance id).
    pub log: PathBuf,
}

impl Instance {
    pub fn start(topics: &Topics, instance: &str) -> Result<Self> {
        let log = std::env::temp_dir().join(format!("{}-{instance}.log", topics.app));
        let file = std::fs::OpenOptions::new()
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
            .stderr(file)
            .spawn()
            .context("starting counter_processor")?;
        Ok(Self { child, log })
    }

    /// SIGKILL: no chance to commit, abort or leave the group.
    pub fn kill(mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }

    /// Waits for the process to exit on its own; kills it (and fails) if it
    /// is still running after `timeout`.
    pub fn wait_exit(mut self, timeout: Duration) -> Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill()?;
        self.child.wait()?;
        bail!("counter_processor still running after {timeout:?}")
    }

    pub fn stop(mut self) -> Result<()> {
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
pub async fn produce_inputs(
    topic: String,
    count: usize,
    keys: usize,
    over: Duration,
) -> Result<()> {
    produce_range(topic, 0..count, keys, over).await
}

/// Produces inputs `"<i>"` keyed `k<i % keys>` for `i` in `range`, spread over `over`.
pub async fn produce_range(
    topic: String,
    range: Range<usize>,
    keys: usize,
    over: Duration,
) -> Result<()> {
    let producer = producer()?;
    let started = Instant::now();
    let chunk = 500;
    let total = range.len().max(1);
    for start in range.clone().step_by(chunk) {
        let end = (start + chunk).min(range.end);
        let sends: Vec<_> = (start..end)
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
        let target = over.mul_f64((end - range.start) as f64 / total as f64);
        if let Some(wait) = target.checked_sub(started.elapsed()) {
            tokio::time::sleep(wait).await;
        }
    }
    Ok(())
}

/// Reads `topic` from the beginning with `read_committed` until `expected`
/// records arrived, then a little longer to catch any extra.
pub async fn read_topic(
    topic: &str,
    expected: usize,
    timeout: Duration,
) -> Result<Vec<(String, Vec<u8>)>> {
    read_partitions(topic, PARTITIONS, expected, timeout).await
}

/// `read_topic` for a topic of `partitions` partitions.
pub async fn read_partitions(
    topic: &str,
    partitions: i32,
    expected: usize,
    timeout: Duration,
) -> Result<Vec<(String, Vec<u8>)>> {
    let consumer = callstream_e2e::runtime::reader(topic, partitions)?;
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
pub fn check_exactly_once(outputs: &[(String, Vec<u8>)], inputs: usize, keys: usize) -> Result<()> {
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
pub async fn restored_counts(topics: &Topics, keys: usize) -> Result<BTreeMap<String, u64>> {
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

pub fn true_counts(inputs: usize, keys: usize) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for i in 0..inputs {
        *counts.entry(format!("k{}", i % keys)).or_insert(0) += 1;
    }
    counts
}

/// Partitions of `topic` per member of consumer group `group`, keyed by
/// the member's `client.id` (counter_processor sets `<app>-<instance>`),
/// when the group is stable; `None` while it rebalances.
pub fn group_assignment(
    group: &str,
    topic: &str,
) -> Result<Option<BTreeMap<String, BTreeSet<i32>>>> {
    let admin: BaseConsumer = client_config().create()?;
    let list = admin.fetch_group_list(Some(group), Duration::from_secs(10))?;
    let Some(info) = list.groups().iter().find(|g| g.name() == group) else {
        return Ok(None);
    };
    if info.state() != "Stable" {
        return Ok(None);
    }
    let mut owners = BTreeMap::new();
    for member in info.members() {
        let partitions = member
            .assignment()
            .map(|bytes| decode_assignment(bytes, topic))
            .transpose()?
            .unwrap_or_default();
        owners
            .entry(member.client_id().to_string())
            .or_insert_with(BTreeSet::new)
            .extend(partitions);
    }
    Ok(Some(owners))
}

/// Polls `group_assignment` until `done` holds, for at most `timeout`.
pub async fn await_assignment(
    group: &str,
    topic: &str,
    timeout: Duration,
    done: impl Fn(&BTreeMap<String, BTreeSet<i32>>) -> bool,
) -> Result<BTreeMap<String, BTreeSet<i32>>> {
    let deadline = Instant::now() + timeout;
    let mut last = None;
    while Instant::now() < deadline {
        if let Some(owners) = group_assignment(group, topic)? {
            if done(&owners) {
                return Ok(owners);
            }
            last = Some(owners);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    bail!("group {group} never reached the expected assignment; last stable one: {last:?}")
}

/// The partitions of `topic` in a classic-protocol consumer assignment
/// (ConsumerProtocolAssignment: version i16, then [topic string,
/// [partition i32]], then user data, all big-endian).
fn decode_assignment(bytes: &[u8], topic: &str) -> Result<BTreeSet<i32>> {
    let mut cursor = bytes;
    let _version = take(&mut cursor, 2)?;
    let topics = i32::from_be_bytes(take(&mut cursor, 4)?.try_into()?);
    let mut found = BTreeSet::new();
    for _ in 0..topics.max(0) {
        let len = i16::from_be_bytes(take(&mut cursor, 2)?.try_into()?);
        let name = take(&mut cursor, usize::try_from(len)?)?;
        let count = i32::from_be_bytes(take(&mut cursor, 4)?.try_into()?);
        for _ in 0..count.max(0) {
            let partition = i32::from_be_bytes(take(&mut cursor, 4)?.try_into()?);
            if name == topic.as_bytes() {
                found.insert(partition);
            }
        }
    }
    Ok(found)
}

fn take<'a>(cursor: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
    ensure!(cursor.len() >= n, "assignment truncated");
    let (head, tail) = cursor.split_at(n);
    *cursor = tail;
    Ok(head)
}

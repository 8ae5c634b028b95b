//! The three-broker SASL_SSL cluster of `cargo xtask up --cluster`, as tests that run on it
//! (in the cluster phase of `cargo xtask test`) reach it.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use callstream_platform::KafkaSettings;

/// Its brokers' client listeners.
pub const BOOTSTRAP: &str = "127.0.0.1:19094,127.0.0.1:19095,127.0.0.1:19096";

/// Its directory: `CALLSTREAM_CLUSTER_DIR`, default the checkout's `.stack/cluster`.
pub fn dir() -> PathBuf {
    std::env::var("CALLSTREAM_CLUSTER_DIR")
        .map_or_else(|_| crate::repo_root().join(".stack/cluster"), PathBuf::from)
}

/// A secret of the cluster: `secrets/<name>.password`, or `.database-url`, trimmed.
pub fn secret(file: &str) -> Result<String> {
    let path = dir().join("secrets").join(file);
    Ok(std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} (is the cluster up?)", path.display()))?
        .trim()
        .to_owned())
}

/// The CA that signed the brokers' (and its Postgres's) certificate.
pub fn ca() -> PathBuf {
    dir().join("tls/ca.pem")
}

/// Client settings for principal `user` with `password`, trusting `ca` when given.
pub fn settings_with(user: &str, password: &str, ca: Option<&str>) -> KafkaSettings {
    let mut settings = KafkaSettings::new(BOOTSTRAP, format!("{user}-test"));
    settings.properties = vec![
        ("security.protocol".into(), "SASL_SSL".into()),
        ("sasl.mechanism".into(), "SCRAM-SHA-512".into()),
        ("sasl.username".into(), user.into()),
        ("sasl.password".into(), password.into()),
    ];
    if let Some(ca) = ca {
        settings
            .properties
            .push(("ssl.ca.location".into(), ca.to_owned()));
    }
    settings
}

/// Client settings for principal `user`, as the cluster made it.
pub fn settings(user: &str) -> Result<KafkaSettings> {
    let password = secret(&format!("{user}.password"))?;
    Ok(settings_with(
        user,
        &password,
        Some(&ca().display().to_string()),
    ))
}

/// The Java clients' settings file of `user` (`--command-config`).
pub fn java_client_properties(user: &str) -> PathBuf {
    dir().join("clients").join(format!("{user}.properties"))
}

/// A broker's pid, from the pid file `xtask up --cluster` wrote, if that process runs.
pub fn broker_pid(node: i32) -> Option<u32> {
    let text = std::fs::read_to_string(dir().join(format!("node-{node}/kafka.pid"))).ok()?;
    let pid: u32 = text.trim().parse().ok()?;
    alive(pid).then_some(pid)
}

/// Whether a process runs: it exists and is not a zombie (a broker a test restarted is its
/// child, and nobody reaps it there).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // `pid (comm) state ...`: the state follows the last ')'.
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// How a broker was started (its command line and directory), to start it again the same way.
#[derive(Debug, Clone)]
pub struct BrokerLaunch {
    pub node: i32,
    args: Vec<String>,
    cwd: PathBuf,
}

/// SIGKILLs the brokers and waits until their processes are gone; returns how to start them.
pub fn kill_brokers(nodes: &[i32]) -> Result<Vec<BrokerLaunch>> {
    let mut launches = Vec::new();
    for &node in nodes {
        let pid = broker_pid(node).with_context(|| format!("broker {node} is not running"))?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))?;
        let args = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"))?;
        let status = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill -9 {pid} (broker {node}) failed");
        launches.push((pid, BrokerLaunch { node, args, cwd }));
    }
    while launches.iter().any(|(pid, _)| alive(*pid)) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Ok(launches.into_iter().map(|(_, launch)| launch).collect())
}

/// Starts the brokers again as they were started (`xtask up --cluster`'s command line, its
/// log appended to, its pid file rewritten), in a process group of their own so they outlive
/// the test (`xtask down --cluster` stops them).
pub fn restart_brokers(launches: &[BrokerLaunch]) -> Result<()> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    for launch in launches {
        let node_dir = dir().join(format!("node-{}", launch.node));
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(node_dir.join("kafka.log"))?;
        let child = Command::new(&launch.args[0])
            .args(&launch.args[1..])
            .current_dir(&launch.cwd)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting broker {} again", launch.node))?;
        std::fs::write(node_dir.join("kafka.pid"), format!("{}\n", child.id()))?;
        // The broker outlives the test; nobody waits for it here.
        #[allow(clippy::zombie_processes)]
        drop(child);
    }
    Ok(())
}

/// Partitions of `topic` led by each broker, and whether every partition has all three
/// replicas in sync.
pub fn leaders(kafka: &KafkaSettings, topic: &str) -> Result<(HashMap<i32, usize>, bool)> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = kafka.base_config().create()?;
    let metadata = consumer.fetch_metadata(Some(topic), std::time::Duration::from_secs(10))?;
    let mut led = HashMap::new();
    let mut all_in_sync = true;
    for p in metadata.topics()[0].partitions() {
        *led.entry(p.leader()).or_insert(0) += 1;
        all_in_sync &= p.isr().len() == 3;
    }
    Ok((led, all_in_sync))
}

/// The broker leading most partitions of `topic`, leaving out `except`.
pub fn busiest_broker(kafka: &KafkaSettings, topic: &str, except: &[i32]) -> Result<i32> {
    let (led, _) = leaders(kafka, topic)?;
    let mut brokers: Vec<(i32, usize)> = led
        .into_iter()
        .filter(|(b, _)| *b >= 0 && !except.contains(b))
        .collect();
    brokers.sort_by_key(|(b, n)| (std::cmp::Reverse(*n), *b));
    brokers
        .first()
        .map(|(b, _)| *b)
        .or_else(|| [1, 2, 3].into_iter().find(|b| !except.contains(b)))
        .context("no broker left to choose")
}

/// Waits until every partition of `topic` has its three replicas in sync again (the brokers
/// are back), at most `limit`; returns how long that took.
pub async fn wait_all_in_sync(
    kafka: &KafkaSettings,
    topic: &str,
    limit: std::time::Duration,
) -> Result<std::time::Duration> {
    let started = std::time::Instant::now();
    while !leaders(kafka, topic)?.1 {
        anyhow::ensure!(
            started.elapsed() < limit,
            "the restarted brokers did not rejoin every in-sync replica set of {topic} in {limit:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    Ok(started.elapsed())
}

/// Waits until a record with `acks=all` lands on every partition of `topic` (every leader
/// serves, with enough replicas in sync), at most `limit`; returns how long that took. A
/// cluster whose brokers were just restarted says "in sync" in its metadata before it takes
/// writes again: a test that kills brokers starts from a cluster this answered for.
pub async fn wait_writable(
    kafka: &KafkaSettings,
    topic: &str,
    partitions: i32,
    limit: std::time::Duration,
) -> Result<std::time::Duration> {
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let started = std::time::Instant::now();
    let producer: FutureProducer = kafka
        .producer_config()
        .set("message.timeout.ms", "5000")
        .create()?;
    let mut waiting: Vec<i32> = (0..partitions).collect();
    while !waiting.is_empty() {
        anyhow::ensure!(
            started.elapsed() < limit,
            "partitions {waiting:?} of {topic} took no write in {limit:?}"
        );
        let mut still = Vec::new();
        for partition in waiting {
            let record = FutureRecord::<(), [u8]>::to(topic)
                .partition(partition)
                .payload(&[]);
            if producer
                .send(record, rdkafka::util::Timeout::Never)
                .await
                .is_err()
            {
                still.push(partition);
            }
        }
        waiting = still;
    }
    Ok(started.elapsed())
}

//! Shared helpers for the end-to-end tests, which run against the real dev stack (a Kafka
//! broker and a Postgres, as `cargo xtask up` starts them) and never against stand-ins.
//!
//! The pattern is rust-rdkafka's own test suite: one broker for the whole run, and every test
//! makes its own topics, groups and transactional ids with `unique_name`, so tests run in
//! parallel and none depends on what another left behind. Addresses come from the environment
//! that `cargo xtask test` sets, with the dev stack's defaults.
//!
//! Helpers return `anyhow::Result` rather than a typed error: their only callers are tests,
//! where an error is a failure report, and the context says which step failed.
//!
//! Every crate's tests use this library (as a dev-dependency): `fixtures` builds the events,
//! `views` stands up the projections, `runtime` runs a processor on the broker. It depends on
//! no processor, edge or simulator crate, so using it links none of them; the tests that run
//! those together live in this crate's own `tests/`.

pub mod cluster;
pub mod failures;
pub mod fixtures;
pub mod fuzz_corpus;
pub mod postgres;
pub mod runtime;
pub mod slow_client;
pub mod views;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::StreamConsumer;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;
use tokio::io::AsyncWriteExt;

/// The main class of the Kafka distribution's console consumer (`kafka-console-consumer.sh`).
pub const CONSOLE_CONSUMER: &str = "org.apache.kafka.tools.consumer.ConsoleConsumer";
/// The main class of the console producer (`kafka-console-producer.sh`).
pub const CONSOLE_PRODUCER: &str = "org.apache.kafka.tools.ConsoleProducer";
/// The main class of `kafka-topics.sh`.
pub const TOPIC_COMMAND: &str = "org.apache.kafka.tools.TopicCommand";

/// How long a helper waits for the broker before calling it a failure.
const BROKER_TIMEOUT: Duration = Duration::from_secs(30);

/// The workspace's `target/debug/callstream` (`cargo xtask test` builds it first), built
/// when missing: for tests that run it as production does, as its own process.
pub fn callstream_bin() -> Result<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    let bin = target.join("debug").join("callstream");
    if !bin.is_file() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "-p", "callstream"])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .status()
            .context("building callstream")?;
        if !status.success() {
            bail!("cargo build -p callstream failed ({status})");
        }
    }
    Ok(bin)
}

/// The broker to test against: `KAFKA_BOOTSTRAP_SERVERS`, else the dev stack's.
pub fn bootstrap_servers() -> String {
    std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".to_string())
}

/// The stack's schema registry (its Confluent-compatible API): `CALLSTREAM_STACK_REGISTRY_URL`,
/// else the dev stack's. Tests hand it to what they start as `CALLSTREAM_SCHEMA_REGISTRY_URL`.
pub fn stack_registry_url() -> String {
    std::env::var("CALLSTREAM_STACK_REGISTRY_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:8085/apis/ccompat/v7".to_string())
}

/// The Postgres to test against: `DATABASE_URL`, else the dev stack's.
pub fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/callstream".to_string())
}

/// The jars of the Kafka distribution: `CALLSTREAM_KAFKA_LIBS`, else `<repo>/.stack/kafka/libs`.
pub fn kafka_libs() -> PathBuf {
    std::env::var_os("CALLSTREAM_KAFKA_LIBS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".stack/kafka/libs"))
}

/// The jars of a Java tool `xtask` fetched (`xtask/java/<name>/pom.xml`): the variable
/// `cargo xtask test` hands them in (`env`), else `<repo>/.stack/java/<name>/libs`.
pub fn java_libs(env: &str, name: &str) -> PathBuf {
    std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".stack/java").join(name).join("libs"))
}

pub fn repo_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// `prefix` plus a random suffix: a name no other test (or earlier run) uses. Valid as a topic
/// name, group id and transactional id.
pub fn unique_name(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..16])
}

/// Client settings every test client starts from.
pub fn client_config() -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", bootstrap_servers());
    config
}

/// Creates a topic with `partitions` partitions (one replica: the dev broker is alone).
pub async fn create_topic(name: &str, partitions: i32) -> Result<()> {
    create_topic_with(name, partitions, &[]).await
}

/// Creates a topic with topic-level settings, e.g. `("cleanup.policy", "compact")`.
pub async fn create_topic_with(
    name: &str,
    partitions: i32,
    settings: &[(&str, &str)],
) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = client_config()
        .create()
        .context("creating an admin client")?;
    let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (key, value) in settings {
        topic = topic.set(key, value);
    }
    // Wait for the controller to finish and the broker to lead every partition, so the topic
    // is usable when this returns.
    let options = AdminOptions::new().operation_timeout(Some(Timeout::After(BROKER_TIMEOUT)));
    let results = admin
        .create_topics([&topic], &options)
        .await
        .with_context(|| format!("creating topic {name}"))?;
    for result in results {
        if let Err((topic, code)) = result {
            bail!("creating topic {topic}: {code}");
        }
    }
    // The broker learns of the topic after the controller answers; a processor started before
    // would refuse to start for a missing input.
    callstream_platform::admin::await_leaders(&admin, &bootstrap_servers(), &[(name, partitions)])
        .await
        .with_context(|| format!("waiting for topic {name} to be led"))?;
    Ok(())
}

/// A plain producer with the settings of every callstream producer: all in-sync replicas
/// acknowledge, idempotent, and the Java clients' partitioner (so keys land where a Java or
/// Kafka Streams producer would put them).
pub fn producer() -> Result<FutureProducer> {
    client_config()
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("partitioner", "murmur2_random")
        .set("message.timeout.ms", "30000")
        .create()
        .context("creating a producer")
}

/// Sends one keyed record and returns (partition, offset) once the broker has it.
pub async fn produce(
    producer: &FutureProducer,
    topic: &str,
    key: &str,
    value: &[u8],
) -> Result<(i32, i64)> {
    let record = FutureRecord::to(topic).key(key).payload(value);
    match producer.send(record, Timeout::After(BROKER_TIMEOUT)).await {
        Ok(delivery) => Ok((delivery.partition, delivery.offset)),
        Err((e, _)) => Err(e).with_context(|| format!("producing to {topic}")),
    }
}

/// Parks `value` (keyed by `key`) on the dead-letter topic `topic` as the runtime does
/// after a processor refused a record: the `dlq-*` headers say which processor (`app`),
/// what failed (`kind`: record, timer or effect), where from (`source`) and why, and
/// `extra` headers stand for the record's own. Returns (partition, offset).
pub async fn park_dead_letter(
    producer: &FutureProducer,
    topic: &str,
    key: &str,
    value: &[u8],
    (app, kind, source, reason): (&str, &str, &str, &str),
    extra: &[(&str, &str)],
) -> Result<(i32, i64)> {
    use callstream_platform::topics::dead_letter::{DLQ_APP, DLQ_KIND, DLQ_REASON, DLQ_SOURCE};
    use rdkafka::message::{Header, OwnedHeaders};
    let headers = [
        (DLQ_REASON, reason),
        (DLQ_SOURCE, source),
        (DLQ_APP, app),
        (DLQ_KIND, kind),
    ]
    .iter()
    .chain(extra)
    .fold(OwnedHeaders::new(), |h, (key, value)| {
        h.insert(Header {
            key,
            value: Some(value.as_bytes()),
        })
    });
    let record = FutureRecord::to(topic)
        .key(key)
        .payload(value)
        .headers(headers);
    match producer.send(record, Timeout::After(BROKER_TIMEOUT)).await {
        Ok(delivery) => Ok((delivery.partition, delivery.offset)),
        Err((e, _)) => Err(e).with_context(|| format!("parking a dead letter on {topic}")),
    }
}

/// A consumer in group `group` that sees only committed records (`read_committed`), starts
/// from the earliest offset of a new group, and never commits on its own.
pub fn read_committed_consumer(group: &str) -> Result<StreamConsumer> {
    client_config()
        .set("group.id", group)
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .create()
        .context("creating a read_committed consumer")
}

/// What a Kafka command-line tool printed.
#[derive(Debug)]
pub struct ToolOutput {
    pub stdout: String,
    pub stderr: String,
}

/// Runs a tool of the Kafka distribution the way its shell script does:
/// `java -cp "$CALLSTREAM_KAFKA_LIBS/*" <main_class> args...`. Fails when it exits non-zero
/// or runs longer than `timeout` (it is then killed).
pub async fn run_kafka_tool(
    main_class: &str,
    args: &[&str],
    timeout: Duration,
) -> Result<ToolOutput> {
    run_kafka_tool_with_input(main_class, args, "", timeout).await
}

/// Like `run_kafka_tool`, writing `input` to the tool's stdin (for the console producer).
pub async fn run_kafka_tool_with_input(
    main_class: &str,
    args: &[&str],
    input: &str,
    timeout: Duration,
) -> Result<ToolOutput> {
    let libs = kafka_libs();
    if !libs.is_dir() {
        bail!(
            "no Kafka jars at {} (run `cargo xtask up`, or set CALLSTREAM_KAFKA_LIBS)",
            libs.display()
        );
    }
    let mut cmd = tokio::process::Command::new(java());
    // Keep log lines off stdout, which carries the records a tool prints.
    let log4j = repo_root().join("xtask/kafka/tools-log4j2.properties");
    if log4j.is_file() {
        cmd.arg(format!("-Dlog4j2.configurationFile={}", log4j.display()));
    }
    cmd.arg("-cp")
        .arg(format!("{}/*", libs.display()))
        .arg(main_class)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting java {main_class}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes()).await?;
        // Dropping stdin closes it: the console producer sends what it read and exits.
    }
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .with_context(|| format!("{main_class} did not finish within {timeout:?}"))??;
    let output = ToolOutput {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    if !out.status.success() {
        bail!(
            "{main_class} {} failed ({}):\n{}",
            args.join(" "),
            out.status,
            output.stderr
        );
    }
    Ok(output)
}

/// The `java` to run: `$JAVA_HOME`'s, else the one on PATH.
pub fn java() -> PathBuf {
    std::env::var_os("JAVA_HOME")
        .map(|home| PathBuf::from(home).join("bin/java"))
        .filter(|java| java.is_file())
        .unwrap_or_else(|| PathBuf::from("java"))
}

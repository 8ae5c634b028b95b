//! Downstream readers on the real broker and the stack's schema registry: callstream registers
//! every value schema under `<topic>-value` and writes the Confluent wire format, and Python's
//! `confluent-kafka` `AvroDeserializer` (with fastavro), fetching each writer schema from the
//! registry by id, reads every event type back field for field equal to what was written; so
//! does Apicurio's Java `AvroKafkaDeserializer` (tests/java/ApicurioReader.java).
//!
//! Random values of every schema, from a printed seed (`CALLSTREAM_TEST_SEED` replays one).

#[path = "../../schemas/tests/support/mod.rs"]
#[allow(dead_code, clippy::all)]
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use apache_avro::types::Value;
use callstream_e2e::{
    bootstrap_servers, java, java_libs, repo_root, stack_registry_url, unique_name,
};
use callstream_platform::{admin, KafkaSettings, Topics};
use callstream_schema_registry::{install, value_subjects, RegistryClient};
use callstream_schemas::{decode_any, decode_value, wire};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;
use rdkafka::ClientConfig;

/// Records per topic: enough for the unions' branches to vary.
const PER_TOPIC: usize = 6;

fn seed() -> u64 {
    std::env::var("CALLSTREAM_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand_seed)
}

fn rand_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    (nanos as u64) ^ u64::from(std::process::id())
}

/// An Avro value as JSON, the way the Python reader prints what fastavro gives it.
fn plain(value: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        Value::Null => J::Null,
        Value::Boolean(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::Long(l) | Value::TimestampMillis(l) => J::from(*l),
        Value::Double(d) => J::from(*d),
        Value::String(s) | Value::Enum(_, s) => J::String(s.clone()),
        Value::Uuid(u) => J::String(u.to_string()),
        Value::Union(_, inner) => plain(inner),
        Value::Array(items) => J::Array(items.iter().map(plain).collect()),
        Value::Map(entries) => {
            J::Object(entries.iter().map(|(k, v)| (k.clone(), plain(v))).collect())
        }
        Value::Record(fields) => {
            J::Object(fields.iter().map(|(k, v)| (k.clone(), plain(v))).collect())
        }
        other => panic!("the schemas grew a type this test does not compare: {other:?}"),
    }
}

/// The Python block of README.md that follows the `downstream-example` marker.
fn readme_example() -> Result<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md"))?;
    let (_, after) = readme
        .split_once("<!-- downstream-example")
        .context("README.md has no downstream-example marker")?;
    let (_, code) = after
        .split_once("```python\n")
        .context("no python block after the marker")?;
    let (code, _) = code.split_once("```").context("an unclosed block")?;
    Ok(code.to_owned())
}

/// Equal JSON, doubles within a rounding step: serde_json's default float parser may land one
/// unit in the last place off the double that Python printed.
fn same(read: &serde_json::Value, written: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (read, written) {
        (J::Number(a), J::Number(b)) if a.is_f64() || b.is_f64() => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            (a - b).abs() <= 4.0 * f64::EPSILON * a.abs().max(b.abs())
        }
        (J::Array(a), J::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (J::Object(a), J::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, x)| b.get(k).is_some_and(|y| same(x, y)))
        }
        _ => read == written,
    }
}

/// Checks a reader's JSON lines (`{"topic", "offset", "value"}`) against what was written:
/// each record read was written, with the same value, and every record written was read.
fn compare(
    reader: &str,
    output: &std::process::Output,
    written: &BTreeMap<(String, i64), serde_json::Value>,
    seed: u64,
) -> Result<usize> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "{reader} failed ({}):\n{}\n{stdout}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut read = 0;
    for line in stdout.lines() {
        let record: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("{reader} printed {line:?}"))?;
        let topic = record["topic"].as_str().unwrap_or_default().to_owned();
        let offset = record["offset"].as_i64().unwrap_or(-1);
        let Some(expected) = written.get(&(topic.clone(), offset)) else {
            bail!("{reader} read {topic}@{offset}, which this test did not write");
        };
        assert!(
            same(&record["value"], expected),
            "{topic}@{offset}: {reader} read another value than was written (seed {seed})\n  \
             read:    {}\n  written: {expected}",
            record["value"]
        );
        read += 1;
    }
    assert_eq!(read, written.len(), "{reader} read every record written");
    Ok(read)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_java_read_every_event_type_through_the_registry() -> Result<()> {
    let seed = seed();
    println!("seed {seed} (CALLSTREAM_TEST_SEED={seed} replays it)");
    let topics = Topics {
        partitions: 1,
        ..Topics::with_prefix(format!("{}-", unique_name("downstream")))
    };
    let kafka = KafkaSettings::new(bootstrap_servers(), "downstream-readers-test");
    admin::ensure_topics(&kafka, &topics.specs()).await?;
    let client = RegistryClient::new(&stack_registry_url())?;
    let ids = install(&client, &topics, Duration::from_secs(120)).await?;
    assert_eq!(wire::framing(), wire::Framing::Confluent);
    println!("registered {} schemas at {}", ids.len(), client.url());

    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap_servers())
        .set("enable.idempotence", "true")
        .create()?;
    let mut bytes_seed = [0u8; 32];
    bytes_seed[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes_seed),
    );
    // (topic, offset) -> what was written, as JSON.
    let mut written: BTreeMap<(String, i64), serde_json::Value> = BTreeMap::new();
    let subjects = value_subjects(&topics);
    for (subject, kind) in &subjects {
        let topic = subject.trim_end_matches("-value");
        for _ in 0..PER_TOPIC {
            let value = support::value_of(kind.schema())
                .new_tree(&mut runner)
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .current();
            let raw = support::written_by(kind.schema(), kind.fingerprint(), value);
            let event = decode_any(&raw).context("a generated value decodes")?;
            let bytes = event.encode()?;
            assert_eq!(
                wire::schema_id(&bytes),
                ids.iter().find(|(k, _)| k == kind).map(|(_, id)| *id)
            );
            let (_, decoded) = decode_value(&bytes)?;
            let key = event.envelope().event_id.to_string();
            let delivery = producer
                .send(
                    FutureRecord::to(topic).key(&key).payload(&bytes),
                    Timeout::After(Duration::from_secs(30)),
                )
                .await
                .map_err(|(e, _)| e)?;
            written.insert((topic.to_owned(), delivery.offset), plain(&decoded));
        }
    }

    let python = std::env::var("CALLSTREAM_CONFLUENT_PYTHON").unwrap_or_else(|_| {
        repo_root()
            .join(".stack/confluent-kafka/venv/bin/python")
            .display()
            .to_string()
    });
    let mut command = tokio::process::Command::new(&python);
    command
        .arg(repo_root().join("tests/python/read_avro_topics.py"))
        .arg(bootstrap_servers())
        .arg(stack_registry_url());
    for (subject, _) in &subjects {
        command.arg(format!(
            "{}={PER_TOPIC}",
            subject.trim_end_matches("-value")
        ));
    }
    let output = tokio::time::timeout(Duration::from_secs(400), command.output())
        .await
        .context("the Python reader did not finish in 400 s")?
        .with_context(|| format!("running {python} (cargo xtask test installs it)"))?;
    let read = compare("Python's AvroDeserializer", &output, &written, seed)?;

    // Apicurio's Java deserializer, as a Java team would run it.
    let libs = java_libs("CALLSTREAM_APICURIO_SERDE_LIBS", "apicurio-serde")
        .display()
        .to_string();
    let mut command = tokio::process::Command::new(java());
    command
        // Java's own single-file launch: no build step for a 100-line reader.
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        .arg("-cp")
        .arg(format!("{libs}/*"))
        .arg(repo_root().join("tests/java/ApicurioReader.java"))
        .arg(bootstrap_servers())
        .arg(stack_registry_url().replace("/apis/ccompat/v7", "/apis/registry/v3"));
    for (subject, _) in &subjects {
        command.arg(format!(
            "{}={PER_TOPIC}",
            subject.trim_end_matches("-value")
        ));
    }
    let output = tokio::time::timeout(Duration::from_secs(300), command.output())
        .await
        .context("the Java reader did not finish in 300 s")?
        .with_context(|| format!("running java on {libs} (cargo xtask test fetches them)"))?;
    let read_by_java = compare("Apicurio's AvroKafkaDeserializer", &output, &written, seed)?;
    assert_eq!(read_by_java, read);

    // The README's example, as a downstream team would paste it, against these topics.
    let launches = subjects
        .iter()
        .map(|(subject, _)| subject.trim_end_matches("-value"))
        .find(|topic| topic.ends_with("-call-launches"))
        .context("a call-launches topic")?;
    let example = readme_example()?
        .replace("demo-<run id>-call-launches", launches)
        .replace("127.0.0.1:9092", &bootstrap_servers())
        .replace(
            "http://127.0.0.1:8085/apis/ccompat/v7",
            &stack_registry_url(),
        )
        .replace("\"my-team\"", &format!("\"{}\"", unique_name("readme")))
        // The example stops after 10 s without a record; joining the group on a loaded
        // machine can take longer than that.
        .replace("c.poll(10)", "c.poll(30)");
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(&python)
            .args(["-c", &example])
            .output(),
    )
    .await
    .context("the README's example did not finish in 120 s")??;
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the README's example failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut expected: Vec<String> = written
        .iter()
        .filter(|((topic, _), _)| topic == launches)
        .map(|(_, value)| {
            format!(
                "{} {} {}",
                value["event_id"].as_str().unwrap_or_default(),
                value["status"].as_str().unwrap_or_default(),
                value["launch_id"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let mut lines: Vec<String> = printed.lines().map(str::to_owned).collect();
    expected.sort();
    lines.sort();
    assert_eq!(lines, expected, "the README's example prints each launch");
    println!(
        "Python's AvroDeserializer and Apicurio's Java one each read {read} records of {} event types on {} topics, each equal to what was written",
        ids.len(),
        subjects.len()
    );
    Ok(())
}

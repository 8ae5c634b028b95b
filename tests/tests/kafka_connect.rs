//! Kafka Connect reads callstream's topics: a standalone worker from the Kafka distribution's
//! own jars (`connect-runtime`, `connect-file`), with Apicurio's `AvroConverter` as its value
//! converter (`apicurio.registry.as-confluent=true`: the schema id is the 4 bytes of the
//! Confluent framing), sinks `call-launches` into a file through the file sink connector, and
//! the file holds every launch callstream wrote, read back through the registry.
//!
//! The jars are fetched by `cargo xtask test` (xtask/java/connect, xtask/java/apicurio-converter).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callstream_e2e::fixtures::call_launch;
use callstream_e2e::{
    bootstrap_servers, java, java_libs, produce, producer, repo_root, stack_registry_url,
    unique_name,
};
use callstream_platform::{admin, topics, KafkaSettings, Topics};
use callstream_schema_registry::{install, RegistryClient};
use callstream_schemas::{wire, Event, LaunchStatus};
use chrono::Utc;
use uuid::Uuid;

/// Launches written: enough to span several fetches of the sink task.
const LAUNCHES: usize = 300;
/// How long the worker may take to start, read and flush them (a loaded 2-core machine).
const PATIENCE: Duration = Duration::from_secs(300);

/// The worker's settings: where Kafka is, the converters, the plugin folder, its offsets.
fn worker_properties(dir: &Path, converter_libs: &Path) -> Result<String> {
    let plugin_path = converter_libs
        .parent()
        .context("the converter's libs folder has a parent")?;
    // Apicurio 2.x serdes speak the registry's v2 API, which Apicurio 3 still serves.
    let registry = stack_registry_url().replace("/apis/ccompat/v7", "/apis/registry/v2");
    Ok(format!(
        "bootstrap.servers={bootstrap}
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=io.apicurio.registry.utils.converter.AvroConverter
value.converter.apicurio.registry.url={registry}
value.converter.apicurio.registry.as-confluent=true
value.converter.apicurio.registry.use-id=contentId
plugin.path={plugins}
offset.storage.file.filename={offsets}
offset.flush.interval.ms=1000
listeners=http://127.0.0.1:0
consumer.isolation.level=read_committed
",
        bootstrap = bootstrap_servers(),
        plugins = plugin_path.display(),
        offsets = dir.join("offsets").display(),
    ))
}

fn sink_properties(name: &str, topic: &str, file: &Path) -> String {
    format!(
        "name={name}
connector.class=org.apache.kafka.connect.file.FileStreamSinkConnector
tasks.max=1
topics={topic}
file={}
",
        file.display()
    )
}

/// A field of a Connect `Struct`'s text, `Struct{event_id=...,launch_id=<uuid>,...}`.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let rest = line.split(&format!(",{name}=")).nth(1)?;
    rest.split([',', '}']).next()
}

/// The lines of the sink's file, and the (launch id, tenant, status) each names.
fn launches_in(file: &Path) -> (usize, BTreeSet<(String, String, String)>) {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let launches = text
        .lines()
        .filter_map(|line| {
            Some((
                field(line, "launch_id")?.to_owned(),
                field(line, "tenant_id")?.to_owned(),
                field(line, "status")?.to_owned(),
            ))
        })
        .collect();
    (text.lines().count(), launches)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_file_sink_with_apicurios_converter_holds_every_launch() -> Result<()> {
    let name = unique_name("connect");
    let topics = Topics {
        partitions: 3,
        ..Topics::with_prefix(format!("{name}-"))
    };
    let kafka = KafkaSettings::new(bootstrap_servers(), "kafka-connect-test");
    admin::ensure_topics(&kafka, &topics.specs()).await?;
    let client = RegistryClient::new(&stack_registry_url())?;
    install(&client, &topics, Duration::from_secs(120)).await?;
    assert_eq!(wire::framing(), wire::Framing::Confluent);

    // Launches as the dispatcher reports them, every status and the optional fields both ways.
    let topic = topics.name(topics::CALL_LAUNCHES);
    let producer = producer()?;
    let statuses = [
        LaunchStatus::Accepted,
        LaunchStatus::Failed,
        LaunchStatus::Ambiguous,
        LaunchStatus::Shadow,
        LaunchStatus::Held,
    ];
    let mut written = BTreeSet::new();
    for i in 0..LAUNCHES {
        let contact = format!("contact-{}", i % 40);
        let mut launch = call_launch(
            &format!("tenant-{}", i % 3),
            &contact,
            "campaign-1",
            Uuid::new_v4(),
            Uuid::new_v4(),
            statuses[i % statuses.len()],
            Utc::now(),
        );
        if i % 2 == 0 {
            launch.provider_call_id = Some(format!("CA{i:032}"));
        } else {
            launch.reason = Some("outside the lead's hours".into());
        }
        let bytes = launch.encode()?;
        assert!(wire::schema_id(&bytes).is_some(), "Confluent-framed");
        produce(&producer, &topic, &contact, &bytes).await?;
        written.insert((
            launch.launch_id.to_string(),
            launch.tenant_id.clone(),
            launch.status.as_str().to_owned(),
        ));
    }

    let dir = repo_root().join("target").join("kafka-connect").join(&name);
    std::fs::create_dir_all(&dir)?;
    let connect_libs = java_libs("CALLSTREAM_CONNECT_LIBS", "connect");
    let converter_libs = java_libs("CALLSTREAM_APICURIO_CONVERTER_LIBS", "apicurio-converter");
    let worker = dir.join("worker.properties");
    let sink = dir.join("sink.properties");
    let file = dir.join("launches.txt");
    let log = dir.join("connect.log");
    std::fs::write(&worker, worker_properties(&dir, &converter_libs)?)?;
    std::fs::write(&sink, sink_properties(&name, &topic, &file))?;
    let log_file = std::fs::File::create(&log)?;
    let mut connect = tokio::process::Command::new(java())
        .arg("-Xmx256m")
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            repo_root()
                .join("xtask/kafka/tools-log4j2.properties")
                .display()
        ))
        .arg("-cp")
        .arg(format!("{}/*", connect_libs.display()))
        .arg("org.apache.kafka.connect.cli.ConnectStandalone")
        .arg(&worker)
        .arg(&sink)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting Connect from {}", connect_libs.display()))?;
    println!("Connect worker started; its log: {}", log.display());

    let started = Instant::now();
    let (lines, read) = loop {
        let (lines, read) = launches_in(&file);
        if read.is_superset(&written) {
            break (lines, read);
        }
        if let Some(status) = connect.try_wait()? {
            bail!(
                "the Connect worker exited ({status}) with {} of {LAUNCHES} launches in the file; \
                 its log:\n{}",
                read.len(),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        if started.elapsed() > PATIENCE {
            bail!(
                "after {PATIENCE:?} the file holds {} of {LAUNCHES} launches; the worker's log:\n{}",
                read.len(),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    connect.kill().await.ok();
    assert_eq!(
        read, written,
        "the file holds every launch (its id, tenant and status) and no other"
    );
    assert!(lines >= LAUNCHES, "one line per launch at least");
    println!(
        "Kafka Connect's file sink wrote {lines} lines holding all {LAUNCHES} launches in {:.1?}",
        started.elapsed()
    );
    Ok(())
}

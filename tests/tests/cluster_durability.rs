//! "202 means durable" read back from the three-broker cluster, not from our constants: the
//! design's topics as the brokers describe them (3 replicas, `min.insync.replicas=2`, no
//! unclean election), and the producers the services build (the gateway's publisher, the
//! runtime's transactional producer) as the brokers saw them, in their request log: every
//! Produce request asks `acks=-1` (all in-sync replicas), and each producer asked for a
//! producer id first (InitProducerId), which only an idempotent producer does. A plain
//! producer (`acks=1`, not idempotent) is logged as such, so the check can tell them apart.
//!
//! (A partition with fewer replicas than `min.insync.replicas` cannot show it: the broker
//! caps the minimum at the replication factor and acknowledges `acks=all` there.)
//!
//! A change to `acks`, idempotence or the topics' replication fails this test. Run in the
//! cluster phase of `cargo xtask test` (`#[ignore]`d otherwise).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_e2e::{cluster, run_kafka_tool, unique_name};
use callstream_gateway::publish::{Outgoing, ProducerTuning, Publisher};
use callstream_platform::{KafkaSettings, Topics};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::util::Timeout;

fn admin(settings: &KafkaSettings) -> Result<AdminClient<DefaultClientContext>> {
    Ok(settings.base_config().create()?)
}

/// Settings as `admin` under a client id of their own, to find the client in the log.
fn client(settings: &KafkaSettings, name: &str) -> KafkaSettings {
    let mut settings = settings.clone();
    settings.client_id = unique_name(name);
    settings
}

/// Sets the brokers' `kafka.request.logger` level (DEBUG logs every request, with `acks`).
async fn request_log(level: &str) -> Result<()> {
    let config = cluster::java_client_properties("admin");
    for broker in ["1", "2", "3"] {
        run_kafka_tool(
            "kafka.admin.ConfigCommand",
            &[
                "--bootstrap-server",
                cluster::BOOTSTRAP,
                "--command-config",
                &config.display().to_string(),
                "--alter",
                "--entity-type",
                "broker-loggers",
                "--entity-name",
                broker,
                "--add-config",
                &format!("kafka.request.logger={level}"),
            ],
            Duration::from_secs(60),
        )
        .await
        .with_context(|| format!("setting broker {broker}'s request log to {level}"))?;
    }
    Ok(())
}

/// The request-log lines of `client_id`'s `api` requests, on every broker.
fn logged(client_id: &str, api: &str) -> Vec<String> {
    let (client, api) = (
        format!("\"clientId\":\"{client_id}\""),
        format!("\"requestApiKeyName\":\"{api}\""),
    );
    (1..=3)
        .flat_map(|node| {
            let log = cluster::dir().join(format!("node-{node}/kafka.log"));
            std::fs::read_to_string(log)
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains(&client) && l.contains(&api))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Waits (the log is written as requests complete) until `client_id` has `api` requests
/// logged, and returns them.
async fn wait_logged(client_id: &str, api: &str) -> Result<Vec<String>> {
    for _ in 0..100 {
        let lines = logged(client_id, api);
        if !lines.is_empty() {
            return Ok(lines);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("no {api} request of {client_id} in the brokers' request log")
}

/// Every Produce request of `client_id` asked all in-sync replicas, and the client asked
/// for a producer id first.
async fn assert_durable(client_id: &str) -> Result<()> {
    let produces = wait_logged(client_id, "PRODUCE").await?;
    for line in &produces {
        assert!(
            line.contains("\"acks\":-1"),
            "{client_id} produced without acks=all: {line}"
        );
    }
    wait_logged(client_id, "INIT_PRODUCER_ID")
        .await
        .with_context(|| format!("{client_id} is not idempotent"))?;
    println!(
        "{client_id}: {} Produce requests, all acks=-1, idempotent",
        produces.len()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs `cargo xtask up --cluster`"]
async fn producers_and_topics_on_the_cluster_are_durable_as_read_back() -> Result<()> {
    let settings = cluster::settings("admin")?;

    // The design's topics, as the brokers describe them.
    let names: Vec<String> = Topics::default()
        .specs()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    let brokers = admin(&settings)?;
    let metadata = brokers
        .inner()
        .fetch_metadata(None, Duration::from_secs(30))
        .context("cluster metadata")?;
    for name in &names {
        let topic = metadata
            .topics()
            .iter()
            .find(|t| t.name() == name)
            .with_context(|| format!("{name} is not on the cluster"))?;
        for partition in topic.partitions() {
            assert_eq!(partition.replicas().len(), 3, "{name}/{}", partition.id());
        }
    }
    let resources: Vec<ResourceSpecifier> =
        names.iter().map(|n| ResourceSpecifier::Topic(n)).collect();
    let configs = brokers
        .describe_configs(&resources, &AdminOptions::new())
        .await?;
    for (name, config) in names.iter().zip(configs) {
        let config = config.map_err(|e| anyhow::anyhow!("describing {name}: {e:?}"))?;
        let value = |key: &str| config.get(key).and_then(|e| e.value.clone());
        assert_eq!(value("min.insync.replicas").as_deref(), Some("2"), "{name}");
        assert_eq!(
            value("unclean.leader.election.enable").as_deref(),
            Some("false"),
            "{name}"
        );
    }
    println!(
        "{} design topics: 3 replicas, 2 in sync, no unclean election",
        names.len()
    );

    let topic = unique_name("durability");
    let spec = NewTopic::new(&topic, 3, TopicReplication::Fixed(3));
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    for result in brokers.create_topics([&spec], &options).await? {
        result.map_err(|(topic, code)| anyhow::anyhow!("creating {topic}: {code}"))?;
    }
    callstream_platform::admin::await_leaders(&brokers, cluster::BOOTSTRAP, &[(&topic, 3)]).await?;
    request_log("DEBUG").await?;
    let checked = produce_and_check(&settings, &topic).await;
    // Back to quiet whatever happened: the next tests and the log's readers need it.
    request_log("WARN").await?;
    brokers.delete_topics(&[&topic], &options).await?;
    checked
}

async fn produce_and_check(settings: &KafkaSettings, topic: &str) -> Result<()> {
    // Control: a producer with acks=1 and no idempotence shows as such.
    let plain = client(settings, "durability-plain");
    let mut config: ClientConfig = plain.base_config();
    config.set("acks", "1").set("enable.idempotence", "false");
    let producer: FutureProducer = config.create()?;
    producer
        .send(
            FutureRecord::to(topic).key("k").payload("plain"),
            Timeout::Never,
        )
        .await
        .map_err(|(e, _)| anyhow::anyhow!("the plain producer: {e}"))?;
    let produces = wait_logged(&plain.client_id, "PRODUCE").await?;
    assert!(
        produces.iter().all(|l| l.contains("\"acks\":1")),
        "{produces:?}"
    );
    assert!(logged(&plain.client_id, "INIT_PRODUCER_ID").is_empty());

    // The gateway's publisher, built as the gateway builds it.
    let gateway = client(settings, "durability-gateway");
    let tuning = ProducerTuning {
        produce_timeout: Duration::from_secs(10),
        linger: Duration::from_millis(2),
    };
    let publisher = Publisher::new(gateway.clone(), tuning)?;
    for key in ["a", "b", "c"] {
        publisher
            .publish(Outgoing {
                topic,
                key,
                payload: b"webhook",
                headers: &[],
            })
            .await
            .context("the gateway's publisher")?;
    }
    assert_durable(&gateway.client_id).await?;

    // The transactional producer, from the config every processor's runtime uses.
    let runtime = client(settings, "durability-runtime");
    let producer: FutureProducer = runtime
        .transactional_producer_config(&unique_name("durability-tx"))
        .create()?;
    producer.init_transactions(Timeout::After(Duration::from_secs(30)))?;
    producer.begin_transaction()?;
    producer
        .send(
            FutureRecord::to(topic).key("k").payload("tx"),
            Timeout::Never,
        )
        .await
        .map_err(|(e, _)| anyhow::anyhow!("transactional send: {e}"))?;
    producer.commit_transaction(Timeout::After(Duration::from_secs(30)))?;
    assert_durable(&runtime.client_id).await
}

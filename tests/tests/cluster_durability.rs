//! "202 means durable" read back from the three-broker cluster, not from our constants: the
//! design's topics as the brokers describe them (3 replicas, `min.insync.replicas=2`, no
//! unclean election); the producers the services build (the gateway's publisher, the
//! runtime's transactional producer) refused by a partition that cannot reach two in-sync
//! replicas, which only a producer asking `acks=all` is; and each of them known to the
//! broker as an idempotent producer (DescribeProducers), which a plain producer is not.
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

const PROBE_TIMEOUT: Duration = Duration::from_secs(4);

fn admin(settings: &KafkaSettings) -> Result<AdminClient<DefaultClientContext>> {
    Ok(settings.base_config().create()?)
}

/// A topic of `replicas` replicas and one partition that asks `min_insync` in sync.
async fn create(
    settings: &KafkaSettings,
    name: &str,
    replicas: i32,
    min_insync: &str,
) -> Result<()> {
    let topic = NewTopic::new(name, 1, TopicReplication::Fixed(replicas))
        .set("min.insync.replicas", min_insync);
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    for result in admin(settings)?.create_topics([&topic], &options).await? {
        result.map_err(|(topic, code)| anyhow::anyhow!("creating {topic}: {code}"))?;
    }
    callstream_platform::admin::await_leaders(&admin(settings)?, cluster::BOOTSTRAP, &[(name, 1)])
        .await?;
    Ok(())
}

/// The producer ids the partition's leader keeps state for (idempotent producers only).
async fn producer_ids(topic: &str) -> Result<Vec<String>> {
    let config = cluster::java_client_properties("admin");
    let out = run_kafka_tool(
        "org.apache.kafka.tools.TransactionsCommand",
        &[
            "--bootstrap-server",
            cluster::BOOTSTRAP,
            "--command-config",
            &config.display().to_string(),
            "describe-producers",
            "--topic",
            topic,
            "--partition",
            "0",
        ],
        Duration::from_secs(60),
    )
    .await?;
    Ok(out
        .stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|id| id.parse::<i64>().is_ok())
        .map(str::to_owned)
        .collect())
}

fn record<'a>(topic: &'a str) -> Outgoing<'a> {
    Outgoing {
        topic,
        key: "durability-probe",
        payload: b"probe",
        headers: &[],
    }
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
    let client = admin(&settings)?;
    let metadata = client
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
    let configs = client
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

    // A partition with one replica that asks two in sync: only acks=all is refused there.
    let short = unique_name("durability-short");
    create(&settings, &short, 1, "2").await?;
    let healthy = unique_name("durability-healthy");
    create(&settings, &healthy, 3, "2").await?;
    let plain = unique_name("durability-plain");
    create(&settings, &plain, 3, "2").await?;

    // Control: a producer with acks=1 and no idempotence is accepted by the short partition,
    // and the broker keeps no producer state for it.
    let mut control: ClientConfig = settings.base_config();
    control
        .set("acks", "1")
        .set("enable.idempotence", "false")
        .set("message.timeout.ms", "10000");
    let control: FutureProducer = control.create()?;
    for topic in [&short, &plain] {
        control
            .send(
                FutureRecord::to(topic).key("k").payload("control"),
                Timeout::Never,
            )
            .await
            .map_err(|(e, _)| anyhow::anyhow!("the acks=1 control to {topic}: {e}"))?;
    }
    assert!(
        producer_ids(&plain).await?.is_empty(),
        "a plain producer left state"
    );

    // The gateway's publisher, built as the gateway builds it.
    let tuning = ProducerTuning {
        produce_timeout: PROBE_TIMEOUT,
        linger: Duration::from_millis(2),
    };
    let gateway = Publisher::new(settings.clone(), tuning)?;
    match gateway.publish(record(&short)).await {
        Ok(at) => bail!("the gateway's record was acknowledged below min.insync.replicas: {at:?}"),
        Err(e) => println!("gateway publisher on a partition short of replicas: {e}"),
    }
    gateway
        .publish(record(&healthy))
        .await
        .context("the gateway's publisher on a healthy partition")?;
    assert!(
        !producer_ids(&healthy).await?.is_empty(),
        "the broker knows no idempotent producer after the gateway's record"
    );

    // The runtime's transactional producer, from the config every processor uses.
    let transactional = unique_name("durability-tx");
    let mut config = settings.transactional_producer_config(&transactional);
    config.set("message.timeout.ms", PROBE_TIMEOUT.as_millis().to_string());
    let producer: FutureProducer = config.create()?;
    producer.init_transactions(Timeout::After(Duration::from_secs(30)))?;
    producer.begin_transaction()?;
    let delivery = producer
        .send(
            FutureRecord::to(&short).key("k").payload("tx"),
            Timeout::Never,
        )
        .await;
    let committed = producer.commit_transaction(Timeout::After(Duration::from_secs(30)));
    if delivery.is_ok() && committed.is_ok() {
        bail!("a transaction was committed on a partition short of in-sync replicas");
    }
    println!(
        "transactional producer on a partition short of replicas: {:?} / {:?}",
        delivery.err().map(|(e, _)| e.to_string()),
        committed.err().map(|e| e.to_string())
    );
    let healthy_tx = unique_name("durability-healthy-tx");
    create(&settings, &healthy_tx, 3, "2").await?;
    let producer: FutureProducer = settings
        .transactional_producer_config(&unique_name("durability-tx2"))
        .create()?;
    producer.init_transactions(Timeout::After(Duration::from_secs(30)))?;
    producer.begin_transaction()?;
    producer
        .send(
            FutureRecord::to(&healthy_tx).key("k").payload("tx"),
            Timeout::Never,
        )
        .await
        .map_err(|(e, _)| anyhow::anyhow!("transactional send: {e}"))?;
    producer.commit_transaction(Timeout::After(Duration::from_secs(30)))?;
    assert!(
        !producer_ids(&healthy_tx).await?.is_empty(),
        "the broker knows no idempotent producer after a transaction"
    );

    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let created = [&short, &healthy, &plain, &healthy_tx].map(String::as_str);
    client.delete_topics(&created, &options).await?;
    Ok(())
}

//! Topics written by callstream are readable by the Kafka distribution's own tools, and keys
//! land on the partition a Java client would choose: what DESIGN.md promises downstream
//! consumers and Kafka Streams apps. Runs against the real broker of `cargo xtask up`.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is the failure report

use std::collections::HashMap;
use std::time::Duration;

use callstream_e2e::{
    bootstrap_servers, create_topic, produce, producer, run_kafka_tool, run_kafka_tool_with_input,
    unique_name, CONSOLE_CONSUMER, CONSOLE_PRODUCER,
};

const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the console consumer from the beginning of `topic` until it has printed `n` records,
/// each as `partition|key|value`.
async fn console_consume(topic: &str, n: usize) -> Vec<(i32, String, String)> {
    let bootstrap = bootstrap_servers();
    let n = n.to_string();
    let out = run_kafka_tool(
        CONSOLE_CONSUMER,
        &[
            "--bootstrap-server",
            &bootstrap,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            &n,
            "--timeout-ms",
            "60000",
            "--property",
            "print.partition=true",
            "--property",
            "print.key=true",
            "--property",
            "key.separator=|",
        ],
        TOOL_TIMEOUT,
    )
    .await
    .unwrap();
    // The console consumer prints `Partition:3|key|value`.
    out.stdout
        .lines()
        .map(|line| {
            let mut parts = line.splitn(3, '|');
            let partition = parts.next().unwrap().trim_start_matches("Partition:");
            (
                partition.parse().unwrap(),
                parts.next().unwrap().to_string(),
                parts.next().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_record_produced_from_rust_is_read_back_by_the_kafka_console_consumer() {
    let topic = unique_name("e2e-standard-tools");
    create_topic(&topic, 3).await.unwrap();
    let key = unique_name("contact");
    let value = "{\"status\":\"completed\",\"note\":\"read by a standard tool\"}";

    let producer = producer().unwrap();
    let (partition, offset) = produce(&producer, &topic, &key, value.as_bytes())
        .await
        .unwrap();
    assert_eq!(offset, 0, "first record of a fresh topic");

    let records = console_consume(&topic, 1).await;
    assert_eq!(records, vec![(partition, key, value.to_string())]);
}

#[tokio::test]
async fn keys_land_on_the_partition_the_java_producer_chooses() {
    let topic = unique_name("e2e-copartition");
    create_topic(&topic, 12).await.unwrap();
    let keys: Vec<String> = [
        "tenant-a:+15551230001",
        "tenant-a:+15551230002",
        "tenant-b:42",
        "x",
        "contact-7",
    ]
    .iter()
    .map(|k| k.to_string())
    .chain((0..5).map(|i| unique_name(&format!("contact{i}"))))
    .collect();

    // The same keys, once from rdkafka (murmur2_random) and once from the Java console producer.
    let producer = producer().unwrap();
    let mut rust_partition = HashMap::new();
    for key in &keys {
        let (partition, _) = produce(&producer, &topic, key, b"from-rust").await.unwrap();
        rust_partition.insert(key.clone(), partition);
    }
    let input: String = keys.iter().map(|k| format!("{k}|from-java\n")).collect();
    let bootstrap = bootstrap_servers();
    run_kafka_tool_with_input(
        CONSOLE_PRODUCER,
        &[
            "--bootstrap-server",
            &bootstrap,
            "--topic",
            &topic,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=|",
        ],
        &input,
        TOOL_TIMEOUT,
    )
    .await
    .unwrap();

    let records = console_consume(&topic, 2 * keys.len()).await;
    assert_eq!(records.len(), 2 * keys.len());
    for (partition, key, value) in records {
        assert_eq!(
            Some(&partition),
            rust_partition.get(&key),
            "key {key:?} ({value}) is on partition {partition}, rdkafka put it on {:?}",
            rust_partition.get(&key)
        );
    }
}

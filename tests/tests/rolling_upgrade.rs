//! A rolling upgrade on the real broker and the stack's schema registry: a newer writer has
//! registered the next version of `CallLaunch` (a field added, optional with a default) and
//! written launches with it; a completion detector of today's build, which was never compiled
//! with that schema, fetches it from the registry by the id in each record and reads them
//! through Avro schema resolution: one `completion-missing` per launch, none twice, no dead
//! letter.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _, Result};
use callstream_completion_detector::testkit::accepted_launch;
use callstream_completion_detector::{processor, spec, APP_ID};
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{produce, producer, stack_registry_url, unique_name};
use callstream_platform::{topics, KafkaSettings, Topics};
use callstream_schema_registry::{RegistryClient, SchemaFetcher};
use callstream_schemas::{wire, CompletionMissing, Event, EventKind};
use rdkafka::message::Message;
use uuid::Uuid;

#[path = "next_launch/mod.rs"]
mod next_launch;

const PARTITIONS: i32 = 3;
const LAUNCHES: usize = 30;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn todays_detector_reads_the_next_versions_launches_without_a_dead_letter() -> Result<()> {
    let t = Topics {
        partitions: PARTITIONS,
        ..Topics::with_prefix(format!("{}-", unique_name("upgrade")))
    };
    callstream_platform::admin::ensure_topics(&KafkaSettings::from_env("upgrade-test"), &t.specs())
        .await?;
    let launches_topic = t.name(topics::CALL_LAUNCHES);
    let subject = format!("{launches_topic}-value");

    // The registry as the upgrade leaves it: today's schema, then the next version (BACKWARD
    // compatible, so the registry takes it).
    let registry = RegistryClient::new(&stack_registry_url())?;
    let today = registry
        .register(&subject, EventKind::CallLaunch.schema_json())
        .await?;
    let next_json = next_launch::schema();
    let next = registry.register(&subject, &next_json).await?;
    assert_ne!(today, next, "the next version is a new schema");
    assert!(
        !wire::knows_id(next),
        "this build has never seen the next version"
    );

    // The newer writer's launches: the next version's body, framed with its id.
    let next_schema = apache_avro::Schema::parse_str(&next_json)?;
    let producer = producer()?;
    let mut launch_ids = Vec::new();
    for i in 0..LAUNCHES {
        let id = Uuid::new_v4();
        let contact = format!("contact-{i}");
        // Accepted a minute ago: past its window, so the detector reports it at once.
        let launch = accepted_launch(
            "t1",
            &contact,
            id,
            &format!("CA{}", id.simple()),
            now_ms() - 60_000,
        );
        let bytes = next_launch::framed(&launch, Some("us-central"), next, &next_schema)?;
        produce(&producer, &launches_topic, &contact, &bytes).await?;
        launch_ids.push(id);
    }

    // Today's detector, with the registry's gate as `callstream process` gives it.
    let app = format!("{}{APP_ID}", t.prefix);
    let config = next_launch::detector_config(&t);
    let fetcher = Arc::new(SchemaFetcher::new(registry.clone())?);
    let mut metrics = None;
    let running = Running::start(processor(config), spec(&t, &app), |c| {
        c.value_gate = Some(fetcher);
        metrics = Some(c.metrics.clone());
    });
    let metrics = metrics.context("the runtime's metrics")?;

    let consumer = reader(&t.name(topics::COMPLETION_MISSING), PARTITIONS)?;
    let mut reported: HashMap<Uuid, usize> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while reported.len() < LAUNCHES && Instant::now() < deadline {
        if running.is_finished() {
            bail!("the detector stopped");
        }
        if let Ok(message) = tokio::time::timeout(Duration::from_secs(2), consumer.recv()).await {
            let message = message?;
            let missing = CompletionMissing::decode(message.payload().unwrap_or_default())?;
            *reported.entry(missing.launch_id).or_default() += 1;
        }
    }
    // A moment more, to see any report twice.
    while let Ok(message) = tokio::time::timeout(Duration::from_secs(3), consumer.recv()).await {
        let missing = CompletionMissing::decode(message?.payload().unwrap_or_default())?;
        *reported.entry(missing.launch_id).or_default() += 1;
    }
    running.stop()?;

    assert_eq!(
        metrics.dead_letters.get(),
        0,
        "no launch of the next version was dead-lettered"
    );
    assert!(
        wire::knows_id(next),
        "the detector learned the next version from the registry"
    );
    for id in &launch_ids {
        assert_eq!(
            reported.get(id),
            Some(&1),
            "launch {id}: one completion-missing"
        );
    }
    assert_eq!(
        reported.len(),
        LAUNCHES,
        "nothing reported that was not launched"
    );
    println!(
        "today's detector read {LAUNCHES} launches written with the next schema (id {next}, \
         today's {today}): {LAUNCHES} completion-missing, none twice, 0 dead letters"
    );
    Ok(())
}

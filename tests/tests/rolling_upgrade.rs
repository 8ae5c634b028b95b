//! A rolling upgrade on the real broker and the stack's schema registry, both ways.
//!
//! Old reader, new writer: a newer writer has
//! registered the next version of `CallLaunch` (a field added, optional with a default) and
//! written launches with it; a completion detector of today's build, which was never compiled
//! with that schema, fetches it from the registry by the id in each record and reads them
//! through Avro schema resolution: one `completion-missing` per launch, none twice, no dead
//! letter.
//!
//! New reader, old writer: today's build is itself the next version of the release before it
//! (`CallLaunch` v3 added `not_before` to v2). The previous release's writers framed their
//! launches with v2's registry id; today's detector, which registered only v3, reads them,
//! interleaved with its own, through the registry.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _, Result};
use apache_avro::types::Value;
use callstream_completion_detector::testkit::accepted_launch;
use callstream_completion_detector::{processor, spec, APP_ID};
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{produce, producer, repo_root, stack_registry_url, unique_name};
use callstream_platform::{topics, KafkaSettings, Topics};
use callstream_schema_registry::{install, RegistryClient, SchemaFetcher};
use callstream_schemas::{decode_value, wire, CallLaunch, CompletionMissing, Event, EventKind};
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
    let t = fresh_topics("upgrade").await?;
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
        let (contact, launch) = old_enough_launch(i);
        let bytes = next_launch::framed(&launch, Some("us-central"), next, &next_schema)?;
        produce(&producer, &launches_topic, &contact, &bytes).await?;
        launch_ids.push(launch.launch_id);
    }

    let dead_letters = detect(&t, &registry, &launch_ids).await?;
    assert_eq!(
        dead_letters, 0,
        "no launch of the next version was dead-lettered"
    );
    assert!(
        wire::knows_id(next),
        "the detector learned the next version from the registry"
    );
    println!(
        "today's detector read {LAUNCHES} launches written with the next schema (id {next}, \
         today's {today}): {LAUNCHES} completion-missing, none twice, 0 dead letters"
    );
    Ok(())
}

/// Runs today's detector, with the registry's gate as `callstream process` gives it, until it
/// has reported every launch of `launch_ids`, and checks one `completion-missing` each and
/// nothing else; returns the dead letters it counted.
async fn detect(t: &Topics, registry: &RegistryClient, launch_ids: &[Uuid]) -> Result<u64> {
    let app = format!("{}{APP_ID}", t.prefix);
    let config = next_launch::detector_config(t);
    let fetcher = Arc::new(SchemaFetcher::new(registry.clone())?);
    let mut metrics = None;
    let running = Running::start(processor(config), spec(t, &app), |c| {
        c.value_gate = Some(fetcher);
        metrics = Some(c.metrics.clone());
    });
    let metrics = metrics.context("the runtime's metrics")?;

    let consumer = reader(&t.name(topics::COMPLETION_MISSING), PARTITIONS)?;
    let mut reported: HashMap<Uuid, usize> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while reported.len() < launch_ids.len() && Instant::now() < deadline {
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
    for id in launch_ids {
        assert_eq!(
            reported.get(id),
            Some(&1),
            "launch {id}: one completion-missing"
        );
    }
    assert_eq!(
        reported.len(),
        launch_ids.len(),
        "nothing reported that was not launched"
    );
    Ok(metrics.dead_letters.get())
}

async fn fresh_topics(name: &str) -> Result<Topics> {
    let t = Topics {
        partitions: PARTITIONS,
        ..Topics::with_prefix(format!("{}-", unique_name(name)))
    };
    callstream_platform::admin::ensure_topics(&KafkaSettings::from_env("upgrade-test"), &t.specs())
        .await?;
    Ok(t)
}

/// Launch `i` of a test, accepted a minute ago: past its window, so the detector reports it
/// at once.
fn old_enough_launch(i: usize) -> (String, CallLaunch) {
    let id = Uuid::new_v4();
    let contact = format!("contact-{i}");
    let launch = accepted_launch(
        "t1",
        &contact,
        id,
        &format!("CA{}", id.simple()),
        now_ms() - 60_000,
    );
    (contact, launch)
}

/// The previous release's `CallLaunch` (frozen as `schemas/history/call_launch.v2.avsc`):
/// today's v3 added `not_before`, optional with a default.
const PREVIOUS: &str = "schemas/history/call_launch.v2.avsc";
const PREVIOUS_LACKS: &str = "not_before";

/// `launch` as the previous release wrote it: the v2 body behind the Confluent header of `id`.
fn framed_by_previous(
    launch: &CallLaunch,
    id: u32,
    schema: &apache_avro::Schema,
) -> Result<Vec<u8>> {
    let (_, Value::Record(fields)) = decode_value(&launch.encode()?)? else {
        bail!("a launch decodes to a record");
    };
    let fields = fields
        .into_iter()
        .filter(|(name, _)| name != PREVIOUS_LACKS)
        .collect();
    next_launch::confluent_framed(fields, id, schema)
}

/// The other half of the upgrade: today's build is the next version of the release before
/// it, whose writers registered `CallLaunch` v2 and framed their launches with its id. Today's
/// detector registers its own schema at start (as every role does), never registered v2 in
/// this process, and reads the old writers' launches, interleaved with today's, by fetching
/// v2 from the registry: one completion-missing per launch, none twice, no dead letter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn todays_detector_reads_the_previous_releases_launches_without_a_dead_letter() -> Result<()>
{
    let t = fresh_topics("upgrade-prev").await?;
    let launches_topic = t.name(topics::CALL_LAUNCHES);
    let subject = format!("{launches_topic}-value");
    let registry = RegistryClient::new(&stack_registry_url())?;

    // The previous release registered v2 ...
    let previous_json = std::fs::read_to_string(repo_root().join(PREVIOUS))?;
    let previous = registry.register(&subject, &previous_json).await?;
    // ... and today's build registers v3 at start, which the registry takes as BACKWARD.
    let ids = install(&registry, &t, Duration::from_secs(120)).await?;
    let today = ids
        .iter()
        .find(|(kind, _)| *kind == EventKind::CallLaunch)
        .map(|(_, id)| *id)
        .context("install registered CallLaunch")?;
    assert_ne!(previous, today, "v2 and v3 are different schemas");

    // Launches of both releases on the topic, as during the upgrade.
    let previous_schema = apache_avro::Schema::parse_str(&previous_json)?;
    let producer = producer()?;
    let mut launch_ids = Vec::new();
    for i in 0..LAUNCHES {
        let (contact, launch) = old_enough_launch(i);
        let bytes = if i % 2 == 0 {
            framed_by_previous(&launch, previous, &previous_schema)?
        } else {
            launch.encode()?
        };
        assert_eq!(
            wire::schema_id(&bytes),
            Some(if i % 2 == 0 { previous } else { today })
        );
        produce(&producer, &launches_topic, &contact, &bytes).await?;
        launch_ids.push(launch.launch_id);
    }

    let dead_letters = detect(&t, &registry, &launch_ids).await?;
    assert_eq!(
        dead_letters, 0,
        "no launch of the previous release was dead-lettered"
    );
    assert!(
        wire::knows_id(previous),
        "the detector learned v2's id from the registry"
    );
    println!(
        "today's detector read {} launches of the previous release (v2, id {previous}) and {} of \
         its own (v3, id {today}): {LAUNCHES} completion-missing, none twice, 0 dead letters",
        LAUNCHES.div_ceil(2),
        LAUNCHES / 2
    );
    Ok(())
}

//! The contact processor on the real broker (`cargo xtask up`): launch
//! requests and call events in, schedule requests, launch commands, CRM
//! commands and contact states out, as a `read_committed` consumer sees
//! them; stopped and restarted twice mid-stream, it emits exactly what the
//! in-memory driver emits for the same input, byte for byte, no more.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context as _, Result};
use callstream_contact::{processor, spec, ContactConfig};
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{producer, unique_name};
use callstream_platform::{KafkaSettings, Topics};
use callstream_runtime::Processor;
use callstream_schemas::*;
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;
use support::*;

const PARTITIONS: i32 = 3;
const CONTACTS: usize = 10;
const WAIT: Duration = Duration::from_secs(60);
const OUTPUTS: [&str; 5] = [
    "schedule-requests",
    "launch-commands",
    "crm-commands",
    "exceptions",
    "contact-state",
];

type KeyValue = (Option<Vec<u8>>, Option<Vec<u8>>);

/// One input record: logical topic, key, value, timestamp.
struct In {
    topic: &'static str,
    key: String,
    value: Vec<u8>,
    event_id: String,
    at_ms: i64,
}

fn command_in(cmd: &ContactCommand, at: chrono::DateTime<chrono::Utc>) -> In {
    In {
        topic: "contact-commands",
        key: cmd.contact_id.clone(),
        value: cmd.encode().unwrap(),
        event_id: cmd.event_id.to_string(),
        at_ms: at.timestamp_millis(),
    }
}

fn call_in(event: &CallEvent) -> In {
    In {
        topic: "call-events",
        key: event.contact_id.clone(),
        value: event.encode().unwrap(),
        event_id: event.event_id.to_string(),
        at_ms: event.occurred_at.timestamp_millis(),
    }
}

async fn send(producer: &FutureProducer, topics: &Topics, inputs: &[In]) -> Result<()> {
    for input in inputs {
        let topic = topics.name(input.topic);
        let headers = OwnedHeaders::new().insert(Header {
            key: "event-id",
            value: Some(input.event_id.as_bytes()),
        });
        let record = FutureRecord::to(&topic)
            .key(&input.key)
            .payload(&input.value)
            .timestamp(input.at_ms)
            .headers(headers);
        producer
            .send(record, Timeout::After(Duration::from_secs(30)))
            .await
            .map_err(|(e, _)| e)
            .with_context(|| format!("producing to {topic}"))?;
    }
    Ok(())
}

/// Reads `topic` from the beginning until `expected` records arrived, then
/// a little longer, so extra (duplicate) records would be seen too.
async fn collect(topic: &str, expected: usize) -> Result<Vec<KeyValue>> {
    let consumer = reader(topic, PARTITIONS)?;
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let quiet = if out.len() >= expected {
            Duration::from_millis(1500)
        } else {
            deadline.saturating_duration_since(tokio::time::Instant::now())
        };
        match tokio::time::timeout(quiet, consumer.recv()).await {
            Ok(message) => {
                let m = message?;
                out.push((m.key().map(<[u8]>::to_vec), m.payload().map(<[u8]>::to_vec)));
            }
            Err(_) if out.len() >= expected => return Ok(out),
            Err(_) => anyhow::bail!("{topic}: {} of {expected} records in time", out.len()),
        }
    }
}

fn decode<E: Event>(records: &[KeyValue]) -> Vec<E> {
    records
        .iter()
        .map(|(_, v)| E::decode(v.as_deref().unwrap()).unwrap())
        .collect()
}

fn start(topics: &Topics, app_id: &str) -> Running {
    let config = ContactConfig::new(topics);
    Running::start(processor(config), spec(topics, app_id), |c| {
        c.commit.interval = Duration::from_millis(50);
    })
}

/// What the in-memory driver emits for `inputs`, per logical output topic.
fn driver_outputs(inputs: &[In]) -> HashMap<&'static str, Vec<KeyValue>> {
    let mut h = harness();
    run_on_driver(&mut h, inputs);
    OUTPUTS
        .iter()
        .map(|t| {
            let records = h
                .driver
                .records(t)
                .into_iter()
                .map(|p| (p.key.clone(), p.value.clone()))
                .collect();
            (*t, records)
        })
        .collect()
}

fn run_on_driver<P: Processor>(h: &mut Harness<P>, inputs: &[In]) {
    for input in inputs {
        let record =
            callstream_runtime::Input::new(input.topic, input.key.clone(), input.value.clone())
                .header("event-id", input.event_id.clone())
                .at(input.at_ms);
        h.driver.pipe(record);
    }
    assert!(h.driver.dead_letters().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launch_requests_and_call_events_flow_out_exactly_once_across_restarts() -> Result<()> {
    let mut topics = Topics::with_prefix(format!("{}-", unique_name("contact")));
    topics.partitions = PARTITIONS;
    let settings = KafkaSettings::from_env("contact-test");
    callstream_platform::admin::ensure_topics(&settings, &topics.specs()).await?;
    let app_id = unique_name("contact-app");
    let producer = producer()?;
    let contacts: Vec<String> = (0..CONTACTS).map(|i| format!("c{i}")).collect();
    let mut all = Vec::new();

    // Phase 1: launch requests, processor running.
    let running = start(&topics, &app_id);
    let requests: Vec<In> = contacts
        .iter()
        .map(|c| command_in(&launch_request(c, CAMPAIGN, "r1"), t0()))
        .collect();
    send(&producer, &topics, &requests).await?;
    let plans: Vec<ScheduleRequest> =
        decode(&collect(&topics.name("schedule-requests"), CONTACTS).await?);
    assert!(plans
        .iter()
        .all(|p| p.kind == ScheduleRequestKind::Plan && p.tenant_id == TENANT));
    all.extend(requests);
    running.stop()?;

    // Phase 2: the scheduler's launch_due arrives while the processor is down.
    let slot = t0() + minutes(5);
    let dues: Vec<In> = plans
        .iter()
        .map(|p| command_in(&launch_due(&p.contact_id, p, slot), slot))
        .collect();
    send(&producer, &topics, &dues).await?;
    all.extend(dues);
    let running = start(&topics, &app_id);
    let launches: Vec<LaunchCommand> =
        decode(&collect(&topics.name("launch-commands"), CONTACTS).await?);
    let launch_of: HashMap<_, _> = launches
        .iter()
        .map(|l| (l.contact_id.clone(), l.launch_id))
        .collect();

    // Phase 3: results, half of them while the processor is down again.
    let ended = t0() + minutes(10);
    let results: Vec<In> = contacts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let launch = Some(launch_of[c]);
            let call = format!("CA{i}");
            let event = if i % 2 == 0 {
                call_event(c, &call, launch, "completed", Some("machine_start"), ended)
            } else {
                let analysis = CallAnalysis {
                    summary: Some("asked about fees".into()),
                    ..CallAnalysis::default()
                };
                answered(c, &call, launch, analysis, ended)
            };
            call_in(&event)
        })
        .collect();
    let (first, second) = results.split_at(CONTACTS / 2);
    send(&producer, &topics, first).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    running.stop()?;
    send(&producer, &topics, second).await?;
    let running = start(&topics, &app_id);
    all.extend(results);

    // Voicemail: log + update; answered with a summary: log + note + update.
    let crm_expected = CONTACTS / 2 * 2 + CONTACTS / 2 * 3;
    let crm: Vec<CrmCommand> = decode(&collect(&topics.name("crm-commands"), crm_expected).await?);
    let retries = CONTACTS / 2;
    let expected = driver_outputs(&all);
    let counts = [
        ("schedule-requests", CONTACTS + retries),
        ("launch-commands", CONTACTS),
        ("crm-commands", crm_expected),
        ("exceptions", 0),
        ("contact-state", 3 * CONTACTS),
    ];
    for (topic, count) in counts {
        let mut got = collect(&topics.name(topic), count).await?;
        let mut want = expected[topic].clone();
        assert_eq!(got.len(), count, "{topic}: exactly once");
        got.sort();
        want.sort();
        assert_eq!(got, want, "{topic}: identical to the driver's records");
    }
    running.stop()?;

    // And what they say: one launch per contact under its stable id, each
    // CRM command keyed by the policy's idempotency key.
    for l in &launches {
        assert_eq!(
            l.launch_id,
            callstream_domain::ids::contact::launch(TENANT, l.job_id)
        );
    }
    let mut ops: Vec<_> = crm.iter().map(|c| c.operation_id).collect();
    ops.sort();
    ops.dedup();
    assert_eq!(ops.len(), crm_expected, "every CRM command has its own key");
    Ok(())
}

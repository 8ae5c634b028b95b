//! The scheduler against the real broker: schedule requests in, allocations
//! and LaunchDue out, with the control table applied by `control apply`;
//! the processor is stopped and a fresh instance (empty cache, state from
//! the changelogs) takes over mid-stream, and the output is exactly what
//! one uninterrupted run gives: every job allocated once, in the slot the
//! allocator's order implies, launched once; two tenants never interfere.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callstream_control::apply_file;
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{bootstrap_servers, fixtures, produce, producer, unique_name};
use callstream_platform::{admin, topics, KafkaSettings, Topics};
use callstream_scheduler::{processor, spec, SchedulerConfig};
use callstream_schemas::{
    Actor, ContactCommand, ContactCommandKind, Event, ScheduleEvent, ScheduleEventKind,
};
use rdkafka::consumer::StreamConsumer;
use rdkafka::message::Message;

const PARTITIONS: i32 = 3;
const JOBS_PER_TENANT: u128 = 30;
const TENANTS: [&str; 2] = ["acme", "beta"];

fn control_file(zone: &str) -> String {
    let mut file = String::new();
    for tenant in TENANTS {
        file.push_str(&format!(
            "[tenants.{tenant}.grid]\nslot_seconds = 1\nlaunches_per_slot = 1\ndefault_time_zone = \"{zone}\"\n\n\
             [tenants.{tenant}.campaigns.enrolment]\nwindows = [{{ days = \"every_day\", start = \"00:00\", end = \"24:00\" }}]\n\n"
        ));
    }
    file
}

/// Reads `topic` until `done` says so, or fails after `timeout`.
async fn collect<E: Event>(
    consumer: &StreamConsumer,
    into: &mut Vec<E>,
    timeout: Duration,
    done: impl Fn(&[E]) -> bool,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while !done(into) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!("timed out with {} records", into.len());
        }
        match tokio::time::timeout(left, consumer.recv()).await {
            Ok(message) => into.push(E::decode(message?.payload().unwrap_or_default())?),
            Err(_) => bail!("timed out with {} records", into.len()),
        }
    }
    Ok(())
}

fn count(events: &[ScheduleEvent], kind: ScheduleEventKind) -> usize {
    events.iter().filter(|e| e.kind == kind).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_allocations_and_launch_due_out_across_a_restart() -> Result<()> {
    let prefix = format!("{}-", unique_name("sched"));
    let topics = Topics {
        partitions: PARTITIONS,
        ..Topics::with_prefix(&prefix)
    };
    let kafka = KafkaSettings::new(bootstrap_servers(), "scheduler-test");
    admin::ensure_topics(&kafka, &topics.specs()).await?;
    let zone = fixtures::noon_zone();
    let control = callstream_control::ControlFile::parse(&control_file(&zone))?;
    apply_file(
        &kafka,
        &topics.name(topics::CONTROL),
        &control,
        Actor::operator("test"),
        None,
        false,
    )
    .await?;

    let app = format!("{prefix}scheduler");
    let start = || {
        Running::start(
            processor(SchedulerConfig::new(&topics)),
            spec(&topics, &app),
            |_| {},
        )
    };
    let events_reader = reader(&topics.name(topics::SCHEDULE_EVENTS), PARTITIONS)?;
    let commands_reader = reader(&topics.name(topics::CONTACT_COMMANDS), PARTITIONS)?;
    let requests = topics.name(topics::SCHEDULE_REQUESTS);
    let producer = producer()?;
    // Every job may go from the same instant on; slots are 1 s, one launch each.
    let earliest_ms = (chrono::Utc::now() + chrono::TimeDelta::seconds(40)).timestamp_millis();
    let send = |job: u128, tenant: &'static str| {
        let mut request = support::plan(tenant, job, &format!("{tenant}-lead-{job}"), earliest_ms);
        request.time_zone = Some(zone.clone());
        request
    };

    let mut events: Vec<ScheduleEvent> = Vec::new();
    let mut running = Some(start());
    let half = JOBS_PER_TENANT / 2;
    for job in 0..JOBS_PER_TENANT {
        if job == half {
            // Mid-stream: wait for the first half, then a fresh instance takes over.
            let expected = (half as usize) * TENANTS.len();
            collect(&events_reader, &mut events, Duration::from_secs(60), |e| {
                count(e, ScheduleEventKind::Allocated) >= expected
            })
            .await?;
            if let Some(first) = running.take() {
                first.stop()?;
            }
        }
        for tenant in TENANTS {
            let request = send(job, tenant);
            produce(&producer, &requests, tenant, &request.encode()?).await?;
        }
    }
    // A duplicate of an early job, after the restart: it must change nothing.
    produce(&producer, &requests, "acme", &send(0, "acme").encode()?).await?;
    let running = start();

    let total = JOBS_PER_TENANT as usize * TENANTS.len();
    collect(&events_reader, &mut events, Duration::from_secs(120), |e| {
        count(e, ScheduleEventKind::LaunchDue) >= total
    })
    .await?;
    let mut commands: Vec<ContactCommand> = Vec::new();
    collect(
        &commands_reader,
        &mut commands,
        Duration::from_secs(30),
        |c| c.len() >= total,
    )
    .await?;
    // Nothing more comes: no duplicate from the restart or the duplicate request.
    let late = collect(&events_reader, &mut events, Duration::from_secs(3), |e| {
        e.len() > 2 * total
    })
    .await;
    assert!(
        late.is_err(),
        "extra schedule events: {}",
        events.len() - 2 * total
    );
    running.stop()?;

    assert_eq!(events.len(), 2 * total);
    assert_eq!(count(&events, ScheduleEventKind::Allocated), total);
    let ids: HashSet<_> = events.iter().map(|e| e.event_id).collect();
    assert_eq!(ids.len(), events.len(), "event ids are unique");
    assert!(commands
        .iter()
        .all(|c| c.kind == ContactCommandKind::LaunchDue));
    assert_eq!(
        commands
            .iter()
            .map(|c| (c.tenant_id.clone(), c.job_id))
            .collect::<HashSet<_>>()
            .len(),
        total
    );

    // Per tenant, job k holds the k-th slot from the earliest time: what one
    // uninterrupted run gives; and both tenants use the same slots.
    let mut slots: BTreeMap<(&str, u128), i64> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e.kind == ScheduleEventKind::Allocated)
    {
        let tenant = TENANTS.iter().find(|t| **t == e.tenant_id).unwrap();
        slots.insert((tenant, e.job_id.as_u128()), e.slot.unwrap());
        assert!(e.slot_at.unwrap().timestamp_millis() >= earliest_ms);
        assert_eq!(e.time_zone.as_deref(), Some(zone.as_str()));
    }
    for tenant in TENANTS {
        let first = slots[&(tenant, 0)];
        for job in 0..JOBS_PER_TENANT {
            assert_eq!(
                slots[&(tenant, job)],
                first + job as i64,
                "{tenant} job {job}"
            );
        }
    }
    assert_eq!(slots[&("acme", 0)], slots[&("beta", 0)]);
    // Each launch came at (or after) its slot's time.
    for e in events
        .iter()
        .filter(|e| e.kind == ScheduleEventKind::LaunchDue)
    {
        assert_eq!(Some(e.occurred_at), e.slot_at);
    }
    Ok(())
}

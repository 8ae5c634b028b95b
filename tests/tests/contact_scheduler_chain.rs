//! The contact processor and the scheduler together on the real broker:
//! launch requests in (as the gateway's launch intake writes them), the
//! contact processor plans, the scheduler allocates and says `LaunchDue`,
//! the contact processor guards and launches; a voicemail result plans a
//! retry that goes round the same loop. Both processors are stopped and
//! restarted mid-stream; every job still launches exactly once.
//!
//! Its inputs are the contact processor's driver tests' (tenant `acme`,
//! campaign `enrol`, a Chicago number), built on `callstream_e2e::fixtures`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, Result};
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{fixtures, producer, unique_name};
use callstream_platform::{KafkaSettings, Topics};
use callstream_schemas::*;
use chrono::Utc;
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;

const PARTITIONS: i32 = 3;
const CONTACTS: usize = 5;

const TENANT: &str = "acme";
const CAMPAIGN: &str = "enrol";
/// A Chicago number (area code 312); the contact record names no zone.
const PHONE: &str = "+13125550100";

/// Tuesday 5 March 2024, 16:00 UTC: when the control changes were made.
fn t0() -> Timestamp {
    chrono::DateTime::from_timestamp(1_709_654_400, 0).unwrap_or_default()
}

fn launch_request(contact: &str, campaign: &str, request: &str) -> ContactCommand {
    ContactCommand {
        event_id: fixtures::id(&format!("lr/{contact}/{request}")),
        ..fixtures::launch_request(TENANT, contact, campaign, request, PHONE, t0())
    }
}

fn control_change(
    setting: ControlSetting,
    campaign: Option<&str>,
    value: ControlValue,
) -> ControlChange {
    let actor = Actor::operator("ops@acme");
    fixtures::control_change(TENANT, setting, campaign, value, actor, t0())
}

/// A Twilio status callback for the call of `launch`.
fn call_event(
    contact: &str,
    call_id: &str,
    launch: Option<uuid::Uuid>,
    status: &str,
    answered_by: Option<&str>,
    at: Timestamp,
) -> CallEvent {
    CallEvent {
        event_id: fixtures::id(&format!("ce/{call_id}/{status}/{answered_by:?}")),
        integration_id: Some("twilio-main".into()),
        launch_id: launch,
        answered_by: answered_by.map(str::to_owned),
        duration_seconds: Some(42),
        ..fixtures::call_event(TENANT, contact, call_id, status, at)
    }
}

async fn send(producer: &FutureProducer, topic: &str, key: &str, value: Vec<u8>) -> Result<()> {
    producer
        .send(
            FutureRecord::to(topic).key(key).payload(&value),
            Timeout::After(Duration::from_secs(30)),
        )
        .await
        .map_err(|(e, _)| e)
        .with_context(|| format!("producing to {topic}"))?;
    Ok(())
}

/// Reads `topic` until `expected` values arrived (then 2 s more, so extras
/// would show), within `wait`.
async fn collect<E: Event>(topic: &str, expected: usize, wait: Duration) -> Result<Vec<E>> {
    let consumer = reader(topic, PARTITIONS)?;
    let deadline = tokio::time::Instant::now() + wait;
    let mut out = Vec::new();
    loop {
        let patience = if out.len() >= expected {
            Duration::from_secs(2)
        } else {
            deadline.saturating_duration_since(tokio::time::Instant::now())
        };
        match tokio::time::timeout(patience, consumer.recv()).await {
            Ok(message) => out.push(E::decode(message?.payload().unwrap_or_default())?),
            Err(_) if out.len() >= expected => return Ok(out),
            Err(_) => anyhow::bail!("{topic}: {} of {expected} in time", out.len()),
        }
    }
}

fn start_both(topics: &Topics, contact_app: &str, scheduler_app: &str) -> (Running, Running) {
    let contact = Running::start(
        callstream_contact::processor(callstream_contact::ContactConfig::new(topics)),
        callstream_contact::spec(topics, contact_app),
        |c| c.commit.interval = Duration::from_millis(50),
    );
    let scheduler = Running::start(
        callstream_scheduler::processor(callstream_scheduler::SchedulerConfig::new(topics)),
        callstream_scheduler::spec(topics, scheduler_app),
        |c| c.commit.interval = Duration::from_millis(50),
    );
    (contact, scheduler)
}

/// Fresh topics named after `name`, and `control` set as both tests need: short slots with
/// room, every day open (federal hours still apply), a one-minute retry, and at most
/// `max_attempts` calls per campaign.
async fn chain(name: &str, max_attempts: i32) -> Result<(Topics, FutureProducer)> {
    let mut topics = Topics::with_prefix(format!("{}-", unique_name(name)));
    topics.partitions = PARTITIONS;
    let settings = KafkaSettings::from_env("contact-chain-test");
    callstream_platform::admin::ensure_topics(&settings, &topics.specs()).await?;
    let producer = producer()?;
    let grid = control_change(
        ControlSetting::GridSettings,
        None,
        ControlValue {
            grid: Some(GridSettings {
                slot_seconds: 5,
                launches_per_slot: 10,
                default_time_zone: "America/New_York".into(),
            }),
            ..ControlValue::default()
        },
    );
    let mut every_day = fixtures::every_day_campaign(1);
    if let Some(campaign) = every_day.campaign.as_mut() {
        campaign.max_attempts = max_attempts;
    }
    let campaign = control_change(ControlSetting::CampaignSettings, Some(CAMPAIGN), every_day);
    for change in [&grid, &campaign] {
        let topic = topics.name("control");
        send(&producer, &topic, &change.record_key(), change.encode()?).await?;
    }
    Ok((topics, producer))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launch_requests_go_round_contact_and_scheduler_to_launch_commands() -> Result<()> {
    let (topics, producer) = chain("chain", 3).await?;

    let (contact_app, scheduler_app) = (unique_name("contact"), unique_name("scheduler"));
    let (contact, scheduler) = start_both(&topics, &contact_app, &scheduler_app);
    let zone = fixtures::noon_zone();
    let now = Utc::now();
    for i in 0..CONTACTS {
        let mut request = launch_request(&format!("c{i}"), CAMPAIGN, "r1");
        request.occurred_at = now;
        request.contact.as_mut().unwrap().time_zone = Some(zone.clone());
        send(
            &producer,
            &topics.name("contact-commands"),
            &request.contact_id,
            request.encode()?,
        )
        .await?;
    }
    let launches_topic = topics.name("launch-commands");
    let first: Vec<LaunchCommand> =
        collect(&launches_topic, CONTACTS, Duration::from_secs(90)).await?;
    let contacts: BTreeSet<_> = first.iter().map(|l| l.contact_id.clone()).collect();
    assert_eq!(contacts.len(), CONTACTS, "one launch per contact");
    for l in &first {
        assert_eq!(l.origin, JobOrigin::CampaignEntry);
        assert!(
            l.slot_at >= now - chrono::TimeDelta::seconds(5),
            "never before it was asked"
        );
        assert_eq!(
            l.launch_id,
            callstream_domain::ids::contact::launch(TENANT, l.job_id)
        );
    }

    // Both processors go down; the calls end (voicemail) meanwhile.
    contact.stop()?;
    scheduler.stop()?;
    let ended = Utc::now();
    for (i, l) in first.iter().enumerate() {
        let event = call_event(
            &l.contact_id,
            &format!("CA{i}"),
            Some(l.launch_id),
            "completed",
            Some("machine_start"),
            ended,
        );
        send(
            &producer,
            &topics.name("call-events"),
            &l.contact_id,
            event.encode()?,
        )
        .await?;
    }
    let (contact, scheduler) = start_both(&topics, &contact_app, &scheduler_app);

    // The retries come due a minute later and launch once each.
    let all: Vec<LaunchCommand> =
        collect(&launches_topic, 2 * CONTACTS, Duration::from_secs(150)).await?;
    assert_eq!(all.len(), 2 * CONTACTS, "every job launched exactly once");
    let retries: Vec<_> = all
        .iter()
        .filter(|l| l.origin == JobOrigin::VoicemailRetry)
        .collect();
    assert_eq!(retries.len(), CONTACTS);
    for r in &retries {
        assert_eq!(r.attempt, 2);
        assert!(
            r.slot_at >= ended + chrono::TimeDelta::seconds(55),
            "after the retry delay"
        );
    }
    // Every launched job was allocated by the scheduler first.
    let events: Vec<ScheduleEvent> = collect(
        &topics.name("schedule-events"),
        4 * CONTACTS,
        Duration::from_secs(30),
    )
    .await?;
    let mut kinds: BTreeMap<uuid::Uuid, Vec<ScheduleEventKind>> = BTreeMap::new();
    for e in &events {
        kinds.entry(e.job_id).or_default().push(e.kind);
    }
    for l in &all {
        assert_eq!(
            kinds.get(&l.job_id).map(Vec::as_slice),
            Some(&[ScheduleEventKind::Allocated, ScheduleEventKind::LaunchDue][..]),
            "job {}",
            l.job_id
        );
    }
    contact.stop()?;
    scheduler.stop()?;
    Ok(())
}

/// Issue 19 on the broker: a Florida lead (area code 305) called three times within the
/// hour has its fourth call planned by the scheduler only once the first has aged out of
/// Florida's rolling 24 hours, with the cap as its reason, and no fourth launch is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_florida_leads_fourth_call_waits_for_the_cap_with_the_cap_as_reason() -> Result<()> {
    let (topics, producer) = chain("chain-fl", 10).await?;
    let (contact_app, scheduler_app) = (unique_name("contact"), unique_name("scheduler"));
    let (contact, scheduler) = start_both(&topics, &contact_app, &scheduler_app);

    let mut request = ContactCommand {
        event_id: fixtures::id("lr/fl/r1"),
        ..fixtures::launch_request(TENANT, "fl", CAMPAIGN, "r1", "+13055550100", t0())
    };
    request.occurred_at = Utc::now();
    // Noon where the lead is, so the campaign and Florida's hours are open now.
    request.contact.as_mut().unwrap().time_zone = Some(fixtures::noon_zone());
    let commands = topics.name("contact-commands");
    send(&producer, &commands, "fl", request.encode()?).await?;

    let launches_topic = topics.name("launch-commands");
    let mut first_placed = None;
    for n in 1..=3usize {
        let launches: Vec<LaunchCommand> =
            collect(&launches_topic, n, Duration::from_secs(150)).await?;
        assert_eq!(launches.len(), n, "call {n}");
        let launch = launches.last().unwrap();
        assert_eq!(launch.jurisdictions, ["FL"]);
        assert_eq!(launch.placed_calls.len(), n - 1, "call {n}");
        let placed = Utc::now();
        first_placed.get_or_insert(placed);
        let accepted = fixtures::call_launch(
            TENANT,
            "fl",
            CAMPAIGN,
            launch.launch_id,
            launch.job_id,
            LaunchStatus::Accepted,
            placed,
        );
        let topic = topics.name("call-launches");
        send(&producer, &topic, "fl", accepted.encode()?).await?;
        let result = call_event(
            "fl",
            &format!("CA{n}"),
            Some(launch.launch_id),
            "no-answer",
            None,
            placed,
        );
        send(
            &producer,
            &topics.name("call-events"),
            "fl",
            result.encode()?,
        )
        .await?;
    }

    // The fourth: the scheduler books it after the first call ages out, naming the cap.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let capped = loop {
        let events: Vec<ScheduleEvent> =
            collect(&topics.name("schedule-events"), 1, Duration::from_secs(30)).await?;
        if let Some(e) = events
            .into_iter()
            .find(|e| e.reason == "frequency_cap:FL:3_per_24h")
        {
            break e;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no schedule event names the cap"
        );
    };
    assert_eq!(capped.kind, ScheduleEventKind::Allocated);
    let first = first_placed.unwrap_or_default();
    assert!(
        capped.slot_at >= Some(first + chrono::TimeDelta::days(1)),
        "{:?} is within 24 hours of the first call at {first}",
        capped.slot_at
    );
    let launches: Vec<LaunchCommand> = collect(&launches_topic, 3, Duration::from_secs(10)).await?;
    assert_eq!(launches.len(), 3, "no fourth call");
    contact.stop()?;
    scheduler.stop()?;
    Ok(())
}

//! Recovery against the voice simulator (real HTTP) and the real broker:
//! lookups find what the platform did (dropped completions come back with
//! the id the live path would have given them, lost calls are not found),
//! the per-tenant rate limit delays and drops nothing, and recovery on the
//! runtime recovers dropped completions and advances lost calls.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed assertion

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use callstream_domain::ids::completion_case as case_ids;
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{fixtures, produce, producer, unique_name};
use callstream_platform::{topics, KafkaSettings, Topics};
use callstream_recovery::wire::{FetchRequest, FetchResult};
use callstream_recovery::{effect_runner, ids, processor, spec, TwilioFetcher, APP_ID};
use callstream_schemas::{
    AuditEvent, CallEvent, CallEventSource, CallOutcome, CompletionMissing, Event,
};
use rdkafka::consumer::StreamConsumer;
use rdkafka::message::Message;
use serde_json::Value;
use support::recovery_sim::{behaviour, Receiver, Sim, TENANT};
use uuid::Uuid;

/// A placed call: its contact and launch, and what the simulator did to it.
#[derive(Debug, Clone)]
struct Placed {
    sid: String,
    contact: String,
    launch: Uuid,
    dropped: bool,
    lost: bool,
}

async fn place_calls(sim: &Sim, rx: &Receiver, count: usize) -> Vec<Placed> {
    let mut placed = Vec::new();
    for i in 0..count {
        let contact = format!("contact-{i}");
        let launch = Uuid::new_v4();
        let sid = sim
            .place(
                &format!("+1555400{i:04}"),
                &rx.callback_url(&contact, &launch),
            )
            .await;
        placed.push((sid, contact, launch));
    }
    sim.settle().await;
    let facts: HashMap<String, Value> = sim
        .calls()
        .await
        .into_iter()
        .map(|c| (c["sid"].as_str().unwrap().to_string(), c))
        .collect();
    placed
        .into_iter()
        .map(|(sid, contact, launch)| {
            let f = &facts[&sid];
            Placed {
                dropped: f["completion_dropped"].as_bool().unwrap(),
                lost: f["lost"].as_bool().unwrap(),
                sid,
                contact,
                launch,
            }
        })
        .collect()
}

fn is_final(status: &str) -> bool {
    matches!(
        status,
        "completed" | "no-answer" | "busy" | "failed" | "canceled"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_find_what_the_platform_did_with_the_live_paths_event_ids() {
    let sim = Sim::start(behaviour(0.4, 0.3)).await;
    let rx = Receiver::start().await;
    let calls = place_calls(&sim, &rx, 40).await;
    let drafts = rx.drafts();
    let mut config = sim.recovery_config(Topics::default());
    config.requests_per_second = 1_000;
    let fetcher = TwilioFetcher::new(&config).unwrap();

    let (mut same_id, mut recovered, mut not_found) = (0, 0, 0);
    for call in &calls {
        let request = FetchRequest {
            tenant_id: TENANT.into(),
            provider: "twilio".into(),
            call_sid: call.sid.clone(),
        };
        let result = fetcher.fetch(&request).await;
        if call.lost {
            assert_eq!(result, FetchResult::NotFound, "{call:?}");
            not_found += 1;
            continue;
        }
        let FetchResult::Found { record } = result else {
            panic!("{call:?}: {result:?}");
        };
        let seq = record.sequence_number.clone().unwrap();
        let (id, provider_event_id) =
            ids::recovered_event(TENANT, "twilio", &call.sid, &record.status, &seq);
        let of_call: Vec<_> = drafts.iter().filter(|d| d.call_id == call.sid).collect();
        let live_final = of_call.iter().find(|d| is_final(&d.provider_status));
        if call.dropped {
            assert!(live_final.is_none(), "{call:?}: its completion was dropped");
            let last_sent = of_call.iter().filter_map(|d| d.sequence_number).max();
            assert_eq!(seq, last_sent.map_or(0, |s| s + 1).to_string(), "{call:?}");
            recovered += 1;
        } else {
            let live = live_final.unwrap();
            assert_eq!(
                (id, provider_event_id),
                (live.event_id, live.provider_event_id.clone()),
                "{call:?}"
            );
            same_id += 1;
        }
    }
    println!("{same_id} replays with the live id, {recovered} dropped completions found, {not_found} lost calls");
    assert!(same_id > 0 && recovered > 0 && not_found > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_delays_a_tenants_burst_and_drops_nothing() {
    let sim = Sim::start(behaviour(0.0, 0.0)).await;
    let mut config = sim.recovery_config(Topics::default());
    config.requests_per_second = 5;
    let fetcher = TwilioFetcher::new(&config).unwrap();
    let lookup = |tenant: &str, i: usize| {
        let fetcher = fetcher.clone();
        let request = FetchRequest {
            tenant_id: tenant.into(),
            provider: "twilio".into(),
            call_sid: format!("CA{i:032}"),
        };
        async move { fetcher.fetch(&request).await }
    };
    let started = Instant::now();
    let burst: Vec<_> = (0..15)
        .map(|i| tokio::spawn(lookup("busy-tenant", i)))
        .collect();
    let other = tokio::spawn(lookup("quiet-tenant", 99)).await.unwrap();
    let other_took = started.elapsed();
    let mut results = Vec::new();
    for handle in burst {
        results.push(handle.await.unwrap());
    }
    let burst_took = started.elapsed();
    println!(
        "15 lookups of one tenant at 5/s took {burst_took:?}; another tenant's took {other_took:?}"
    );
    assert!(
        results.iter().all(|r| *r == FetchResult::NotFound),
        "{results:?}"
    );
    assert_eq!(other, FetchResult::NotFound);
    assert!(burst_took >= Duration::from_millis(1_800), "{burst_took:?}");
    assert!(other_took < Duration::from_millis(1_000), "{other_took:?}");
}

fn missing_event(call: &Placed) -> CompletionMissing {
    let now = chrono::Utc::now();
    CompletionMissing {
        event_id: case_ids::missing_event(&call.launch),
        campaign_id: Some("campaign-1".into()),
        ..fixtures::completion_missing(TENANT, &call.contact, call.launch, &call.sid, now)
    }
}

async fn read_n<E: Event>(consumer: &StreamConsumer, n: usize, within: Duration) -> Result<Vec<E>> {
    let deadline = Instant::now() + within;
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < deadline {
        if let Ok(message) = tokio::time::timeout(Duration::from_secs(1), consumer.recv()).await {
            out.push(E::decode(message?.payload().unwrap_or_default())?);
        }
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_broker_dropped_completions_are_recovered_and_lost_calls_advanced() -> Result<()> {
    let sim = Sim::start(behaviour(0.5, 0.3)).await;
    let rx = Receiver::start().await;
    let calls = place_calls(&sim, &rx, 30).await;
    let live: HashMap<String, Uuid> = rx
        .drafts()
        .into_iter()
        .filter(|d| is_final(&d.provider_status))
        .map(|d| (d.call_id, d.event_id))
        .collect();

    let t = Topics {
        prefix: format!("{}-", unique_name("recovery")),
        partitions: 3,
        ..Topics::default()
    };
    callstream_platform::admin::ensure_topics(
        &KafkaSettings::from_env("recovery-test"),
        &t.specs(),
    )
    .await?;
    let config = sim.recovery_config(t.clone());
    let runner = effect_runner(&config)?;
    let app = format!("{}{APP_ID}", t.prefix);
    let running = Running::start(processor(config), spec(&t, &app), |c| {
        c.effects = Some(runner)
    });

    // Every dropped completion is reported missing, and two delivered ones
    // too (a detector that missed them): their replay must be a duplicate.
    let mut cases: Vec<&Placed> = calls.iter().filter(|c| c.dropped).collect();
    cases.extend(calls.iter().filter(|c| !c.dropped).take(2));
    let p = producer()?;
    for call in &cases {
        let value = missing_event(call).encode()?;
        produce(
            &p,
            &t.name(topics::COMPLETION_MISSING),
            &call.contact,
            &value,
        )
        .await?;
    }
    let events: Vec<CallEvent> = read_n(
        &reader(&t.name(topics::CALL_EVENTS), 3)?,
        cases.len(),
        Duration::from_secs(60),
    )
    .await?;
    let audits: Vec<AuditEvent> = read_n(
        &reader(&t.name(topics::AUDIT), 3)?,
        cases.len(),
        Duration::from_secs(30),
    )
    .await?;
    running.stop()?;

    assert_eq!(events.len(), cases.len(), "one call event per case");
    let by_launch: HashMap<Uuid, &CallEvent> =
        events.iter().map(|e| (e.launch_id.unwrap(), e)).collect();
    let (mut recovered, mut advanced, mut replayed) = (0, 0, 0);
    for call in &cases {
        let event = by_launch[&call.launch];
        assert_eq!(event.source, CallEventSource::Recovery);
        assert!(event.outcome.is_final(), "{event:?}");
        if call.lost {
            assert_eq!(event.outcome, CallOutcome::NoAnswer);
            advanced += 1;
        } else if call.dropped {
            recovered += 1;
        } else {
            assert_eq!(
                Some(&event.event_id),
                live.get(&call.sid),
                "the replay of a delivered completion"
            );
            replayed += 1;
        }
    }
    let actions: Vec<&str> = audits.iter().map(|a| a.action.as_str()).collect();
    println!("{recovered} recovered, {advanced} advanced as no-answer, {replayed} replays with the live id; audit {actions:?}");
    assert_eq!(audits.len(), cases.len());
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == "recovery.advanced_no_answer")
            .count(),
        advanced
    );
    assert!(recovered > 0 && advanced > 0 && replayed == 2);
    Ok(())
}

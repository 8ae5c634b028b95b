//! Faults happen at the configured rates for a fixed seed, the same seed
//! plays the same calls, and the burst drop share rises with the burst.
//! Measured rates are printed (`--nocapture`) so a run documents what it
//! saw.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use callstream_sim_voice::Behaviour;
use serde_json::{json, Value};
use support::*;
use tokio::task::JoinSet;

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn near(name: &str, got: f64, want: f64, tolerance: f64) {
    println!("{name}: measured {got:.3}, configured {want:.3}");
    assert!(
        (got - want).abs() <= tolerance,
        "{name}: {got} not within {tolerance} of {want}"
    );
}

/// Creates `count` calls, `parallel` at a time; returns the statuses.
async fn create_many(sim: &Sim, rx: &Receiver, count: usize, parallel: usize) -> Vec<u16> {
    let mut statuses = Vec::new();
    let mut set = JoinSet::new();
    for i in 0..count {
        let http = sim.http.clone();
        let url = sim.calls_url();
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("To", &format!("+1555300{i:04}"))
            .append_pair("From", FROM)
            .append_pair("Twiml", "<Response/>")
            .append_pair(
                "StatusCallback",
                &rx.callback_url(&format!("c-{i}"), &format!("L-{i}")),
            )
            .append_pair(
                "StatusCallbackEvent",
                "initiated ringing answered completed",
            )
            .append_pair("MachineDetection", "DetectMessageEnd")
            .finish();
        set.spawn(async move {
            let r = http
                .post(url)
                .basic_auth(ACCOUNT, Some(TOKEN))
                .body(form)
                .send()
                .await
                .unwrap();
            r.status().as_u16()
        });
        if set.len() >= parallel {
            statuses.push(set.join_next().await.unwrap().unwrap());
        }
    }
    while let Some(s) = set.join_next().await {
        statuses.push(s.unwrap());
    }
    statuses
}

#[tokio::test]
async fn faults_happen_at_the_configured_rates() {
    let rx = Receiver::start().await;
    let b = Behaviour {
        completion_drop_share: 0.1,
        duplicate_share: 0.1,
        delay_share: 0.1,
        reorder_share: 0.1,
        create_error_share: 0.05,
        ..fast()
    };
    let sim = Sim::start(config(b.clone(), Some(rx.analysis_url()))).await;
    let attempts = 1000;
    let statuses = create_many(&sim, &rx, attempts, 16).await;
    let stats = sim.settle().await;
    let created = n(&stats["calls_created"]);
    let failed = n(&stats["creates_failed"]);
    assert_eq!(created + failed, attempts as u64);
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count() as u64,
        created
    );
    assert!(statuses.iter().all(|s| [201, 500, 503].contains(s)));
    near(
        "create 5xx share",
        share(failed, attempts as u64),
        0.05,
        0.02,
    );

    let weights = b.outcome_weights();
    let total: f64 = weights.iter().sum();
    for (name, w) in ["human", "voicemail", "no_answer", "busy", "failed"]
        .iter()
        .zip(weights)
    {
        near(
            &format!("outcome {name}"),
            share(n(&stats["outcomes"][name]), created),
            w / total,
            0.04,
        );
    }
    near(
        "dropped completions",
        share(n(&stats["callbacks_dropped"]), created),
        0.1,
        0.03,
    );
    let sent = n(&stats["callbacks_sent"]);
    let dups = n(&stats["callbacks_duplicated"]);
    near("duplicated callbacks", share(dups, sent - dups), 0.1, 0.03);
    near(
        "delayed callbacks",
        share(n(&stats["callbacks_delayed"]), sent - dups),
        0.1,
        0.03,
    );
    let reordered = n(&stats["callbacks_reordered"]);
    println!("reordered callbacks: {reordered} of {}", sent - dups);
    assert!(reordered > 0 && share(reordered, sent - dups) < 0.1);

    // The receiver saw exactly what the counters say.
    let got = rx.twilio();
    assert_eq!(got.len() as u64, sent);
    assert_eq!(n(&stats["callbacks_delivered"]), sent);
    let mut per_call: HashMap<String, Vec<u32>> = HashMap::new();
    let mut deliveries: BTreeMap<(String, u32), u32> = BTreeMap::new();
    for r in &got {
        let sid = form_field(&r.body, "CallSid").unwrap();
        let seq: u32 = form_field(&r.body, "SequenceNumber")
            .unwrap()
            .parse()
            .unwrap();
        *deliveries.entry((sid.clone(), seq)).or_default() += 1;
        per_call.entry(sid).or_default().push(seq);
    }
    let seen_dups: u32 = deliveries.values().map(|c| c - 1).sum();
    assert_eq!(
        u64::from(seen_dups),
        dups,
        "a duplicate is the same callback again"
    );
    let out_of_order = per_call
        .values()
        .filter(|seqs| seqs.windows(2).any(|w| w[1] < w[0]))
        .count();
    println!("calls whose callbacks arrived out of order: {out_of_order} of {created}");
    assert!(out_of_order > 0);

    // A dropped completion: no final status reached the receiver.
    let calls: Value = sim.get("/_sim/calls").await.json().await.unwrap();
    for c in calls["calls"].as_array().unwrap() {
        let sid = c["sid"].as_str().unwrap();
        let finals = got
            .iter()
            .filter(|r| form_field(&r.body, "CallSid").as_deref() == Some(sid))
            .filter(|r| {
                let s = form_field(&r.body, "CallStatus").unwrap();
                ["completed", "busy", "no-answer", "failed"].contains(&s.as_str())
            })
            .count();
        if c["completion_dropped"] == true {
            assert_eq!(finals, 0, "{sid}");
        } else {
            assert!(finals >= 1, "{sid}");
        }
    }
    let humans = n(&stats["outcomes"]["human"]);
    let analyses = n(&stats["analysis_sent"]) - n(&stats["analysis_duplicated"]);
    assert_eq!(analyses + n(&stats["analysis_dropped"]), humans);
    assert_eq!(rx.json().len() as u64, n(&stats["analysis_sent"]));
}

async fn plans(seed: u64, calls: usize) -> Vec<Value> {
    let rx = Receiver::start().await;
    let mut c = config(fast(), None);
    c.seed = seed;
    c.behaviour.completion_drop_share = 0.2;
    let sim = Sim::start(c).await;
    for i in 0..calls {
        sim.place(&format!("+1555400{i:04}"), &rx.callback_url("c", "L"))
            .await;
    }
    sim.settle().await;
    let all: Value = sim.get("/_sim/calls").await.json().await.unwrap();
    all["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            json!([
                c["index"],
                c["outcome"],
                c["intent"],
                c["completion_dropped"]
            ])
        })
        .collect()
}

#[tokio::test]
async fn the_same_seed_plays_the_same_calls() {
    let a = plans(5, 100).await;
    let b = plans(5, 100).await;
    let other = plans(6, 100).await;
    assert_eq!(a, b);
    assert_ne!(a, other);
}

#[tokio::test]
async fn the_drop_share_rises_with_the_burst() {
    let rx = Receiver::start().await;
    let b = Behaviour {
        completion_drop_share: 0.02,
        burst_threshold: 10,
        burst_drop_per_call: 0.01,
        burst_window_ms: 1000,
        ..fast()
    };
    let sim = Sim::start(config(b.clone(), None)).await;
    let mut shares = Vec::new();
    for size in [10usize, 50, 100] {
        // Outside the last burst's window: this one starts from zero.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        for i in 0..size {
            let cb = rx.callback_url("c", &format!("burst{size}-{i}"));
            let r = sim
                .create(&[("To", "+15555550000"), ("StatusCallback", cb.as_str())])
                .await;
            assert_eq!(r.status(), 201);
        }
        sim.settle().await;
        let calls: Value = sim.get("/_sim/calls").await.json().await.unwrap();
        let prefix = format!("burst{size}-");
        let burst: Vec<&Value> = calls["calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["launch_id"].as_str().unwrap().starts_with(&prefix))
            .collect();
        assert_eq!(burst.len(), size);
        let dropped = burst
            .iter()
            .filter(|c| c["completion_dropped"] == true)
            .count();
        // What the formula gives on average over the burst.
        let expected: f64 = (1..=size as u32)
            .map(|k| callstream_sim_voice::plan::drop_probability(&b, k))
            .sum::<f64>()
            / size as f64;
        let measured = share(dropped as u64, size as u64);
        println!("burst of {size}: dropped {measured:.3} (formula {expected:.3})");
        shares.push((measured, expected));
    }
    assert!(shares[0].0 < 0.15, "below the threshold: the base share");
    assert!(
        shares[1].0 > shares[0].0 && shares[2].0 > shares[1].0,
        "{shares:?}"
    );
    assert!((shares[2].0 - shares[2].1).abs() < 0.15, "{shares:?}");
    let stats = sim.stats().await;
    assert!(n(&stats["max_creates_in_burst_window"]) >= 100);
}

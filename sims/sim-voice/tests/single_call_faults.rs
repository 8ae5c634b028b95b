//! The faults on single calls: a create accepted and answered too late
//! still plays out, injected create errors make no call, lost calls are
//! not found once they end, and the runtime config endpoint refuses bad
//! changes.

mod support;

use std::time::Duration;

use callstream_sim_voice::Behaviour;
use serde_json::{json, Value};
use support::*;

#[tokio::test]
async fn a_create_accepted_then_answered_late_still_plays_out() {
    let rx = Receiver::start().await;
    let b = Behaviour {
        create_slow_share: 1.0,
        create_slow_ms: 2_000,
        ..fast()
    };
    let sim = Sim::start(config(b, None)).await;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let cb = rx.callback_url("c-9", "L-late");
    let form = [("To", "+15556660001"), ("StatusCallback", cb.as_str())];
    let outcome = tokio::spawn({
        let url = sim.calls_url();
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("From", FROM)
            .append_pair("Twiml", "<Response/>")
            .extend_pairs(form)
            .finish();
        async move {
            impatient
                .post(url)
                .basic_auth(ACCOUNT, Some(TOKEN))
                .body(body)
                .send()
                .await
        }
    });
    let err = outcome.await.unwrap().unwrap_err();
    assert!(err.is_timeout(), "{err}");
    // The client gave up, yet the call exists and plays out.
    let listed: Value = sim
        .get(&format!(
            "/2010-04-01/Accounts/{ACCOUNT}/Calls.json?To=%2B15556660001"
        ))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["calls"].as_array().unwrap().len(), 1);
    let stats = sim.settle().await;
    assert_eq!(stats["calls_created"], 1);
    assert_eq!(stats["creates_delayed"], 1);
    assert_eq!(stats["calls_by_launch"]["L-late"], 1);
    assert_eq!(rx.twilio().len(), 1, "its completion was posted");

    // Switched off at runtime: the next create answers at once.
    let r = sim
        .http
        .post(format!("{}/_sim/config", sim.base))
        .json(&json!({ "create_slow_share": 0.0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let r = sim.create_with(&quick, &[("To", "+15556660002")]).await;
    assert_eq!(r.status(), 201);
}

#[tokio::test]
async fn injected_create_errors_make_no_call() {
    let b = Behaviour {
        create_error_share: 1.0,
        ..fast()
    };
    let sim = Sim::start(config(b, None)).await;
    for _ in 0..10 {
        let r = sim.create(&[("To", "+15557770001")]).await;
        let status = r.status().as_u16();
        assert!(status == 500 || status == 503);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["code"], 20000 + u64::from(status));
    }
    let stats = sim.stats().await;
    assert_eq!(stats["creates_failed"], 10);
    assert_eq!(stats["calls_created"], 0);
}

#[tokio::test]
async fn lost_calls_are_not_found_after_they_end() {
    let rx = Receiver::start().await;
    let b = Behaviour {
        completion_drop_share: 1.0,
        lost_call_share: 1.0,
        ..fast()
    };
    let sim = Sim::start(config(b, None)).await;
    let created = sim
        .place("+15558880001", &rx.callback_url("c", "L-lost"))
        .await;
    let stats = sim.settle().await;
    assert_eq!(stats["calls_lost"], 1);
    assert_eq!(stats["callbacks_dropped"], 1);
    let r = sim.get(created["uri"].as_str().unwrap()).await;
    assert_eq!(r.status(), 404);
    let listed: Value = sim
        .get(&format!(
            "/2010-04-01/Accounts/{ACCOUNT}/Calls.json?To=%2B15558880001"
        ))
        .await
        .json()
        .await
        .unwrap();
    assert!(listed["calls"].as_array().unwrap().is_empty());
    let calls: Value = sim.get("/_sim/calls").await.json().await.unwrap();
    assert_eq!(calls["calls"][0]["lost"], true);
    // Its progress callbacks did arrive; its end never did.
    let statuses: Vec<String> = rx
        .twilio()
        .iter()
        .map(|r| form_field(&r.body, "CallStatus").unwrap())
        .collect();
    assert!(!statuses.is_empty());
    assert!(statuses
        .iter()
        .all(|s| ["initiated", "ringing", "in-progress"].contains(&s.as_str())));
}

#[tokio::test]
async fn the_config_endpoint_refuses_bad_changes_and_reset_forgets() {
    let sim = Sim::start(config(fast(), None)).await;
    let post = |body: Value| {
        let sim = &sim;
        async move {
            sim.http
                .post(format!("{}/_sim/config", sim.base))
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(post(json!({ "duplicate_share": 2.0 })).await, 400);
    assert_eq!(post(json!({ "no_such_field": 1 })).await, 400);
    assert_eq!(post(json!([1, 2])).await, 400);
    assert_eq!(post(json!({ "duplicate_share": 0.25 })).await, 200);
    let now: Value = sim.get("/_sim/config").await.json().await.unwrap();
    assert_eq!(now["duplicate_share"], 0.25);
    assert_eq!(now["time_scale"], 1e-4, "other fields kept");

    sim.create(&[("To", "+15559990001")]).await;
    assert_eq!(sim.stats().await["calls_created"], 1);
    let r = sim
        .http
        .post(format!("{}/_sim/reset", sim.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let stats = sim.stats().await;
    assert_eq!(stats["calls_created"], 0);
    assert_eq!(stats["calls_active"], 0);
}

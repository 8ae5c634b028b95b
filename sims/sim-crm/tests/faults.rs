//! The CRM's seeded faults over real HTTP: an outage window, a write
//! applied and then answered past the client's timeout (visible to search;
//! a blind retry duplicates it, and the stats say so), 5xx and slow answers
//! at their configured rates, and a search index that lags behind writes.

mod support;

use std::time::{Duration, Instant};

use callstream_sim_crm::CrmBehaviour;
use serde_json::{json, Value};
use support::*;

#[tokio::test]
async fn an_outage_answers_503_until_it_ends() {
    let crm = Crm::start(config(unlimited())).await;
    let r = crm.admin("/_sim/outage", json!({"seconds": 0.5})).await;
    assert_eq!(r.status(), 200);
    let started = Instant::now();
    let during = crm.post("/crm/v3/objects/tasks", task("c-1", "op-1")).await;
    assert_eq!(during.status(), 503);
    let body: Value = during.json().await.unwrap();
    assert_eq!(body["status"], "error");
    // Nothing is served, not even with a bad token: the whole CRM is down.
    let unauth = crm
        .send(
            reqwest::Method::GET,
            "/crm/v3/objects/tasks/1",
            "nope",
            None,
        )
        .await;
    assert_eq!(unauth.status(), 503);
    tokio::time::sleep(Duration::from_millis(600).saturating_sub(started.elapsed())).await;
    let after = crm.post("/crm/v3/objects/tasks", task("c-1", "op-1")).await;
    assert_eq!(after.status(), 201);
    let stats = crm.stats().await;
    assert_eq!(stats["refused_outage"], 2);
    assert_eq!(stats["writes"]["tasks"]["created"], 1);

    // A scheduled one, then ended early with seconds 0.
    crm.admin("/_sim/outage", json!({"seconds": 60, "after_seconds": 0}))
        .await;
    assert_eq!(crm.get("/crm/v3/objects/tasks/1").await.status(), 503);
    crm.admin("/_sim/outage", json!({"seconds": 0})).await;
    assert_eq!(crm.get("/crm/v3/objects/tasks/1").await.status(), 404);
}

#[tokio::test]
async fn a_write_applied_then_timed_out_is_there_and_a_blind_retry_duplicates_it() {
    let late = CrmBehaviour {
        timeout_share: 1.0,
        timeout_ms: 2_000,
        ..unlimited()
    };
    let crm = Crm::start(config(late)).await;
    let impatient = client_with_timeout(300);
    let send = || {
        impatient
            .post(crm.url("/crm/v3/objects/tasks"))
            .bearer_auth(TOKEN)
            .json(&task("c-7", "op-late"))
            .send()
    };
    let err = send().await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    // The client does not know, but the task exists: search finds it
    // (reads are never held back).
    let found = crm.find_op("tasks", "op-late").await;
    assert_eq!(found["total"], 1);
    // A client that retries blindly makes a second task.
    assert!(send().await.unwrap_err().is_timeout());
    assert_eq!(crm.find_op("tasks", "op-late").await["total"], 2);
    let stats = crm.stats().await;
    assert_eq!(stats["late_answers"], 2);
    assert_eq!(stats["op_ids"]["op-late"], 2);
    assert_eq!(stats["duplicate_creates"]["tasks"], 1);
    assert_eq!(stats["duplicate_creates_total"], 1);
    assert_eq!(stats["duplicate_op_ids"], json!(["op-late"]));
}

async fn run_load(seed: u64, requests: usize) -> Value {
    let faulty = CrmBehaviour {
        error_share: 0.1,
        slow_share: 0.1,
        slow_ms: 5,
        ..unlimited()
    };
    let mut c = config(faulty);
    c.seed = seed;
    let crm = Crm::start(c).await;
    let mut errors = 0;
    for i in 0..requests {
        let r = crm
            .post("/crm/v3/objects/tasks", task("c-1", &format!("op-{i}")))
            .await;
        match r.status().as_u16() {
            201 => {}
            500 | 502 | 503 => errors += 1,
            other => panic!("unexpected {other}"),
        }
    }
    let stats = crm.stats().await;
    assert_eq!(n(&stats["injected_errors"]), errors);
    // A 5xx applied nothing.
    assert_eq!(
        n(&stats["writes"]["tasks"]["created"]),
        requests as u64 - errors
    );
    stats
}

#[tokio::test]
async fn errors_and_slow_answers_happen_at_their_rates_and_repeat_by_seed() {
    let requests = 1000;
    let a = run_load(3, requests).await;
    let error_share = n(&a["injected_errors"]) as f64 / requests as f64;
    // Slow draws are only made for requests that were not failed.
    let served = requests as u64 - n(&a["injected_errors"]);
    let slow_share = n(&a["slow_answers"]) as f64 / served as f64;
    println!("5xx share: measured {error_share:.3}, configured 0.100");
    println!("slow share: measured {slow_share:.3}, configured 0.100");
    assert!((error_share - 0.1).abs() < 0.03, "{error_share}");
    assert!((slow_share - 0.1).abs() < 0.03, "{slow_share}");
    let b = run_load(3, 200).await;
    let c = run_load(3, 200).await;
    assert_eq!(b["injected_errors"], c["injected_errors"]);
    assert_eq!(b["op_ids"], c["op_ids"], "the same requests failed");
}

#[tokio::test]
async fn search_lags_behind_writes_when_told_to() {
    let lagging = CrmBehaviour {
        search_lag_ms: 300,
        search_lag_sigma: 0.0,
        ..unlimited()
    };
    let crm = Crm::start(config(lagging)).await;
    let r = crm
        .post(
            "/crm/v3/objects/notes",
            json!({"properties": {
                "hs_timestamp": "2026-03-01T15:00:00Z", "callstream_op_id": "op-n"
            }}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        crm.find_op("notes", "op-n").await["total"],
        0,
        "not indexed yet"
    );
    assert_eq!(
        crm.get(&format!("/crm/v3/objects/notes/{id}"))
            .await
            .status(),
        200,
        "but readable by id"
    );
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(crm.find_op("notes", "op-n").await["total"], 1);
}

#[tokio::test]
async fn reset_forgets_everything() {
    let crm = Crm::start(config(unlimited())).await;
    crm.post("/crm/v3/objects/tasks", task("c-1", "op-1")).await;
    assert_eq!(
        crm.admin("/_sim/config", json!({"error_share": 3}))
            .await
            .status(),
        400
    );
    assert_eq!(
        crm.admin("/_sim/config", json!({"bogus": 1}))
            .await
            .status(),
        400
    );
    let r = crm.admin("/_sim/reset", json!({})).await;
    assert_eq!(r.status(), 204);
    let stats = crm.stats().await;
    assert_eq!(stats["requests_total"], 0);
    assert_eq!(stats["objects"], json!({}));
    assert_eq!(crm.find_op("tasks", "op-1").await["total"], 0);
}

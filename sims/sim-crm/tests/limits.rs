//! HubSpot's rolling limit: 100 requests per 10 s per token, the 101st
//! refused with 429, `Retry-After` and HubSpot's body; each token has its
//! own window; the stats show the most requests that ever arrived in one
//! window, which is what a client's compliance is checked against.

mod support;

use std::time::Duration;

use callstream_sim_crm::CrmBehaviour;
use serde_json::{json, Value};
use support::*;

#[tokio::test]
async fn the_101st_request_in_ten_seconds_is_refused() {
    let crm = Crm::start(config(CrmBehaviour::default())).await;
    for i in 0..100u32 {
        let r = crm.get("/crm/v3/objects/contacts/none").await;
        assert_eq!(
            r.status(),
            404,
            "request {i} is admitted (and finds nothing)"
        );
        let left = r.headers()["x-hubspot-ratelimit-remaining"]
            .to_str()
            .unwrap();
        assert_eq!(left, (99 - i).to_string());
        assert_eq!(r.headers()["x-hubspot-ratelimit-max"], "100");
        assert_eq!(
            r.headers()["x-hubspot-ratelimit-interval-milliseconds"],
            "10000"
        );
    }
    let r = crm.post("/crm/v3/objects/tasks", task("c-1", "op-1")).await;
    assert_eq!(r.status(), 429);
    let retry_after: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=10).contains(&retry_after), "{retry_after}");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["errorType"], "RATE_LIMIT");
    assert_eq!(body["policyName"], "TEN_SECONDLY_ROLLING");
    let search = crm
        .post("/crm/v3/objects/tasks/search", json!({"filterGroups": []}))
        .await;
    assert_eq!(
        search.status(),
        429,
        "searches count against the same window"
    );

    // Another token has a window of its own.
    let r = crm
        .send(
            reqwest::Method::GET,
            "/crm/v3/objects/contacts/none",
            OTHER_TOKEN,
            None,
        )
        .await;
    assert_eq!(r.status(), 404);

    let stats = crm.stats().await;
    assert_eq!(stats["throttled"], 2);
    assert_eq!(stats["max_admitted_in_window"], 100);
    assert_eq!(stats["max_requests_in_window"], 102);
    assert_eq!(
        stats["objects"],
        json!({}),
        "the refused create was not applied"
    );
    assert_eq!(stats["rate_limit"], json!({"max": 100, "window_ms": 10000}));
    assert_eq!(stats["tokens"].as_object().unwrap().len(), 2);
}

#[tokio::test]
async fn after_retry_after_the_window_has_room_again() {
    let small = CrmBehaviour {
        rate_limit_max: 5,
        rate_limit_window_ms: 1000,
        ..CrmBehaviour::default()
    };
    let crm = Crm::start(config(small)).await;
    for _ in 0..5 {
        assert_eq!(crm.get("/crm/v3/objects/tasks/1").await.status(), 404);
    }
    let refused = crm.get("/crm/v3/objects/tasks/1").await;
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(wait, 1);
    tokio::time::sleep(Duration::from_secs(wait)).await;
    assert_eq!(crm.get("/crm/v3/objects/tasks/1").await.status(), 404);

    // Lifted at runtime (benchmarks): nothing is refused.
    let r = crm
        .admin("/_sim/config", json!({"rate_limit_max": 0}))
        .await;
    assert_eq!(r.status(), 200);
    for _ in 0..50 {
        assert_eq!(crm.get("/crm/v3/objects/tasks/1").await.status(), 404);
    }
    assert_eq!(crm.stats().await["throttled"], 1);
}

#[tokio::test]
async fn a_client_pacing_itself_never_exceeds_the_window() {
    // 20 requests a second against 10 per 500 ms: always under.
    let paced = CrmBehaviour {
        rate_limit_max: 10,
        rate_limit_window_ms: 500,
        ..CrmBehaviour::default()
    };
    let crm = Crm::start(config(paced)).await;
    for _ in 0..30 {
        assert_eq!(crm.get("/crm/v3/objects/tasks/1").await.status(), 404);
        tokio::time::sleep(Duration::from_millis(55)).await;
    }
    let stats = crm.stats().await;
    assert_eq!(stats["throttled"], 0);
    assert!(n(&stats["max_requests_in_window"]) <= 10, "{stats}");
}

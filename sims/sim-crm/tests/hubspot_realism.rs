//! The CRM as HubSpot is, where a client that must never write twice meets
//! it: a search index whose lag is long-tailed, a search limit of five per
//! second with no rate-limit headers, and unique-value properties that make
//! the CRM itself refuse a second object, allowed only on the object types
//! HubSpot allows them on.

mod support;

use std::time::Duration;

use callstream_sim_crm::CrmBehaviour;
use serde_json::{json, Value};
use support::*;

fn property(name: &str, unique: bool) -> Value {
    json!({
        "name": name, "label": "callstream operation id", "type": "string",
        "fieldType": "text", "groupName": "callstream", "hasUniqueValue": unique
    })
}

#[tokio::test]
async fn search_lag_is_long_tailed() {
    // The default distribution: a median of 3 s, a tail past a minute, the
    // longest 2 minutes. The draws are seeded: the same for every run.
    let crm = Crm::start(config(CrmBehaviour {
        rate_limit_max: 0,
        search_rate_max: 0,
        ..CrmBehaviour::default()
    }))
    .await;
    for i in 0..1_000 {
        let r = crm
            .post(
                "/crm/v3/objects/notes",
                json!({"properties": {"hs_timestamp": "2026-03-01T15:00:00Z", "callstream_op_id": format!("op-{i}")}}),
            )
            .await;
        assert_eq!(r.status(), 201);
    }
    let stats = crm.stats().await;
    let (p50, p99, max) = (
        n(&stats["search_lag_p50_ms"]),
        n(&stats["search_lag_p99_ms"]),
        n(&stats["search_lag_max_ms"]),
    );
    assert!((2_500..=3_500).contains(&p50), "median {p50} ms");
    assert!(p99 >= 30_000, "p99 {p99} ms");
    assert!(max > 60_000 && max <= 120_000, "longest {max} ms");
    // Search sees few of them yet: most lags are longer than the creates took.
    let all = json!({"filterGroups": [], "limit": 1});
    let seen: Value = crm
        .post("/crm/v3/objects/notes/search", all)
        .await
        .json()
        .await
        .unwrap();
    assert!(n(&seen["total"]) < 1_000);
}

#[tokio::test]
async fn searches_have_their_own_limit_of_five_per_second_without_headers() {
    let crm = Crm::start(config(CrmBehaviour {
        search_lag_ms: 0,
        ..CrmBehaviour::default()
    }))
    .await;
    let body = json!({"filterGroups": []});
    let mut refused = 0;
    for i in 0..7 {
        let r = crm.post("/crm/v3/objects/tasks/search", body.clone()).await;
        assert!(
            r.headers()
                .keys()
                .all(|k| !k.as_str().starts_with("x-hubspot-ratelimit")),
            "search answers carry no rate-limit headers"
        );
        if i < 5 {
            assert_eq!(r.status(), 200, "search {i}");
        } else {
            assert_eq!(r.status(), 429, "search {i}");
            let body: Value = r.json().await.unwrap();
            assert_eq!(body["policyName"], "SECONDLY");
            assert_eq!(body["errorType"], "RATE_LIMIT");
            refused += 1;
        }
    }
    assert_eq!(refused, 2);
    // Other requests are not held by the search limit, and do carry headers.
    let r = crm.get("/crm/v3/objects/contacts/none").await;
    assert_eq!(r.status(), 404);
    assert!(r.headers().contains_key("x-hubspot-ratelimit-remaining"));
    tokio::time::sleep(Duration::from_millis(1_050)).await;
    assert_eq!(
        crm.post("/crm/v3/objects/tasks/search", body)
            .await
            .status(),
        200
    );
    let stats = crm.stats().await;
    assert_eq!(stats["search_throttled"], 2);
    assert_eq!(
        stats["max_searches_in_second"], 7,
        "arrivals, refused ones included"
    );
}

#[tokio::test]
async fn unique_values_are_refused_on_engagements_as_hubspot_refuses_them() {
    let crm = Crm::start(config(unlimited())).await;
    for kind in ["notes", "tasks", "calls", "meetings", "emails"] {
        let r = crm
            .post(
                &format!("/crm/v3/properties/{kind}"),
                property("callstream_op_id", true),
            )
            .await;
        assert_eq!(r.status(), 400, "{kind}");
        // A plain property is fine.
        let r = crm
            .post(
                &format!("/crm/v3/properties/{kind}"),
                property("callstream_op_id", false),
            )
            .await;
        assert_eq!(r.status(), 201, "{kind}");
    }
    for kind in ["contacts", "companies", "deals", "tickets"] {
        let r = crm
            .post(
                &format!("/crm/v3/properties/{kind}"),
                property("callstream_op_id", true),
            )
            .await;
        assert_eq!(r.status(), 201, "{kind}");
        let def: Value = r.json().await.unwrap();
        assert_eq!(def["hasUniqueValue"], true);
        let again = crm
            .post(
                &format!("/crm/v3/properties/{kind}"),
                property("callstream_op_id", true),
            )
            .await;
        assert_eq!(again.status(), 409, "{kind}: the name is taken");
        let read = crm
            .get(&format!("/crm/v3/properties/{kind}/callstream_op_id"))
            .await;
        assert_eq!(read.status(), 200);
    }
    assert_eq!(crm.get("/crm/v3/properties/deals/nope").await.status(), 404);
}

#[tokio::test]
async fn a_second_create_with_a_unique_value_is_refused_with_the_existing_id() {
    let crm = Crm::start(config(CrmBehaviour {
        search_lag_ms: 60_000,
        search_lag_sigma: 0.0,
        ..unlimited()
    }))
    .await;
    let r = crm
        .post(
            "/crm/v3/properties/tickets",
            property("callstream_op_id", true),
        )
        .await;
    assert_eq!(r.status(), 201);
    let ticket = json!({"properties": {"subject": "Call back", "callstream_op_id": "op-1"}});
    let first = crm.post("/crm/v3/objects/tickets", ticket.clone()).await;
    assert_eq!(first.status(), 201);
    let id = first.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let second = crm.post("/crm/v3/objects/tickets", ticket).await;
    assert_eq!(second.status(), 409);
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["category"], "CONFLICT");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with(&format!("Existing ID: {id}")),
        "{body}"
    );
    assert_eq!(crm.stats().await["objects"]["tickets"], 1);
    // Search has not seen it yet (a minute's lag); the read by the unique value has.
    assert_eq!(crm.find_op("tickets", "op-1").await["total"], 0);
    let read = crm
        .get("/crm/v3/objects/tickets/op-1?idProperty=callstream_op_id")
        .await;
    assert_eq!(read.status(), 200);
    assert_eq!(read.json::<Value>().await.unwrap()["id"], id.as_str());
    // By a property that is not unique: refused, as HubSpot does.
    assert_eq!(
        crm.get("/crm/v3/objects/tickets/x?idProperty=subject")
            .await
            .status(),
        400
    );
    assert_eq!(
        crm.get("/crm/v3/objects/tickets/op-2?idProperty=callstream_op_id")
            .await
            .status(),
        404
    );
}

#[tokio::test]
async fn batch_upsert_creates_once_then_updates() {
    let crm = Crm::start(config(unlimited())).await;
    crm.post(
        "/crm/v3/properties/deals",
        property("callstream_op_id", true),
    )
    .await;
    let upsert = |stage: &str| json!({"inputs": [{"idProperty": "callstream_op_id", "id": "op-9", "properties": {"dealstage": stage}}]});
    let first: Value = crm
        .post(
            "/crm/v3/objects/deals/batch/upsert",
            upsert("appointmentscheduled"),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(first["status"], "COMPLETE");
    assert_eq!(first["results"][0]["new"], true);
    let again: Value = crm
        .post("/crm/v3/objects/deals/batch/upsert", upsert("closedwon"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again["results"][0]["new"], false);
    assert_eq!(again["results"][0]["id"], first["results"][0]["id"]);
    assert_eq!(again["results"][0]["properties"]["dealstage"], "closedwon");
    let stats = crm.stats().await;
    assert_eq!(stats["objects"]["deals"], 1);
    assert_eq!(stats["duplicate_creates_total"], 0);
    // Engagements cannot be upserted by a unique value: they cannot have one.
    let r = crm
        .post(
            "/crm/v3/objects/notes/batch/upsert",
            json!({"inputs": [{"idProperty": "callstream_op_id", "id": "op-1", "properties": {}}]}),
        )
        .await;
    assert_eq!(r.status(), 400);
}

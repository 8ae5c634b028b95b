//! HubSpot's object endpoints over real HTTP: create with associations,
//! read, update, search, and HubSpot-shaped refusals.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chrono::DateTime;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use support::*;
use tower::ServiceExt;

#[tokio::test]
async fn create_read_search_and_update() {
    let crm = Crm::start(config(unlimited())).await;
    let r = crm.post("/crm/v3/objects/tasks", task("c-1", "op-1")).await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    let id = created["id"].as_str().unwrap().to_string();
    assert!(id.chars().all(|c| c.is_ascii_digit()), "{id}");
    assert_eq!(created["properties"]["callstream_op_id"], "op-1");
    assert_eq!(created["properties"]["hs_object_id"], id);
    assert_eq!(created["archived"], false);
    assert!(DateTime::parse_from_rfc3339(created["createdAt"].as_str().unwrap()).is_ok());

    // Read: defaults and what was asked for, associations on request.
    let got: Value = crm
        .get(&format!(
            "/crm/v3/objects/tasks/{id}?properties=hs_task_subject&associations=contacts"
        ))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(got["properties"]["hs_task_subject"], "Call back the lead");
    assert!(got["properties"].get("hs_task_status").is_none());
    assert_eq!(got["associations"]["contacts"]["results"][0]["id"], "c-1");

    // Search by the op id, and by the associated contact.
    let found = crm.find_op("tasks", "op-1").await;
    assert_eq!(found["total"], 1);
    assert_eq!(found["results"][0]["id"], id);
    assert_eq!(crm.find_op("tasks", "op-2").await["total"], 0);
    assert_eq!(crm.find_op("notes", "op-1").await["total"], 0);
    let by_contact: Value = crm
        .post(
            "/crm/v3/objects/tasks/search",
            json!({"filterGroups": [{"filters": [{"propertyName": "associations.contact", "operator": "EQ", "value": "c-1"}]}]}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(by_contact["total"], 1);

    // Update a contact (created on first PATCH by default), read it back.
    let r = crm
        .patch(
            "/crm/v3/objects/contacts/c-1",
            json!({"properties": {"hs_lead_status": "ATTEMPTED_TO_CONTACT", "callstream_op_id": "op-u1"}}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let contact: Value = crm
        .get("/crm/v3/objects/contacts/c-1?properties=hs_lead_status")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        contact["properties"]["hs_lead_status"],
        "ATTEMPTED_TO_CONTACT"
    );

    let stats = crm.stats().await;
    assert_eq!(stats["writes"]["tasks"]["created"], 1);
    assert_eq!(stats["writes"]["contacts"]["updated"], 1);
    assert_eq!(stats["op_ids"]["op-1"], 1);
    assert_eq!(stats["duplicate_creates_total"], 0);
}

#[tokio::test]
async fn search_pages_with_after() {
    let crm = Crm::start(config(unlimited())).await;
    for i in 0..25 {
        let r = crm.post("/crm/v3/objects/notes", json!({"properties": {
            "hs_timestamp": "1767225600000", "hs_note_body": format!("note {i}"), "batch": "b1"
        }})).await;
        assert_eq!(r.status(), 201);
    }
    let mut after: Option<String> = None;
    let mut ids = Vec::new();
    loop {
        let mut body = json!({"filterGroups": [{"filters": [{"propertyName": "batch", "operator": "EQ", "value": "b1"}]}], "limit": 10});
        if let Some(a) = &after {
            body["after"] = json!(a);
        }
        let page: Value = crm
            .post("/crm/v3/objects/notes/search", body)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(page["total"], 25);
        ids.extend(
            page["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["id"].clone()),
        );
        match page["paging"]["next"]["after"].as_str() {
            Some(next) => after = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(ids.len(), 25);
    ids.dedup();
    assert_eq!(ids.len(), 25, "no object on two pages");
}

#[tokio::test]
async fn refusals_are_hubspot_errors() {
    let mut c = config(unlimited());
    c.auto_create_contacts = false;
    let crm = Crm::start(c).await;
    let note_without_timestamp = crm
        .post(
            "/crm/v3/objects/notes",
            json!({"properties": {"hs_note_body": "x"}}),
        )
        .await;
    let malformed = crm
        .http
        .post(crm.url("/crm/v3/objects/tasks"))
        .bearer_auth(TOKEN)
        .body("{not json")
        .send()
        .await
        .unwrap();
    let unknown_type = crm
        .post("/crm/v3/objects/widgets", json!({"properties": {}}))
        .await;
    let missing_contact = crm
        .patch(
            "/crm/v3/objects/contacts/404",
            json!({"properties": {"a": "b"}}),
        )
        .await;
    let missing_task = crm.get("/crm/v3/objects/tasks/1").await;
    let wrong_token = crm
        .send(
            reqwest::Method::GET,
            "/crm/v3/objects/tasks/1",
            "nope",
            None,
        )
        .await;
    let no_token = crm
        .http
        .get(crm.url("/crm/v3/objects/tasks/1"))
        .send()
        .await
        .unwrap();
    let bad_operator = crm
        .post(
            "/crm/v3/objects/tasks/search",
            json!({"filterGroups": [{"filters": [{"propertyName": "a", "operator": "LIKE", "value": "1"}]}]}),
        )
        .await;
    let cases = [
        (
            "note without hs_timestamp",
            note_without_timestamp,
            400,
            "VALIDATION_ERROR",
        ),
        ("malformed JSON", malformed, 400, "VALIDATION_ERROR"),
        ("unknown type", unknown_type, 400, "VALIDATION_ERROR"),
        ("missing contact", missing_contact, 404, "OBJECT_NOT_FOUND"),
        ("missing task", missing_task, 404, "OBJECT_NOT_FOUND"),
        ("wrong token", wrong_token, 401, "INVALID_AUTHENTICATION"),
        ("no token", no_token, 401, "INVALID_AUTHENTICATION"),
        ("bad operator", bad_operator, 400, "VALIDATION_ERROR"),
    ];
    for (name, r, status, category) in cases {
        assert_eq!(r.status(), status, "{name}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["status"], "error", "{name}");
        assert_eq!(body["category"], category, "{name}");
        assert!(body["correlationId"].is_string(), "{name}");
    }
    let stats = crm.stats().await;
    assert_eq!(stats["refused_unauthorized"], 2);
    assert_eq!(stats["objects"], json!({}), "nothing was written");
}

#[tokio::test]
async fn the_router_works_without_a_socket() {
    let state = callstream_sim_crm::CrmState::new(&config(unlimited())).unwrap();
    let app = callstream_sim_crm::app(state.clone());
    let request = |token: &str| {
        Request::post("/crm/v3/objects/tasks")
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(Body::from(task("c-9", "op-9").to_string()))
            .unwrap()
    };
    let r = app.clone().oneshot(request(TOKEN)).await.unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let body: Value =
        serde_json::from_slice(&r.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["properties"]["callstream_op_id"], "op-9");
    assert_eq!(
        r_status(app.oneshot(request("wrong")).await.unwrap()),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(state.db().stats().writes["tasks"].created, 1);
}

fn r_status(r: axum::response::Response) -> StatusCode {
    r.status()
}

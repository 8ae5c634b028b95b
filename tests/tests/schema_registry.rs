//! The stack's schema registry (Apicurio, started by `cargo xtask up`) as writers and readers
//! of the topics will use it: its Confluent-compatible API at `CALLSTREAM_STACK_REGISTRY_URL`,
//! global compatibility BACKWARD, a compatible evolution taken under a new id, an
//! incompatible one refused with 409, and every id readable back.
#![allow(clippy::unwrap_used)]

use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

fn url() -> String {
    callstream_e2e::stack_registry_url()
}

fn record(fields: Value) -> String {
    json!({"type": "record", "name": "Probe", "namespace": "io.callstream.test", "fields": fields})
        .to_string()
}

async fn register(client: &reqwest::Client, subject: &str, schema: &str) -> (StatusCode, Value) {
    let answer = client
        .post(format!("{}/subjects/{subject}/versions", url()))
        .header("Content-Type", CONTENT_TYPE)
        .body(json!({"schemaType": "AVRO", "schema": schema}).to_string())
        .send()
        .await
        .unwrap();
    (answer.status(), answer.json().await.unwrap())
}

#[tokio::test]
async fn the_registry_keeps_subjects_backward_compatible() {
    let client = reqwest::Client::new();
    let config: Value = client
        .get(format!("{}/config", url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(config["compatibilityLevel"], "BACKWARD", "{config}");

    let subject = format!("test-{}-value", Uuid::new_v4().simple());
    let v1 = record(json!([{"name": "a", "type": "string"}]));
    let (status, first) = register(&client, &subject, &v1).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    // The same schema again: the same id, no new version.
    assert_eq!(register(&client, &subject, &v1).await.1["id"], first["id"]);

    // A field added with a default: new readers read old records.
    let v2 = record(json!([
        {"name": "a", "type": "string"},
        {"name": "b", "type": ["null", "string"], "default": null}
    ]));
    let (status, second) = register(&client, &subject, &v2).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_ne!(second["id"], first["id"]);

    // A field added without one: refused, with the registry's reason.
    let v3 = record(json!([
        {"name": "a", "type": "string"},
        {"name": "b", "type": ["null", "string"], "default": null},
        {"name": "c", "type": "long"}
    ]));
    let (status, refusal) = register(&client, &subject, &v3).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refusal}");
    assert_eq!(refusal["error_code"], 409, "{refusal}");

    // Ids are global: a reader resolves the writer's schema by id alone.
    let found: Value = client
        .get(format!("{}/schemas/ids/{}", url(), second["id"]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let schema: Value = serde_json::from_str(found["schema"].as_str().unwrap()).unwrap();
    assert_eq!(schema, serde_json::from_str::<Value>(&v2).unwrap());
}

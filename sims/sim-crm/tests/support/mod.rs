//! Shared test kit: a CRM simulator on 127.0.0.1 (port 0) and a HubSpot
//! style client with a bearer token.
#![allow(dead_code, clippy::unwrap_used)]

use std::time::Duration;

use callstream_sim_crm::{serve_state, CrmBehaviour, CrmState, SimCrmConfig};
use serde_json::{json, Value};
use tokio::net::TcpListener;

pub const TOKEN: &str = "pat-na1-test";
pub const OTHER_TOKEN: &str = "pat-na1-other";

pub struct Crm {
    pub state: CrmState,
    pub base: String,
    pub http: reqwest::Client,
}

pub fn config(behaviour: CrmBehaviour) -> SimCrmConfig {
    SimCrmConfig {
        tokens: vec![TOKEN.into(), OTHER_TOKEN.into()],
        seed: 11,
        behaviour,
        ..SimCrmConfig::default()
    }
}

/// No rate limits, no faults, search at once.
pub fn unlimited() -> CrmBehaviour {
    CrmBehaviour {
        rate_limit_max: 0,
        search_rate_max: 0,
        ..CrmBehaviour::default().with_instant_search()
    }
}

impl Crm {
    pub async fn start(config: SimCrmConfig) -> Crm {
        let state = CrmState::new(&config).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let served = state.clone();
        tokio::spawn(async move { serve_state(served, listener, std::future::pending()).await });
        Crm {
            state,
            base,
            http: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> reqwest::Response {
        let mut r = self.http.request(method, self.url(path)).bearer_auth(token);
        if let Some(b) = body {
            r = r.json(&b);
        }
        r.send().await.unwrap()
    }

    pub async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        self.send(reqwest::Method::POST, path, TOKEN, Some(body))
            .await
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.send(reqwest::Method::GET, path, TOKEN, None).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> reqwest::Response {
        self.send(reqwest::Method::PATCH, path, TOKEN, Some(body))
            .await
    }

    pub async fn stats(&self) -> Value {
        self.http
            .get(self.url("/_sim/stats"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn admin(&self, path: &str, body: Value) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// Searches `kind` for objects whose `callstream_op_id` is `op`.
    pub async fn find_op(&self, kind: &str, op: &str) -> Value {
        let r = self
            .post(
                &format!("/crm/v3/objects/{kind}/search"),
                json!({"filterGroups": [{"filters": [
                    {"propertyName": "callstream_op_id", "operator": "EQ", "value": op}
                ]}]}),
            )
            .await;
        assert_eq!(r.status(), 200);
        r.json().await.unwrap()
    }
}

/// A task body for contact `contact` with operation id `op`.
pub fn task(contact: &str, op: &str) -> Value {
    json!({
        "properties": {
            "hs_timestamp": "2026-03-01T15:00:00.000Z",
            "hs_task_subject": "Call back the lead",
            "hs_task_status": "NOT_STARTED",
            "callstream_op_id": op,
        },
        "associations": [{
            "to": {"id": contact},
            "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 204}]
        }]
    })
}

/// An impatient client: gives up after `ms`.
pub fn client_with_timeout(ms: u64) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_millis(ms))
        .build()
        .unwrap()
}

pub fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

//! The simulator's own endpoints, for tests and the demo (no auth: the
//! simulator only ever listens on loopback):
//! - `GET /_sim/stats`: the counters ([`crate::store::Stats`]).
//! - `GET /_sim/calls`: every call with its planned outcome and faults,
//!   lost calls included, so a test knows which completions were dropped;
//!   with when it was created and ended, and the tenant, contact and
//!   campaign its callback URL names (what the platform saw, for the
//!   demo's promises).
//! - `GET /_sim/config`, `POST /_sim/config`: the behaviour new calls get;
//!   the POST body is a JSON object of the fields to change (unknown
//!   fields and invalid values are refused, 400, and change nothing).
//! - `POST /_sim/reset`: forget every call and counter.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::config::Behaviour;
use crate::state::SimState;

pub fn routes() -> Router<SimState> {
    Router::new()
        .route("/_sim/stats", get(stats))
        .route("/_sim/calls", get(calls))
        .route("/_sim/config", get(config).post(set_config))
        .route("/_sim/reset", post(reset))
}

async fn stats(State(state): State<SimState>) -> Response {
    Json(state.store().stats()).into_response()
}

async fn calls(State(state): State<SimState>) -> Response {
    let calls: Vec<Value> = state
        .store()
        .all()
        .iter()
        .map(|c| {
            let target = c.target.as_ref();
            json!({
                "sid": c.sid,
                "index": c.index,
                "to": c.to,
                "status": c.status.as_str(),
                "outcome": c.outcome,
                "intent": c.intent,
                "launch_id": target.and_then(|t| t.launch_id.as_deref()),
                "contact_id": target.and_then(|t| t.contact_id.as_deref()),
                "tenant": target.and_then(|t| t.tenant.as_deref()),
                "campaign_id": target.and_then(|t| t.campaign_id.as_deref()),
                "created_at_ms": c.created_at.timestamp_millis(),
                "ended_at_ms": c.end_time.map(|t| t.timestamp_millis()),
                "completion_dropped": c.completion_dropped,
                "lost": c.vanished,
                "callbacks_made": c.requests.len(),
                "accepted_event_ids": c.accepted_event_ids,
            })
        })
        .collect();
    Json(json!({ "calls": calls })).into_response()
}

async fn config(State(state): State<SimState>) -> Response {
    Json(state.behaviour().as_ref().clone()).into_response()
}

fn refuse(message: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": message }))).into_response()
}

async fn set_config(State(state): State<SimState>, Json(change): Json<Value>) -> Response {
    let Value::Object(change) = change else {
        return refuse("the body must be a JSON object of behaviour fields".into());
    };
    let mut merged = match serde_json::to_value(state.behaviour().as_ref()) {
        Ok(Value::Object(current)) => current,
        _ => return refuse("the current behaviour cannot be read".into()),
    };
    merged.extend(change);
    let behaviour: Behaviour = match serde_json::from_value(Value::Object(merged)) {
        Ok(b) => b,
        Err(e) => return refuse(e.to_string()),
    };
    match state.set_behaviour(behaviour.clone()) {
        Ok(()) => Json(behaviour).into_response(),
        Err(e) => refuse(e.to_string()),
    }
}

async fn reset(State(state): State<SimState>) -> StatusCode {
    state.store().reset();
    StatusCode::NO_CONTENT
}

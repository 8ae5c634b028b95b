//! The simulator's own endpoints (no auth, no rate limit: the simulator
//! only listens on loopback):
//! - `GET /_sim/stats`: request counters, the rate limit and the most
//!   requests that arrived in any window (per token and overall), and the
//!   write counters: per type, per `callstream_op_id`, duplicates.
//! - `POST /_sim/outage {"seconds": s, "after_seconds": a}`: every CRM
//!   request answers 503 from `a` seconds from now (default 0) for `s`
//!   seconds; `seconds: 0` ends an outage.
//! - `GET /_sim/config`, `POST /_sim/config`: the behaviour; the POST body
//!   holds the fields to change (unknown or invalid ones: 400, nothing
//!   changed).
//! - `POST /_sim/reset`: forget objects, counters, windows and outage.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::config::CrmBehaviour;
use crate::state::CrmState;

pub fn routes() -> Router<CrmState> {
    Router::new()
        .route("/_sim/stats", get(stats))
        .route("/_sim/outage", post(outage))
        .route("/_sim/config", get(config).post(set_config))
        .route("/_sim/reset", post(reset))
}

async fn stats(State(state): State<CrmState>) -> Response {
    let b = state.behaviour();
    let limits = state.limits();
    let tokens: serde_json::Map<String, Value> = limits
        .iter()
        .map(|(label, arrived, refused, max_arrived, max_admitted)| {
            (
                label.clone(),
                json!({
                    "requests": arrived,
                    "throttled": refused,
                    "max_requests_in_window": max_arrived,
                    "max_admitted_in_window": max_admitted,
                }),
            )
        })
        .collect();
    let mut body = match serde_json::to_value(state.request_stats()) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    if let Ok(Value::Object(writes)) = serde_json::to_value(state.db().stats()) {
        body.extend(writes);
    }
    body.insert(
        "rate_limit".into(),
        json!({ "max": b.rate_limit_max, "window_ms": b.rate_limit_window_ms }),
    );
    let max_arrived = limits.iter().map(|l| l.3).max().unwrap_or(0);
    let max_admitted = limits.iter().map(|l| l.4).max().unwrap_or(0);
    body.insert("max_requests_in_window".into(), json!(max_arrived));
    body.insert("max_admitted_in_window".into(), json!(max_admitted));
    body.insert("tokens".into(), Value::Object(tokens));
    let searches = state.search_limits();
    body.insert(
        "search_limit".into(),
        json!({ "max": b.search_rate_max, "window_ms": crate::state::SEARCH_WINDOW.as_millis() }),
    );
    body.insert(
        "max_searches_in_second".into(),
        json!(searches.iter().map(|s| s.1).max().unwrap_or(0)),
    );
    body.insert(
        "search_tokens".into(),
        searches
            .iter()
            .map(|(label, max, refused)| {
                (
                    label.clone(),
                    json!({ "max_searches_in_second": max, "throttled": refused }),
                )
            })
            .collect::<serde_json::Map<String, Value>>()
            .into(),
    );
    Json(Value::Object(body)).into_response()
}

#[derive(Deserialize)]
struct OutageBody {
    seconds: f64,
    #[serde(default)]
    after_seconds: f64,
}

fn refuse(message: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": message }))).into_response()
}

fn secs(v: f64) -> Option<Duration> {
    (v.is_finite() && v >= 0.0).then(|| Duration::try_from_secs_f64(v).ok())?
}

async fn outage(State(state): State<CrmState>, Json(body): Json<OutageBody>) -> Response {
    let (Some(length), Some(after)) = (secs(body.seconds), secs(body.after_seconds)) else {
        return refuse("seconds and after_seconds must be >= 0".into());
    };
    state.set_outage(Instant::now() + after, length);
    Json(json!({ "seconds": body.seconds, "after_seconds": body.after_seconds })).into_response()
}

async fn config(State(state): State<CrmState>) -> Response {
    Json(state.behaviour().as_ref().clone()).into_response()
}

async fn set_config(State(state): State<CrmState>, Json(change): Json<Value>) -> Response {
    let Value::Object(change) = change else {
        return refuse("the body must be a JSON object of behaviour fields".into());
    };
    let mut merged = match serde_json::to_value(state.behaviour().as_ref()) {
        Ok(Value::Object(current)) => current,
        _ => return refuse("the current behaviour cannot be read".into()),
    };
    merged.extend(change);
    let behaviour: CrmBehaviour = match serde_json::from_value(Value::Object(merged)) {
        Ok(b) => b,
        Err(e) => return refuse(e.to_string()),
    };
    match state.set_behaviour(behaviour.clone()) {
        Ok(()) => Json(behaviour).into_response(),
        Err(e) => refuse(e.to_string()),
    }
}

async fn reset(State(state): State<CrmState>) -> StatusCode {
    state.reset();
    StatusCode::NO_CONTENT
}

//! The router: HubSpot's CRM v3 object endpoints behind the [`gate`]
//! middleware, the simulator's `/_sim/*` endpoints, and `/healthz`.
//! `app(state)` is all a test needs to drive it without a socket.
//!
//! - `POST /crm/v3/objects/{type}`: create (201), with associations.
//! - `GET /crm/v3/objects/{type}/{id}?properties=a,b&associations=contacts`
//! - `PATCH /crm/v3/objects/{type}/{id}`: update properties (200).
//! - `POST /crm/v3/objects/{type}/search`: filter, sort, page.
//!
//! Bodies are read by hand, so a malformed one gets HubSpot's
//! `VALIDATION_ERROR` body rather than the framework's.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::error::CrmError;
use crate::gate::gate;
use crate::objects::{read_create, read_properties, ObjectType, Shown, WriteBody};
use crate::search::SearchBody;
use crate::state::CrmState;

/// The whole HTTP surface.
pub fn app(state: CrmState) -> Router {
    let crm = Router::new()
        .route("/crm/v3/objects/{kind}", post(create))
        .route("/crm/v3/objects/{kind}/search", post(search))
        .route("/crm/v3/objects/{kind}/{id}", get(read).patch(update))
        .route_layer(middleware::from_fn_with_state(state.clone(), gate));
    Router::new()
        .merge(crm)
        .merge(crate::admin::routes())
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, CrmError> {
    serde_json::from_slice(body).map_err(|e| {
        CrmError::Validation(format!(
            "Invalid input JSON on line {}, column {}",
            e.line(),
            e.column()
        ))
    })
}

async fn create(
    State(state): State<CrmState>,
    Path(kind): Path<String>,
    body: Bytes,
) -> Result<Response, CrmError> {
    let kind = ObjectType::parse(&kind)?;
    let (properties, associations) = read_create(kind, parse::<WriteBody>(&body)?)?;
    let lag = Duration::from_millis(state.behaviour().search_lag_ms);
    let object = state.db().create(
        kind,
        properties,
        associations,
        callstream_platform::clock::now_utc(),
        Instant::now() + lag,
    );
    Ok((StatusCode::CREATED, Json(object.to_json(Shown::All, false))).into_response())
}

async fn update(
    State(state): State<CrmState>,
    Path((kind, id)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, CrmError> {
    let kind = ObjectType::parse(&kind)?;
    let body: WriteBody = parse(&body)?;
    let properties = read_properties(body.properties)?;
    let object = state.db().update(
        kind,
        &id,
        properties,
        callstream_platform::clock::now_utc(),
        state.0.auto_create_contacts,
    )?;
    Ok(Json(object.to_json(Shown::All, false)).into_response())
}

fn list_param(q: &HashMap<String, String>, name: &str) -> Vec<String> {
    q.get(name)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

async fn read(
    State(state): State<CrmState>,
    Path((kind, id)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, CrmError> {
    let kind = ObjectType::parse(&kind)?;
    let object = state.db().get(kind, &id).ok_or(CrmError::NotFound { id })?;
    let properties = list_param(&q, "properties");
    let with_associations = !list_param(&q, "associations").is_empty();
    let shown = Shown::DefaultsAnd(&properties);
    Ok(Json(object.to_json(shown, with_associations)).into_response())
}

async fn search(
    State(state): State<CrmState>,
    Path(kind): Path<String>,
    body: Bytes,
) -> Result<Response, CrmError> {
    let kind = ObjectType::parse(&kind)?;
    let body: SearchBody = parse(&body)?;
    let (total, page) = state.db().search(kind, &body, Instant::now())?;
    let (offset, _) = body.page()?;
    let shown = Shown::DefaultsAnd(&body.properties);
    let results: Vec<Value> = page.iter().map(|o| o.to_json(shown, false)).collect();
    let next = offset + results.len();
    let mut answer = json!({ "total": total, "results": results });
    if next < total {
        answer["paging"] = json!({ "next": { "after": next.to_string() } });
    }
    Ok(Json(answer).into_response())
}

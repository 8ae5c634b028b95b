//! The router: HubSpot's CRM v3 object endpoints behind the [`gate`]
//! middleware, the simulator's `/_sim/*` endpoints, and `/healthz`.
//! `app(state)` is all a test needs to drive it without a socket.
//!
//! - `POST /crm/v3/objects/{type}`: create (201), with associations.
//! - `GET /crm/v3/objects/{type}/{id}?properties=a,b&associations=contacts`
//! - `PATCH /crm/v3/objects/{type}/{id}`: update properties (200).
//! - `POST /crm/v3/objects/{type}/search`: filter, sort, page.
//! - `GET /crm/v3/objects/{type}/{value}?idProperty=name`: by a unique
//!   property's value, seen at once (search lags).
//! - `POST /crm/v3/objects/{type}/batch/upsert`: by a unique property.
//! - `POST /crm/v3/properties/{type}`, `GET /crm/v3/properties/{type}/{name}`:
//!   property definitions, `hasUniqueValue` where HubSpot allows it.
//!
//! Bodies are read by hand, so a malformed one gets HubSpot's
//! `VALIDATION_ERROR` body rather than the framework's.

use std::collections::HashMap;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Extension, Json, Router};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::CrmError;
use crate::gate::gate;
use crate::objects::{read_create, read_properties, ObjectType, Shown, WriteBody};
use crate::properties::{self, supports_unique_values};
use crate::search::SearchBody;
use crate::state::{CrmState, Draws};

/// The whole HTTP surface.
pub fn app(state: CrmState) -> Router {
    let crm = Router::new()
        .route("/crm/v3/objects/{kind}", post(create))
        .route("/crm/v3/objects/{kind}/search", post(search))
        .route("/crm/v3/objects/{kind}/batch/upsert", post(upsert))
        .route("/crm/v3/properties/{kind}", post(define_property))
        .route("/crm/v3/properties/{kind}/{name}", get(read_property))
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
    draws: Option<Extension<Draws>>,
    body: Bytes,
) -> Result<Response, CrmError> {
    let kind = ObjectType::parse(&kind)?;
    let (properties, associations) = read_create(kind, parse::<WriteBody>(&body)?)?;
    let object = state.db().create(
        kind,
        properties,
        associations,
        callstream_platform::clock::now_utc(),
        searchable_at(&state, draws.as_ref()),
    )?;
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
    let object = match q.get("idProperty").filter(|p| !p.is_empty()) {
        // By a unique property's value: what the index holds, at once.
        Some(name) => {
            unique_property(&state, kind, name)?;
            state.db().get_by(kind, name, &id)
        }
        None => state.db().get(kind, &id),
    }
    .ok_or(CrmError::NotFound { id })?;
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

/// When search starts to see an object created now: its lag from the gate's
/// seeded draw (a request without one, none today, lags the median).
fn searchable_at(state: &CrmState, draws: Option<&Extension<Draws>>) -> Instant {
    let z = draws.map_or(0.0, |Extension(d)| d.lag_z);
    Instant::now() + state.behaviour().search_lag(z)
}

/// `name` is a unique property of `kind`, or HubSpot's `400`.
fn unique_property(state: &CrmState, kind: ObjectType, name: &str) -> Result<(), CrmError> {
    match state.db().property(kind, name) {
        Some(def) if def.has_unique_value => Ok(()),
        _ => Err(CrmError::Validation(format!(
            "{name} is not a unique identifier property of {}",
            kind.as_str()
        ))),
    }
}

#[derive(Deserialize)]
struct UpsertBody {
    inputs: Vec<UpsertInput>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpsertInput {
    id_property: String,
    id: String,
    #[serde(default)]
    properties: serde_json::Map<String, Value>,
}

/// `POST /crm/v3/objects/{type}/batch/upsert`: per input, create or update
/// the object whose unique property `idProperty` holds `id`.
async fn upsert(
    State(state): State<CrmState>,
    Path(kind): Path<String>,
    draws: Option<Extension<Draws>>,
    body: Bytes,
) -> Result<Response, CrmError> {
    let kind = ObjectType::parse(&kind)?;
    if !supports_unique_values(kind) {
        return Err(CrmError::Validation(format!(
            "Upsert is not supported for object type {}",
            kind.as_str()
        )));
    }
    let body: UpsertBody = parse(&body)?;
    let started = callstream_platform::clock::now_utc();
    let mut results = Vec::with_capacity(body.inputs.len());
    for input in body.inputs {
        unique_property(&state, kind, &input.id_property)?;
        let properties = read_properties(input.properties)?;
        let (object, new) = state.db().upsert(
            kind,
            &input.id_property,
            &input.id,
            properties,
            callstream_platform::clock::now_utc(),
            searchable_at(&state, draws.as_ref()),
        )?;
        let mut shown = object.to_json(Shown::All, false);
        shown["new"] = json!(new);
        results.push(shown);
    }
    let completed = callstream_platform::clock::now_utc();
    let iso =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    Ok(Json(json!({
        "status": "COMPLETE",
        "results": results,
        "startedAt": iso(started),
        "completedAt": iso(completed),
    }))
    .into_response())
}

/// `POST /crm/v3/properties/{type}`: define a property (`201`).
async fn define_property(
    State(state): State<CrmState>,
    Path(kind): Path<String>,
    body: Bytes,
) -> Result<Response, CrmError> {
    let kind = ObjectType::parse(&kind)?;
    let def =
        properties::read_property(kind, parse(&body)?, callstream_platform::clock::now_utc())?;
    let def = state.db().define(kind, def)?;
    Ok((StatusCode::CREATED, Json(def.to_json())).into_response())
}

/// `GET /crm/v3/properties/{type}/{name}`.
async fn read_property(
    State(state): State<CrmState>,
    Path((kind, name)): Path<(String, String)>,
) -> Result<Response, CrmError> {
    let kind = ObjectType::parse(&kind)?;
    let def = state
        .db()
        .property(kind, &name)
        .ok_or(CrmError::PropertyNotFound { name })?;
    Ok(Json(def.to_json()).into_response())
}

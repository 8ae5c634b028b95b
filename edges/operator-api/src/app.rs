//! The router, its state and the OpenAPI document (served at `/openapi.json`, generated
//! from the handlers' annotations, so it covers every route by construction; a test checks
//! that every routed path is in it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::Utc;
use serde::Deserialize;
use sqlx::PgPool;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi};
use uuid::Uuid;

use crate::auth::Principal;
use crate::config::OperatorApiConfig;
use crate::error::{ApiError, ErrorBody};
use crate::limits::{self, Limits};
use crate::metrics::ApiMetrics;
use crate::model::CommandStatus;
use crate::publish::Publisher;
use crate::ready::Readiness;
use crate::{actions, cases, control, crm_retry, model, reads, retry};

/// The optional tenant header every route accepts.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Header)]
pub struct TenantHeader {
    /// The tenant the caller means; another than the token's is refused with 403.
    #[serde(rename = "X-Tenant-Id")]
    #[param(rename = "X-Tenant-Id")]
    pub tenant: Option<String>,
}

/// Commands sent by this process and not yet seen in the view: answered `pending`.
struct Issued {
    tenant_id: String,
    kind: String,
    contact_id: Option<String>,
    actor_id: String,
    at: Instant,
    requested_at: chrono::DateTime<Utc>,
}

/// How long a sent command is remembered; the projection shows it long before.
const ISSUED_TTL: Duration = Duration::from_secs(600);

struct Inner {
    pool: PgPool,
    publisher: Publisher,
    config: OperatorApiConfig,
    issued: Mutex<HashMap<Uuid, Issued>>,
    limits: Limits,
    readiness: Readiness,
    metrics: ApiMetrics,
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl AppState {
    pub fn new(pool: PgPool, publisher: Publisher, config: OperatorApiConfig) -> Self {
        Self(Arc::new(Inner {
            pool,
            publisher,
            limits: Limits::new(config.per_token, config.per_address, config.max_waiting),
            readiness: Readiness::new(config.ready_cache),
            metrics: ApiMetrics::new(),
            config,
            issued: Mutex::new(HashMap::new()),
        }))
    }

    pub fn limits(&self) -> &Limits {
        &self.0.limits
    }

    pub fn pool(&self) -> &PgPool {
        &self.0.pool
    }

    pub fn publisher(&self) -> &Publisher {
        &self.0.publisher
    }

    pub fn config(&self) -> &OperatorApiConfig {
        &self.0.config
    }

    /// The request metrics, as the admin listener's `/metrics` serves them.
    pub fn metrics(&self) -> &ApiMetrics {
        &self.0.metrics
    }

    pub(crate) fn remember(
        &self,
        p: &Principal,
        id: Uuid,
        kind: String,
        contact_id: Option<String>,
    ) {
        let Ok(mut issued) = self.0.issued.lock() else {
            return;
        };
        issued.retain(|_, i| i.at.elapsed() < ISSUED_TTL);
        issued.insert(
            id,
            Issued {
                tenant_id: p.tenant_id.clone(),
                kind,
                contact_id,
                actor_id: p.subject.clone(),
                at: Instant::now(),
                requested_at: callstream_platform::clock::now_utc(),
            },
        );
    }

    pub(crate) fn issued(&self, tenant: &str, id: Uuid) -> Option<CommandStatus> {
        let issued = self.0.issued.lock().ok()?;
        let i = issued.get(&id).filter(|i| i.tenant_id == tenant)?;
        Some(CommandStatus {
            command_id: id,
            kind: Some(i.kind.clone()),
            contact_id: i.contact_id.clone(),
            actor_id: Some(i.actor_id.clone()),
            requested_at: Some(i.requested_at),
            status: "pending".into(),
            status_at: None,
            reason: None,
        })
    }
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Every error answer is an RFC 9457 problem: its media type in the document says so.
struct ProblemJson;

impl Modify for ProblemJson {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for operation in operations.into_iter().flatten() {
                for (status, response) in operation.responses.responses.iter_mut() {
                    let utoipa::openapi::RefOr::T(response) = response else {
                        continue;
                    };
                    if !(status.starts_with('4') || status.starts_with('5')) {
                        continue;
                    }
                    if let Some(content) = response.content.shift_remove("application/json") {
                        response
                            .content
                            .insert(callstream_platform::problem::CONTENT_TYPE.into(), content);
                    }
                }
            }
        }
    }
}

/// Every route can answer 429 (the address budget applies to all of them), so the answer
/// is documented once here rather than on each handler.
struct TooManyRequests;

impl Modify for TooManyRequests {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        use utoipa::openapi::{ContentBuilder, HeaderBuilder, Ref, ResponseBuilder};
        let response = ResponseBuilder::new()
            .description(
                "Too many requests (of the token, of the address, or waiting at once): \
                 code `rate_limited`; retry after `Retry-After` seconds.",
            )
            .header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(1)),
                    )
                    .description(Some("Whole seconds to wait, at least 1."))
                    .build(),
            )
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build();
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
                &mut item.head,
                &mut item.options,
                &mut item.trace,
            ]
            .into_iter()
            .flatten()
            {
                operation
                    .responses
                    .responses
                    .insert("429".into(), response.clone().into());
            }
        }
    }
}

/// The OpenAPI 3.1 document.
#[derive(OpenApi)]
#[openapi(
    info(title = "callstream operator API", description = "Reads the views; actions become commands on Kafka (202 with a command id)."),
    paths(
        reads::list_jobs, reads::get_job, reads::list_exceptions, reads::slots,
        reads::missing_launches, reads::delivery, reads::timeline, reads::control, reads::audit,
        reads::summary, reads::dead_letters, crate::dead_letters::replay, actions::get_command, retry::retry_now, retry::retry_later,
        actions::cancel_future_jobs, actions::force_finish,
        cases::recover, cases::advance, cases::ignore_exception, cases::assign_exception, crm_retry::retry_crm_command,
        control::system_pause, control::campaign_pause, control::shadow_mode, control::crm_writes,
        healthz, readyz,
    ),
    components(schemas(
        ErrorBody, model::Job, model::JobDetail, model::Exception, model::Slots,
        model::SlotOccupancy, model::MissingLaunch, model::DeliveryBucket, model::TimelineEntry,
        model::ControlSetting, model::Summary, model::Count, model::DeadLetter, model::CommandStatus, model::Accepted, model::AuditEntry,
        retry::RetryNowBody, retry::RetryLaterBody, actions::ReasonBody, actions::CancelBody,
        cases::AdvanceBody, cases::AdvanceAs, cases::AssignBody, control::SwitchBody,
    )),
    modifiers(&BearerAuth, &TooManyRequests, &ProblemJson),
)]
pub struct ApiDoc;

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, description = "alive")))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: Postgres and Kafka answer (the answer is reused for a second or so, so
/// probes do not reach them each time).
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, description = "ready"), (status = 503, body = ErrorBody)))]
pub async fn readyz(State(state): State<AppState>) -> Result<&'static str, ApiError> {
    state
        .0
        .readiness
        .check(|| async {
            sqlx::query("SELECT 1").execute(state.pool()).await?;
            if !state.publisher().ready().await {
                return Err(ApiError::Unavailable("kafka does not answer"));
            }
            Ok(())
        })
        .await?;
    Ok("ready")
}

async fn openapi() -> impl IntoResponse {
    Json(ApiDoc::openapi())
}

async fn no_route() -> ApiError {
    ApiError::NotFound { what: "route" }
}

async fn wrong_method() -> ApiError {
    ApiError::WrongMethod
}

/// The router; tests call it without a socket.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/v1/jobs", get(reads::list_jobs))
        .route("/v1/jobs/{job_id}", get(reads::get_job))
        .route("/v1/exceptions", get(reads::list_exceptions))
        .route(
            "/v1/exceptions/{exception_id}/ignore",
            post(cases::ignore_exception),
        )
        .route(
            "/v1/exceptions/{exception_id}/assign",
            post(cases::assign_exception),
        )
        .route(
            "/v1/exceptions/{exception_id}/retry",
            post(crm_retry::retry_crm_command),
        )
        .route("/v1/slots", get(reads::slots))
        .route("/v1/launches/missing", get(reads::missing_launches))
        .route("/v1/launches/{launch_id}/recover", post(cases::recover))
        .route("/v1/launches/{launch_id}/advance", post(cases::advance))
        .route("/v1/delivery", get(reads::delivery))
        .route("/v1/contacts/{contact_id}/timeline", get(reads::timeline))
        .route(
            "/v1/contacts/{contact_id}/retry-now",
            post(retry::retry_now),
        )
        .route(
            "/v1/contacts/{contact_id}/retry-later",
            post(retry::retry_later),
        )
        .route(
            "/v1/contacts/{contact_id}/cancel-future-jobs",
            post(actions::cancel_future_jobs),
        )
        .route(
            "/v1/contacts/{contact_id}/force-finish",
            post(actions::force_finish),
        )
        .route("/v1/control", get(reads::control))
        .route("/v1/audit", get(reads::audit))
        .route("/v1/summary", get(reads::summary))
        .route("/v1/dead-letters", get(reads::dead_letters))
        .route(
            "/v1/dead-letters/{letter_id}/replay",
            post(crate::dead_letters::replay),
        )
        .route("/v1/control/system-pause", post(control::system_pause))
        .route(
            "/v1/control/campaigns/{campaign_id}/pause",
            post(control::campaign_pause),
        )
        .route("/v1/control/shadow-mode", post(control::shadow_mode))
        .route("/v1/control/crm-writes", post(control::crm_writes))
        .route("/v1/commands/{command_id}", get(actions::get_command))
        .route("/openapi.json", get(openapi))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(crate::console::routes())
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::per_address,
        ))
        // Outermost, so the address limiter's 429s are counted too.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::metrics::track,
        ))
        .with_state(state)
}

/// The admin listener's routes: `/metrics` (OpenMetrics text) and the health checks again,
/// with no token and no rate limit (the listener is for the people who run the API, on
/// loopback by default).
pub fn admin(state: AppState) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(state): State<AppState>| async move {
                callstream_platform::metrics::response(state.metrics().encode())
            }),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use callstream_domain::input::{ID_PATTERN, TEXT_PATTERN};
    use serde_json::Value;
    use utoipa::OpenApi;

    use super::ApiDoc;

    fn document() -> Value {
        serde_json::to_value(ApiDoc::openapi()).expect("the document serialises")
    }

    #[test]
    fn every_error_answer_is_documented_as_problem_json() {
        let doc = document();
        let mut errors = 0;
        for (path, methods) in doc["paths"].as_object().into_iter().flatten() {
            for (method, operation) in methods.as_object().into_iter().flatten() {
                let responses = operation["responses"].as_object().into_iter().flatten();
                for (status, response) in responses.filter(|(s, _)| s.as_str() >= "400") {
                    if let Some(content) = response["content"].as_object() {
                        errors += 1;
                        assert!(
                            content.contains_key("application/problem+json")
                                && !content.contains_key("application/json"),
                            "{method} {path} {status}: {content:?}"
                        );
                    }
                }
            }
        }
        assert!(errors > 50, "only {errors} error answers documented");
    }

    /// Every `pattern` in the document, wherever it is.
    fn patterns(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    match (key.as_str(), inner) {
                        ("pattern", Value::String(p)) => found.push(p.clone()),
                        _ => patterns(inner, found),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| patterns(i, found)),
            _ => {}
        }
    }

    #[test]
    fn the_documented_id_and_text_rules_are_the_ones_the_api_enforces() {
        let mut found = Vec::new();
        patterns(&document(), &mut found);
        let ids = found.iter().filter(|p| *p == ID_PATTERN).count();
        let texts = found.iter().filter(|p| *p == TEXT_PATTERN).count();
        // Contact ids in five paths and one query, campaign ids in a path, a query and
        // two bodies; five reason fields.
        assert!(ids >= 10, "{ids} id patterns in {found:?}");
        assert!(texts >= 5, "{texts} text patterns in {found:?}");
        let known_others = ["^[0-9]{1,9}(ms|s|m)?$", "^[0-9]{1,16}_[0-9a-f]{32}$"];
        for pattern in &found {
            let is_text_like = pattern.starts_with(r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F]*");
            assert!(
                pattern == ID_PATTERN || is_text_like || known_others.contains(&pattern.as_str()),
                "a pattern the input rules do not know: {pattern}"
            );
        }
    }
}

//! The routers and their shared state: `app` (webhook and launch-intake
//! endpoints, `/healthz` and `/readyz` for the load balancer) on the public
//! listener, and `admin` (`/metrics`, `/healthz`, `/readyz`) on the admin
//! listener, so the public port never publishes the metrics. `app(state)`
//! is all a test needs to drive the gateway without a socket.
//!
//! Order of checks on a webhook, cheapest and least trusting first:
//! integration (404), content type (400), size (413), signature (401), rate
//! budget (429, spent only by genuinely signed requests), parse (400/422),
//! then Kafka (202 only on the delivery report, else 503).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde_json::json;
use uuid::Uuid;

use crate::codec::{AvroCodec, Encoded, EventCodec};
use crate::config::{GatewayConfig, IntegrationConfig, RateLimit, TenantConfig};
use crate::error::ApiError;
use crate::event::ProviderKind;
use crate::intake::{accepted, produce, read_body, RecordHeaders};
use crate::metrics::{Metrics, Outcome, Route, ACCEPTED};
use crate::provider::{self, json::Json as JsonProvider, twilio::Twilio, Inbound, Provider};
use crate::publish::{ProducerTuning, Publisher, Readiness};
use crate::verify::{Clock, SystemClock};

/// A configured sender (integration or tenant) with its own rate budget.
pub(crate) struct Budgeted<C> {
    pub config: C,
    pub limiter: DefaultDirectRateLimiter,
}

/// A token bucket for one sender (governor; lock-free `check`).
pub fn limiter(rate: RateLimit) -> DefaultDirectRateLimiter {
    RateLimiter::direct(Quota::per_second(rate.per_second).allow_burst(rate.burst))
}

/// Spends one unit of a budget, or says how long until one is free.
pub(crate) fn spend(limiter: &DefaultDirectRateLimiter) -> Result<(), ApiError> {
    limiter.check().map_err(|not_until| ApiError::RateLimited {
        retry_after: not_until.wait_time_from(DefaultClock::default().now()),
    })
}

/// Everything a request handler shares; cheap to clone.
#[derive(Clone)]
pub struct AppState(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    pub integrations: HashMap<String, Budgeted<IntegrationConfig>>,
    pub tenants: Vec<Budgeted<TenantConfig>>,
    pub twilio: Twilio,
    pub json: JsonProvider,
    pub publisher: Arc<Publisher>,
    pub readiness: Readiness,
    pub codec: Arc<dyn EventCodec>,
    pub metrics: Metrics,
    pub max_body_bytes: usize,
    pub call_events: String,
    pub contact_commands: String,
}

/// The gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("configuration: {0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("creating the Kafka producer: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    /// Binding the listen address, or serving on it.
    #[error(transparent)]
    Http(#[from] callstream_platform::http::ServeError),
}

impl AppState {
    /// State for `config`: Avro values, the system clock.
    pub fn new(config: &GatewayConfig) -> Result<Self, StartError> {
        Self::with_parts(config, Arc::new(AvroCodec), Arc::new(SystemClock))
    }

    /// State for `config`, encoding with `codec` and checking signed
    /// timestamps against `clock` (tests pin it).
    pub fn with_parts(
        config: &GatewayConfig,
        codec: Arc<dyn EventCodec>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StartError> {
        config.validate()?;
        let tuning = ProducerTuning {
            produce_timeout: config.produce_timeout,
            linger: config.produce_linger,
        };
        let publisher = Arc::new(Publisher::new(config.kafka.clone(), tuning)?);
        let call_events = config.topics.name(callstream_platform::topics::CALL_EVENTS);
        let contact_commands = config
            .topics
            .name(callstream_platform::topics::CONTACT_COMMANDS);
        let readiness = Readiness::new(
            vec![call_events.clone(), contact_commands.clone()],
            config.readiness_cache,
            config.readiness_timeout,
        );
        let integrations = config
            .integrations
            .iter()
            .map(|i| {
                let entry = Budgeted {
                    limiter: limiter(i.rate_limit),
                    config: i.clone(),
                };
                (i.id.clone(), entry)
            })
            .collect();
        let tenants = config
            .tenants
            .iter()
            .map(|t| Budgeted {
                limiter: limiter(t.rate_limit),
                config: t.clone(),
            })
            .collect();
        Ok(Self(Arc::new(Inner {
            integrations,
            tenants,
            twilio: Twilio {
                public_base_url: config.public_base_url.clone(),
            },
            json: JsonProvider {
                clock,
                tolerance: config.signature_tolerance,
            },
            publisher,
            readiness,
            codec,
            metrics: Metrics::new(),
            max_body_bytes: config.max_body_bytes,
            call_events,
            contact_commands,
        })))
    }

    /// The shared producer (for flushing at shutdown).
    pub fn publisher(&self) -> &Arc<Publisher> {
        &self.0.publisher
    }

    /// The metrics in Prometheus text form, as `/metrics` serves them.
    pub fn metrics_text(&self) -> String {
        self.0.metrics.encode()
    }
}

/// The gateway's HTTP surface.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/v1/webhooks/{provider}/{integration_id}", post(webhook))
        .route("/v1/launch-requests", post(crate::launch::launch_request))
        .route(
            "/v1/contact-updates",
            post(crate::contact_update::contact_update),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .fallback(|| async { ApiError::NoRoute })
        .method_not_allowed_fallback(|| async { ApiError::WrongMethod })
        .with_state(state)
}

/// The admin listener's routes: `/metrics` (OpenMetrics text), and the
/// health checks again for whoever watches the admin port.
pub fn admin(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .fallback(|| async { ApiError::NoRoute })
        .method_not_allowed_fallback(|| async { ApiError::WrongMethod })
        .with_state(state)
}

/// Takes the request whole: the `HeaderMap` and `Uri` extractors would
/// copy both for every request.
async fn webhook(
    State(state): State<AppState>,
    path: Result<Path<(String, String)>, axum::extract::rejection::PathRejection>,
    request: Request,
) -> Response {
    let started = Instant::now();
    let inner = &*state.0;
    let Ok(Path((provider_name, integration_id))) = path else {
        return ApiError::UnknownIntegration.into_response();
    };
    let Some(kind) = ProviderKind::from_name(&provider_name) else {
        return ApiError::UnknownIntegration.into_response();
    };
    let route = match kind {
        ProviderKind::Twilio => Route::Twilio,
        ProviderKind::Json => Route::Json,
    };
    let entry = inner
        .integrations
        .get(&integration_id)
        .filter(|i| i.config.provider == kind);
    let result = match entry {
        None => Err(ApiError::UnknownIntegration),
        Some(entry) => accept_webhook(inner, kind, entry, request).await,
    };
    let (code, status, event_id, response) = match result {
        Ok(event_id) => (
            ACCEPTED,
            202,
            Some(event_id),
            accepted("event_id", event_id),
        ),
        Err(e) => (e.code(), e.status().as_u16(), None, e.into_response()),
    };
    inner.metrics.record(&Outcome {
        route,
        code,
        status,
        integration: entry.map(|e| e.config.id.as_str()),
        tenant: entry.map(|e| e.config.tenant_id.as_str()),
        event_id,
        elapsed: started.elapsed(),
    });
    response
}

async fn accept_webhook(
    inner: &Inner,
    kind: ProviderKind,
    entry: &Budgeted<IntegrationConfig>,
    request: Request,
) -> Result<Uuid, ApiError> {
    let provider = provider_of(inner, kind);
    let ready = check_webhook(
        provider,
        &entry.config,
        &entry.limiter,
        &*inner.codec,
        inner.max_body_bytes,
        request,
    )
    .await?;
    produce(
        inner,
        &inner.call_events,
        callstream_platform::topics::CALL_EVENTS,
        &ready.key,
        &ready.encoded,
        &ready.headers,
    )
    .await?;
    Ok(ready.event_id)
}

/// A webhook request through every check the router makes before Kafka,
/// in its order: content type (400), size (413), signature (401), rate
/// budget (429), parse (400/422), encode (500). The router runs exactly
/// this and then produces; the fuzz harness (`fuzz/src/lib.rs`) runs it
/// without a producer.
pub async fn check_webhook(
    provider: &dyn Provider,
    integration: &IntegrationConfig,
    budget: &DefaultDirectRateLimiter,
    codec: &dyn EventCodec,
    max_body_bytes: usize,
    request: Request,
) -> Result<Ready, ApiError> {
    let (parts, body) = request.into_parts();
    if !provider::content_type_is(&parts.headers, provider.content_type()) {
        return Err(ApiError::WrongContentType {
            expected: provider.content_type(),
        });
    }
    let body = read_body(&parts.headers, body, max_body_bytes).await?;
    // Nothing of the request outlives this call: its buffers go before
    // Kafka answers.
    prepare_webhook(provider, integration, budget, codec, &parts, &body)
}

fn provider_of(inner: &Inner, kind: ProviderKind) -> &dyn Provider {
    match kind {
        ProviderKind::Twilio => &inner.twilio,
        ProviderKind::Json => &inner.json,
    }
}

/// A verified, parsed and encoded event, owning everything the produce needs.
pub struct Ready {
    pub event_id: Uuid,
    /// The record key: the event's contact id.
    pub key: String,
    encoded: Encoded,
    headers: RecordHeaders,
}

/// Everything up to the produce: no waiting, so nothing borrowed from the
/// request outlives it.
fn prepare_webhook(
    provider: &dyn Provider,
    integration: &IntegrationConfig,
    budget: &DefaultDirectRateLimiter,
    codec: &dyn EventCodec,
    parts: &Parts,
    body: &[u8],
) -> Result<Ready, ApiError> {
    let headers = &parts.headers;
    let request = Inbound {
        integration,
        path_and_query: parts.uri.path_and_query().map_or("/", |p| p.as_str()),
        headers,
        body,
        received_at: callstream_platform::clock::now_utc(),
    };
    let verified = provider.verify(&request)?;
    spend(budget)?;
    let event = provider.parse(&request, verified)?;
    let (event_id, correlation_id) = (event.event_id, event.correlation_id);
    let key = event.contact_id.clone();
    let encoded = codec.call_event(event).map_err(|e| {
        tracing::error!(%event_id, error = %e, "call event does not encode");
        ApiError::Internal
    })?;
    Ok(Ready {
        event_id,
        key,
        encoded,
        headers: RecordHeaders::new(event_id, correlation_id, headers),
    })
}

async fn healthz() -> Response {
    Json(json!({ "status": "ok" })).into_response()
}

async fn readyz(State(state): State<AppState>) -> Response {
    let inner = &*state.0;
    let answer = inner.readiness.check(&inner.publisher).await;
    inner.metrics.set_ready(answer.is_ok());
    match answer {
        Ok(()) => Json(json!({ "status": "ready" })).into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "not_ready", "reason": reason })),
        )
            .into_response(),
    }
}

async fn metrics(State(state): State<AppState>) -> Response {
    callstream_platform::metrics::response(state.metrics_text())
}

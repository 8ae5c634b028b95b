//! The API's request metrics: count and latency by route template (never the
//! path itself, whose ids would make a series per contact), method and
//! status, counted by one middleware around every route, the 429s of the
//! address limiter included. Served on `/metrics` of the admin listener
//! (see [`admin`](crate::app::admin)), never on the public port: the API
//! faces operators' browsers, and request volumes per route are for the
//! people who run it, not for whoever can reach it.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::app::AppState;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    /// The route template (`/v1/jobs/{job_id}`), or `unmatched`.
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

type Durations = Family<RouteLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    // 1 ms .. ~33 s: reads are milliseconds, a `?wait=` up to the 30 s maximum.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The API's metrics.
#[derive(Debug)]
pub struct ApiMetrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Durations,
}

impl Default for ApiMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ApiMetrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("callstream_operator_api");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests answered, by method, route template and status",
            requests.clone(),
        );
        let durations: Durations = Family::new_with_constructor(duration_histogram);
        registry.register(
            "request_duration_seconds",
            "Time to answer a request, by method and route template",
            durations.clone(),
        );
        Self {
            registry,
            requests,
            durations,
        }
    }

    /// Counts one answered request.
    pub fn record(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let (method, route) = (method.to_owned(), route.to_owned());
        self.durations
            .get_or_create(&RouteLabels {
                method: method.clone(),
                route: route.clone(),
            })
            .observe(seconds);
        self.requests
            .get_or_create(&RequestLabels {
                method,
                route,
                status,
            })
            .inc();
    }

    /// OpenMetrics text.
    pub fn encode(&self) -> String {
        callstream_platform::metrics::encode(&self.registry)
    }
}

/// Counts and times one request under its route template.
pub(crate) async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let method = request.method().as_str().to_owned();
    let response = next.run(request).await;
    state.metrics().record(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

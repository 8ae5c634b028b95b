//! The gateway's Prometheus metrics and the one place that logs and counts
//! a request's outcome together, so logs and metrics never disagree.
//!
//! Log lines carry ids (integration, tenant, event id) and the outcome code,
//! never a body, a phone number or a secret.

use std::time::Duration;

use prometheus_client::encoding::{text, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use uuid::Uuid;

/// Which endpoint a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    // The discriminants index `Metrics::accepted`.
    Twilio = 0,
    Json = 1,
    LaunchRequest = 2,
    ContactUpdate = 3,
}

/// The outcome of a request that was made durable.
pub const ACCEPTED: &str = "accepted";

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Twilio => "twilio",
            Self::Json => "json",
            Self::LaunchRequest => "launch_request",
            Self::ContactUpdate => "contact_update",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    route: &'static str,
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TopicLabels {
    topic: &'static str,
    result: &'static str,
}

type HistogramFamily = Family<TopicLabels, Histogram, fn() -> Histogram>;

fn produce_histogram() -> Histogram {
    // 0.25 ms .. ~8 s: loopback acks are sub-millisecond, the timeout is seconds.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
}

/// Everything the gateway counts.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<OutcomeLabels, Counter>,
    produce_latency: HistogramFamily,
    ready: Gauge,
    /// Handles of the series every accepted request touches, looked up
    /// once: a family lookup hashes the labels and takes a lock, twice per
    /// request on the hot path. Same series as the family's, shared.
    accepted: [Counter; 4],
    acked: [(&'static str, Histogram); 2],
}

/// The topics the gateway produces to, by logical name.
const TOPICS: [&str; 2] = [
    callstream_platform::topics::CALL_EVENTS,
    callstream_platform::topics::CONTACT_COMMANDS,
];

const ROUTES: [Route; 4] = [
    Route::Twilio,
    Route::Json,
    Route::LaunchRequest,
    Route::ContactUpdate,
];

/// What a request ended as, for the log line.
#[derive(Debug, Clone, Copy)]
pub struct Outcome<'a> {
    pub route: Route,
    /// `accepted` or an [`ApiError`](crate::ApiError) code.
    pub code: &'static str,
    pub status: u16,
    pub integration: Option<&'a str>,
    pub tenant: Option<&'a str>,
    pub event_id: Option<Uuid>,
    pub elapsed: Duration,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("callstream_gateway");
        let requests = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests by route and outcome (accepted, or the error code)",
            requests.clone(),
        );
        let produce_latency: HistogramFamily = Family::new_with_constructor(produce_histogram);
        registry.register(
            "produce_latency_seconds",
            "Time from produce to Kafka's delivery report, by topic and result",
            produce_latency.clone(),
        );
        let ready = Gauge::default();
        registry.register(
            "broker_ready",
            "1 when the last readiness check reached the broker, else 0",
            ready.clone(),
        );
        let accepted = ROUTES.map(|route| {
            requests
                .get_or_create(&OutcomeLabels {
                    route: route.as_str(),
                    outcome: ACCEPTED,
                })
                .clone()
        });
        let acked = TOPICS.map(|topic| {
            let labels = TopicLabels {
                topic,
                result: "acked",
            };
            (topic, produce_latency.get_or_create(&labels).clone())
        });
        Self {
            registry,
            requests,
            produce_latency,
            ready,
            accepted,
            acked,
        }
    }

    /// Counts and logs one finished request.
    pub fn record(&self, o: &Outcome<'_>) {
        if o.code == ACCEPTED {
            self.accepted[o.route as usize].inc();
        } else {
            self.requests
                .get_or_create(&OutcomeLabels {
                    route: o.route.as_str(),
                    outcome: o.code,
                })
                .inc();
        }
        let elapsed_ms = o.elapsed.as_secs_f64() * 1000.0;
        let event_id = o.event_id.map(tracing::field::display);
        let (route, code, status) = (o.route.as_str(), o.code, o.status);
        let (integration, tenant) = (o.integration, o.tenant);
        // Accepted requests are the bulk: debug, so a busy gateway does not
        // spend its time writing logs. The log of record is Kafka.
        if status >= 500 {
            tracing::warn!(
                route,
                code,
                status,
                integration,
                tenant,
                event_id,
                elapsed_ms,
                "request refused"
            );
        } else if status >= 400 {
            tracing::info!(
                route,
                code,
                status,
                integration,
                tenant,
                event_id,
                elapsed_ms,
                "request refused"
            );
        } else {
            tracing::debug!(
                route,
                code,
                status,
                integration,
                tenant,
                event_id,
                elapsed_ms,
                "request accepted"
            );
        }
    }

    /// Records how long one produce took, and whether it was acknowledged.
    pub fn produce(&self, topic: &'static str, acknowledged: bool, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let cached = self.acked.iter().find(|(t, _)| acknowledged && *t == topic);
        match cached {
            Some((_, histogram)) => histogram.observe(seconds),
            None => {
                let result = if acknowledged { "acked" } else { "failed" };
                self.produce_latency
                    .get_or_create(&TopicLabels { topic, result })
                    .observe(seconds);
            }
        }
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.set(i64::from(ready));
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(4096);
        // Writing into a String cannot fail.
        let _ = text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_and_latency_are_exposed() {
        let metrics = Metrics::new();
        let outcome = Outcome {
            route: Route::Twilio,
            code: "accepted",
            status: 202,
            integration: Some("i"),
            tenant: Some("t"),
            event_id: None,
            elapsed: Duration::from_millis(3),
        };
        metrics.record(&outcome);
        metrics.record(&outcome);
        metrics.record(&Outcome {
            code: "bad_signature",
            status: 401,
            ..outcome
        });
        metrics.produce("call-events", true, Duration::from_millis(2));
        metrics.set_ready(true);
        let text = metrics.encode();
        assert!(
            text.contains(
                r#"callstream_gateway_requests_total{route="twilio",outcome="accepted"} 2"#
            ),
            "{text}"
        );
        assert!(text.contains(
            r#"callstream_gateway_requests_total{route="twilio",outcome="bad_signature"} 1"#
        ));
        assert!(text.contains(r#"callstream_gateway_produce_latency_seconds_count{topic="call-events",result="acked"} 1"#), "{text}");
        assert!(text.contains("callstream_gateway_broker_ready 1"));
    }
}

//! The dispatcher's Prometheus metrics, next to the log lines they count
//! (the processor and the effect handler call [`DispatchMetrics`] where they
//! log). `encode` renders them for a `/metrics` endpoint; `second_calls`
//! must stay at zero.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    /// The tenant: a tenant's failure rate is what an alert watches (tenants are few).
    pub tenant: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `create` or `lookup`.
    pub op: String,
    /// The outcome kind (`accepted`, `transient`, `found`, `not_found`, ...).
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpLabels {
    pub op: String,
}

/// Counters and timings of one dispatcher instance.
#[derive(Debug)]
pub struct DispatchMetrics {
    registry: Registry,
    /// Launches that reached a final status, by tenant and status.
    pub finished: Family<StatusLabels, Counter>,
    /// Launches that went to reconciliation, by why.
    pub ambiguous: Family<ReasonLabels, Counter>,
    /// Provider requests, by operation and outcome.
    pub requests: Family<RequestLabels, Counter>,
    /// Provider request time, by operation (rate-limit waits excluded).
    pub request_seconds: Family<OpLabels, Histogram>,
    /// A provider reported a second call for a finished launch. Never expected.
    pub second_calls: Counter,
    /// Launch commands whose launch id was already in the ledger.
    pub duplicate_commands: Counter,
}

impl Default for DispatchMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl DispatchMetrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("callstream_launch_dispatcher");
        let metrics = Self {
            registry: Registry::default(),
            finished: Family::default(),
            ambiguous: Family::default(),
            requests: Family::default(),
            request_seconds: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 15))
            }),
            second_calls: Counter::default(),
            duplicate_commands: Counter::default(),
        };
        registry.register(
            "launches_finished",
            "Launches that reached a final status (accepted, failed, shadow, held, ...), by tenant",
            metrics.finished.clone(),
        );
        registry.register(
            "launches_ambiguous",
            "Launches sent to reconciliation, by reason",
            metrics.ambiguous.clone(),
        );
        registry.register(
            "provider_requests",
            "Requests to the voice platform, by operation and outcome",
            metrics.requests.clone(),
        );
        registry.register(
            "provider_request_seconds",
            "Time of one request to the voice platform",
            metrics.request_seconds.clone(),
        );
        registry.register(
            "second_calls",
            "Second calls reported for a finished launch (must stay 0)",
            metrics.second_calls.clone(),
        );
        registry.register(
            "duplicate_commands",
            "Launch commands for a launch id already in the ledger",
            metrics.duplicate_commands.clone(),
        );
        Self {
            registry,
            ..metrics
        }
    }

    pub fn finished(&self, tenant: &str, status: &str) {
        self.finished
            .get_or_create(&StatusLabels {
                tenant: tenant.to_owned(),
                status: status.to_owned(),
            })
            .inc();
    }

    pub fn ambiguous(&self, reason: &str) {
        self.ambiguous
            .get_or_create(&ReasonLabels {
                reason: reason.to_owned(),
            })
            .inc();
    }

    pub fn request(&self, op: &str, outcome: &str, seconds: Option<f64>) {
        self.requests
            .get_or_create(&RequestLabels {
                op: op.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
        if let Some(seconds) = seconds {
            self.request_seconds
                .get_or_create(&OpLabels { op: op.to_owned() })
                .observe(seconds);
        }
    }

    /// The metrics in Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_events_show_up_in_the_exposition() {
        let metrics = DispatchMetrics::new();
        metrics.finished("acme", "accepted");
        metrics.request("create", "transient", Some(0.02));
        metrics.second_calls.inc();
        let text = metrics.encode();
        for expected in [
            "callstream_launch_dispatcher_launches_finished_total{tenant=\"acme\",status=\"accepted\"} 1",
            "callstream_launch_dispatcher_provider_requests_total{op=\"create\",outcome=\"transient\"} 1",
            "callstream_launch_dispatcher_second_calls_total 1",
            "callstream_launch_dispatcher_provider_request_seconds_count{op=\"create\"} 1",
        ] {
            assert!(text.contains(expected), "{expected} not in\n{text}");
        }
    }
}

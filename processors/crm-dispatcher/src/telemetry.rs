//! The dispatcher's own Prometheus metrics, counted where the state machine
//! decides (results, requests' outcomes, parked retries, operator retries);
//! `encode` renders them for `/metrics`, next to the runtime's. A step
//! repeated after an aborted transaction counts again: these are rates to
//! watch, the topics are the record.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::policy::Sent;
use crate::wire::Outcome;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    /// The tenant: a tenant's failure rate is what an alert watches (tenants are few).
    pub tenant: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `create`, `update` or `search`.
    pub request: String,
    /// `written`, `found`, `not_found`, `throttled`, `refused_4xx`,
    /// `refused_5xx`, `unanswered`, `unreachable` or `expired`.
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// `applied` or `rejected`.
    pub result: String,
}

/// Counters of one dispatcher instance.
#[derive(Debug)]
pub struct CrmMetrics {
    registry: Registry,
    /// Commands settled, by tenant and `crm-result` status.
    pub settled: Family<StatusLabels, Counter>,
    /// CRM requests, by kind and outcome.
    pub requests: Family<RequestLabels, Counter>,
    /// Commands parked for a retry after a failed request.
    pub parked: Counter,
    /// Operator retries, by audit result.
    pub operator_retries: Family<ResultLabels, Counter>,
}

impl Default for CrmMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl CrmMetrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("callstream_crm_dispatcher");
        let metrics = Self {
            registry: Registry::default(),
            settled: Family::default(),
            requests: Family::default(),
            parked: Counter::default(),
            operator_retries: Family::default(),
        };
        registry.register(
            "commands_settled",
            "CRM commands settled, by tenant and result status",
            metrics.settled.clone(),
        );
        registry.register(
            "crm_requests",
            "Requests to the CRM, by kind and outcome",
            metrics.requests.clone(),
        );
        registry.register(
            "retries_parked",
            "Commands parked on a timer to retry a failed request",
            metrics.parked.clone(),
        );
        registry.register(
            "operator_retries",
            "Operator retries of failed commands, by audit result",
            metrics.operator_retries.clone(),
        );
        Self {
            registry,
            ..metrics
        }
    }

    pub fn settled(&self, tenant: &str, status: &str) {
        let labels = StatusLabels {
            tenant: tenant.to_owned(),
            status: status.to_owned(),
        };
        self.settled.get_or_create(&labels).inc();
    }

    pub fn request(&self, sent: Sent, outcome: &Outcome) {
        let labels = RequestLabels {
            request: request_label(sent).to_owned(),
            outcome: outcome_label(outcome).to_owned(),
        };
        self.requests.get_or_create(&labels).inc();
    }

    pub fn operator_retry(&self, result: &str) {
        let labels = ResultLabels {
            result: result.to_owned(),
        };
        self.operator_retries.get_or_create(&labels).inc();
    }

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

fn request_label(sent: Sent) -> &'static str {
    match sent {
        Sent::Create => "create",
        Sent::Update => "update",
        Sent::Search => "search",
    }
}

fn outcome_label(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Written { .. } => "written",
        Outcome::Found { .. } => "found",
        Outcome::NotFound => "not_found",
        Outcome::Refused { status: 429, .. } => "throttled",
        Outcome::Refused { status, .. } if *status >= 500 => "refused_5xx",
        Outcome::Refused { .. } => "refused_4xx",
        Outcome::Unanswered { .. } => "unanswered",
        Outcome::Unreachable { .. } => "unreachable",
        Outcome::Expired => "expired",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_events_show_up_in_the_exposition() {
        let metrics = CrmMetrics::new();
        metrics.settled("acme", "applied");
        let refused = Outcome::Refused {
            status: 503,
            retry_after_ms: None,
            message: "down".into(),
        };
        metrics.request(Sent::Create, &refused);
        metrics.parked.inc();
        metrics.operator_retry("applied");
        let text = metrics.encode();
        for expected in [
            "callstream_crm_dispatcher_commands_settled_total{tenant=\"acme\",status=\"applied\"} 1",
            "callstream_crm_dispatcher_crm_requests_total{request=\"create\",outcome=\"refused_5xx\"} 1",
            "callstream_crm_dispatcher_retries_parked_total 1",
            "callstream_crm_dispatcher_operator_retries_total{result=\"applied\"} 1",
        ] {
            assert!(text.contains(expected), "{expected} not in\n{text}");
        }
    }
}

//! The contact processor's metrics, and the one place per telemetry event
//! that logs and counts together, so logs and metrics never disagree.
//!
//! Log lines carry ids (tenant, contact, event, job) and reason codes,
//! never phone numbers or what the lead said. Label values are reason
//! codes and input kinds: a small, fixed vocabulary.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tracing::{debug, warn};
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DecisionLabels {
    kind: &'static str,
    reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct InputLabels {
    input: &'static str,
}

/// Counters of what the processor decided. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct ContactMetrics {
    decisions: Family<DecisionLabels, Counter>,
    rejected: Family<ReasonLabels, Counter>,
    duplicates: Family<InputLabels, Counter>,
}

/// What a decision did to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionKind {
    Plan,
    Cancel,
    Hold,
    Move,
    Launch,
}

impl DecisionKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Cancel => "cancel",
            Self::Hold => "hold",
            Self::Move => "move",
            Self::Launch => "launch",
        }
    }
}

impl ContactMetrics {
    /// Registers the counters (prefix them with the registry's own).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "contact_decisions",
            "Jobs planned, cancelled, held, moved and launched, by reason",
            self.decisions.clone(),
        );
        registry.register(
            "contact_rejected_transitions",
            "Workflow transitions rejected (counted, never applied), by reason",
            self.rejected.clone(),
        );
        registry.register(
            "contact_duplicates",
            "Inputs recognised as duplicates (nothing done), by input kind",
            self.duplicates.clone(),
        );
    }

    /// A job decision (the event on the log says the rest).
    pub fn decision(&self, kind: DecisionKind, job_id: Uuid, reason: &str) {
        debug!(%job_id, kind = kind.as_str(), reason, "job decision");
        self.decisions
            .get_or_create(&DecisionLabels {
                kind: kind.as_str(),
                reason: reason.to_owned(),
            })
            .inc();
    }

    /// A rejected workflow transition: logged with its ids, and counted.
    pub fn rejected(&self, ids: &Ids<'_>, reason: &str, detail: &str, total: u64) {
        warn!(
            tenant = ids.tenant, contact = ids.contact, event_id = %ids.event_id,
            reason, detail, rejected_total = total,
            "workflow transition rejected; not applied"
        );
        self.rejected
            .get_or_create(&ReasonLabels {
                reason: reason.to_owned(),
            })
            .inc();
    }

    /// A duplicate input: nothing was done.
    pub fn duplicate(&self, ids: &Ids<'_>, input: &'static str) {
        debug!(
            tenant = ids.tenant, contact = ids.contact, event_id = %ids.event_id, input,
            "duplicate; nothing to do"
        );
        self.duplicates.get_or_create(&InputLabels { input }).inc();
    }
}

/// The ids a telemetry line names.
#[derive(Debug, Clone, Copy)]
pub struct Ids<'a> {
    pub tenant: &'a str,
    pub contact: &'a str,
    pub event_id: Uuid,
}

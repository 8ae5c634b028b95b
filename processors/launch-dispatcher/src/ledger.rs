//! The effect ledger: one entry per launch id in the `launches` store,
//! written in the same transaction as every step it records. Its phase says
//! what the world may look like: `Dispatching` means a create request may be
//! on its way (so after a crash it is looked up, never re-sent blindly);
//! `Done` is final.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use callstream_domain::calling_rules::{TenantRules, Violation};
use callstream_domain::Availability;
use callstream_kit::calling_rules::LeadRules;
use callstream_schemas::LaunchCommand;

/// The store the ledger lives in.
pub const LAUNCHES_STORE: &str = "launches";
/// Every store the dispatcher declares (`Processor::stores`).
pub const STORES: &[&str] = &[LAUNCHES_STORE, crate::numbers::NUMBERS_STORE];

/// What the dispatcher keeps of a launch command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    pub launch_id: Uuid,
    /// The command's event id: the causation of everything emitted for it.
    pub command_id: Uuid,
    pub correlation_id: Option<Uuid>,
    pub traceparent: Option<String>,
    pub tenant_id: String,
    pub job_id: Uuid,
    pub contact_id: String,
    pub campaign_id: String,
    pub to: String,
    pub from: Option<String>,
    /// The provider adapter the command asked for (`None`: the default).
    pub provider: Option<String>,
    /// Do not dial after this (ms since the epoch): the calling window closes.
    pub expires_at_ms: Option<i64>,
    /// Do not create after this (ms since the epoch): the launch's slot ends.
    #[serde(default)]
    pub slot_ends_at_ms: Option<i64>,
    /// The lead's zone(s), comma-separated, as the job was planned in.
    #[serde(default)]
    pub time_zone: Option<String>,
    /// The US states whose calling rules apply to the lead.
    #[serde(default)]
    pub jurisdictions: Vec<String>,
    /// When calls were placed to the lead on the same subject (ms since the epoch).
    #[serde(default)]
    pub placed_calls_ms: Vec<i64>,
}

impl Launch {
    pub fn from_command(command: &LaunchCommand, traceparent: Option<String>) -> Self {
        Self {
            launch_id: command.launch_id,
            command_id: command.event_id,
            correlation_id: command.correlation_id,
            traceparent,
            tenant_id: command.tenant_id.clone(),
            job_id: command.job_id,
            contact_id: command.contact_id.clone(),
            campaign_id: command.campaign_id.clone(),
            to: command.to_number.clone(),
            from: command.from_number.clone(),
            provider: command.provider.clone(),
            expires_at_ms: command.expires_at.map(|t| t.timestamp_millis()),
            slot_ends_at_ms: command.slot_ends_at.map(|t| t.timestamp_millis()),
            time_zone: command.time_zone.clone(),
            jurisdictions: command.jurisdictions.clone(),
            placed_calls_ms: command
                .placed_calls
                .iter()
                .map(|t| t.timestamp_millis())
                .collect(),
        }
    }

    /// The first state calling rule a create at any of `at_ms` would break: the lead's
    /// states' hours and holidays in its zone(s), and their frequency caps over the calls
    /// placed (`placed_ms`: see [`crate::numbers::NumberCalls::placed_with`]), with the
    /// tenant's own rules and overrides (built once for all the instants); with it, the
    /// earliest instant the rules allow a call again (within [`NOT_BEFORE_HORIZON_MS`]).
    pub fn calling_rule_broken(
        &self,
        at_ms: &[i64],
        tenant: &TenantRules,
        placed_ms: &[i64],
    ) -> Option<(Violation, Option<i64>)> {
        let zones: Vec<chrono_tz::Tz> = self
            .time_zone
            .as_deref()?
            .split(',')
            .filter_map(|z| callstream_domain::timezone::parse_zone(z).ok())
            .collect();
        let placed: Vec<_> = placed_ms
            .iter()
            .filter_map(|ms| chrono::DateTime::from_timestamp_millis(*ms))
            .collect();
        let rules = LeadRules::from_wire(&self.jurisdictions, &zones, &placed, tenant)?;
        let first = at_ms
            .iter()
            .filter_map(|ms| chrono::DateTime::from_timestamp_millis(*ms))
            .find_map(|at| Some((at, rules.violation(at)?)))?;
        let (at, violation) = first;
        let horizon = at + chrono::TimeDelta::milliseconds(NOT_BEFORE_HORIZON_MS);
        let next = rules
            .next_allowed(at, horizon)
            .map(|t| t.timestamp_millis());
        Some((violation, next))
    }

    /// The store key (and effect key) of the launch.
    pub fn key(&self) -> Vec<u8> {
        key_of(&self.launch_id)
    }
}

/// How far ahead a held launch's `not_before` is looked for: past it, the contact plans
/// from the hold and the scheduler searches on.
pub const NOT_BEFORE_HORIZON_MS: i64 = 8 * 86_400_000;

pub fn key_of(launch_id: &Uuid) -> Vec<u8> {
    launch_id.as_hyphenated().to_string().into_bytes()
}

/// Where a launch stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// Create request `seq` handed to the effect runner; it may be on its
    /// way. The step timer reconciles if no answer comes.
    Dispatching { seq: u32 },
    /// A transient failure: the step timer sends the next attempt.
    RetryWait,
    /// Lookup `seq` handed to the effect runner; the step timer asks again
    /// if no answer comes.
    Reconciling { seq: u32 },
    /// Waiting before the next lookup (after an ambiguous answer, to let the
    /// provider settle, or after a failed lookup).
    LookupWait,
    /// Final. The step timer, if set, forgets the entry after the retention.
    Done { outcome: Outcome },
}

/// How a launch ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Accepted {
        call_id: String,
        reconciled: bool,
    },
    Failed {
        failure: Failure,
    },
    Shadow,
    /// Not placed, and never sent: a pause covered it at the last hop, a calling
    /// rule refused it, its calling window closed or its slot passed. No
    /// exception: the workflow plans it again (after the pause lifts; no earlier
    /// than `not_before_ms` for a rule).
    Held {
        reason: String,
        detail: String,
        #[serde(default)]
        not_before_ms: Option<i64>,
    },
}

/// Why a launch failed, and what kind of case it opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Machine-readable, e.g. `http_400`, `expired`, `http_503`.
    pub reason: String,
    pub detail: Option<String>,
    pub kind: FailureKind,
}

/// Whose problem a failure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The launch cannot be placed as asked (refused, expired, bad number):
    /// no call was made.
    Launch,
    /// The provider kept failing: no call was made.
    Provider,
    /// Reconciliation could not tell whether a call was made: a person
    /// must look.
    Unresolved,
}

/// One launch's ledger entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub launch: Launch,
    pub phase: Phase,
    /// Create requests that were (or may have been) sent.
    pub attempts: u32,
    /// Lookups in the current reconciliation.
    pub lookups: u32,
    /// Numbers every effect request; replies name theirs.
    pub seq: u32,
    /// When the first create request was handed over (ms since the epoch).
    pub requested_at_ms: Option<i64>,
    /// Whether an `ambiguous` call-launch went out already (at most one).
    pub ambiguous_emitted: bool,
    /// The last transient failure, for the reason of an eventual `failed`.
    pub last_error: Option<(String, Option<String>)>,
    /// A restriction of the lead that came after the command (do-not-call,
    /// blocked, ...): no further create is made; the launch is held with it.
    #[serde(default)]
    pub stopped: Option<String>,
}

impl Entry {
    pub fn new(launch: Launch) -> Self {
        Self {
            launch,
            phase: Phase::RetryWait,
            attempts: 0,
            lookups: 0,
            seq: 0,
            requested_at_ms: None,
            ambiguous_emitted: false,
            last_error: None,
            stopped: None,
        }
    }

    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done { .. })
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

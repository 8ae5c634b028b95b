//! What the policy decides: the steps the contact processor carries out,
//! each with a typed reason so every view can say why.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::crm::CrmCommand;

/// Why a call is planned. The policy plans only the retry, callback and
/// advance origins; the others name the remaining ways onto the grid so
/// one type serves every schedule request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOrigin {
    CampaignEntry,
    VoicemailRetry,
    NoAnswerRetry,
    BusyRetry,
    /// The lead named a time (or tried to: see the reason).
    Callback,
    /// The lead asked to be called later, without a time.
    CallMeLater,
    StaleLeadAdvance,
    ProviderFailureRetry,
    OperatorRetry,
    /// A replacement for a job that fell outside its window.
    WindowMove,
}

impl CallOrigin {
    /// Whether the lead asked for this call (an urgent hold does not cancel it).
    pub fn lead_requested(self) -> bool {
        matches!(self, CallOrigin::Callback | CallOrigin::CallMeLater)
    }
}

/// A stable label for each kind of reason (for counters and filters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    Answered,
    VoicemailRetry,
    NoAnswerRetry,
    BusyRetry,
    CallbackRequested,
    /// The lead named a time that could not be read: the two-hour rule.
    CallbackTimeUnresolved,
    CallMeLater,
    AttemptsExhausted,
    DoNotCallRequested,
    PersonRequested,
    /// An urgent request is still open: further calls are held.
    UrgentRequestOpen,
    ProviderFailure,
    ProviderFailuresExhausted,
}

/// A reason: its code and a sentence for people (no phone numbers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    pub code: ReasonCode,
    pub detail: String,
}

impl Reason {
    pub fn new(code: ReasonCode, detail: impl Into<String>) -> Self {
        Reason {
            code,
            detail: detail.into(),
        }
    }
}

/// A call to put on the grid (sent as a schedule request).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedCall {
    pub origin: CallOrigin,
    /// The campaign the call belongs to (the next one after an advance).
    pub campaign_id: String,
    /// The call may not start before this instant.
    pub earliest: DateTime<Utc>,
    /// The instant the lead asked for, kept on the job (callbacks only).
    pub requested_at: Option<DateTime<Utc>>,
    pub reason: Reason,
}

/// The kinds of exception the policy opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExceptionKind {
    /// The lead asked for a person: a sales rep must act, urgently.
    PersonRequested,
    /// The platform failed to place the call more often than the policy allows.
    ProviderFailuresExhausted,
}

/// One step for the contact processor to carry out, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    PlanCall(PlannedCall),
    /// Set the contact's do-not-call flag.
    MarkDoNotCall {
        reason: Reason,
    },
    /// Cancel every job planned for the contact.
    CancelFutureJobs {
        reason: Reason,
    },
    /// Open an exception; `urgent` ones go to a sales rep at once.
    OpenException {
        kind: ExceptionKind,
        urgent: bool,
        reason: Reason,
    },
    /// Hold further calls until an outcome is recorded for the exception
    /// (a callback the lead asked for in the same call still goes).
    HoldCalls {
        reason: Reason,
    },
    /// The lead leaves `from` for `to` (attempts in `to` start at zero).
    AdvanceCampaign {
        from: String,
        to: String,
        reason: Reason,
    },
    /// The contact's workflow is done.
    Finish {
        reason: Reason,
    },
    /// A command for the CRM dispatcher.
    Crm(CrmCommand),
}

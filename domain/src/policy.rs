//! The next-step policy: from one call's final outcome and its analysis to
//! the list of [`Decision`]s the contact processor carries out.
//!
//! Guarantees: [`decide`] is pure and deterministic (time and jitter are
//! arguments); it never plans a call earlier than the outcome's instant;
//! retries are bounded by the campaign's `max_attempts`, provider-failure
//! retries by `provider_failure.max_retries`; a do-not-call request wins
//! over every plan; and every final outcome yields its CRM commands, each
//! with a deterministic idempotency key, so replaying an outcome replays
//! the same decisions.
//!
//! Precedence, first match wins for the planning part:
//! 1. the lead asked not to be called → mark, cancel future jobs, finish;
//! 2. the contact may not be called (flags) or the call was canceled →
//!    nothing is planned;
//! 3. the platform failed to place the call → jittered retry, or an
//!    exception and a hold once the retries are used up;
//! 4. otherwise: a request for a person opens an urgent exception and holds
//!    calls; a callback (or "call me later") is planned even then; without
//!    one, a held contact waits, an answered call finishes, and voicemail,
//!    no-answer and busy retry after the campaign's delays until the
//!    attempts run out, then advance to the next campaign or finish.

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::normaliser::Outcome;
use crate::workflow::WorkflowState;

mod config;
mod crm;
mod decision;
mod plan;

pub use config::{CampaignPolicy, FollowUpTask, PolicyConfigError, ProviderFailureBackoff};
pub use crm::{idempotency_key, CrmAction, CrmCommand, CRM_COMMAND_NAMESPACE};
pub use decision::{CallOrigin, Decision, ExceptionKind, PlannedCall, Reason, ReasonCode};

/// A callback the lead asked for, with its time already resolved in the
/// lead's zone by the callback-time reader (`None` when it could not be).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CallbackRequest {
    pub requested_at: Option<DateTime<Utc>>,
    /// What the lead said, kept for the reason ("tomorrow at 10").
    pub phrase: String,
}

/// What the call's analysis found.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CallAnalysis {
    pub callback: Option<CallbackRequest>,
    /// "Call me later" with no time named.
    pub call_me_later: bool,
    pub do_not_call: bool,
    pub wants_person: bool,
    pub interested: Option<bool>,
    pub summary: Option<String>,
}

/// The flags of the contact that bear on planning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ContactFlags {
    pub do_not_call: bool,
    pub blocked: bool,
    pub enrolled: bool,
    pub spam: bool,
    /// An urgent request (a person asked for) is still unresolved.
    pub urgent_open: bool,
}

impl ContactFlags {
    /// Whether the contact may not be called at all.
    pub fn barred(&self) -> bool {
        self.do_not_call || self.blocked || self.enrolled || self.spam
    }
}

/// The contact's counters in the call's campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counters {
    /// Calls that reached the line: answered, voicemail, no-answer, busy.
    pub attempts_in_campaign: u32,
    /// Provider failures since the last call that reached the line.
    pub consecutive_provider_failures: u32,
}

/// One call's final outcome and everything the policy needs about it.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInput<'a> {
    pub tenant_id: &'a str,
    pub contact_id: &'a str,
    pub campaign_id: &'a str,
    pub call_id: &'a str,
    pub outcome: Outcome,
    pub analysis: &'a CallAnalysis,
    pub flags: ContactFlags,
    /// The counters before this call's outcome.
    pub counters: Counters,
    /// When the outcome happened (event time); plans count from here.
    pub now: DateTime<Utc>,
    /// A uniform value in `[0, 1)` for the backoff jitter, from the caller
    /// (e.g. derived from the event id, so a replay repeats it).
    pub jitter: f64,
}

/// The policy's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextSteps {
    /// The steps in the order to carry them out; CRM commands come last.
    pub decisions: Vec<Decision>,
    /// The counters to store for the call's campaign.
    pub counters: Counters,
    /// The workflow state the contact moves to, or `None` to stay.
    pub next_state: Option<WorkflowState>,
}

/// Why the policy could not decide. Not retriable with the same input.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyError {
    /// Only a final outcome ends a call; in-flight statuses go nowhere near here.
    #[error("outcome {0} is not final")]
    NotFinal(Outcome),
    #[error("campaign policy is invalid: {0}")]
    Config(#[from] PolicyConfigError),
    #[error("a planned time falls outside the representable range")]
    TimeOutOfRange,
}

/// Decides the next steps after a call's final outcome.
pub fn decide(policy: &CampaignPolicy, input: &PolicyInput<'_>) -> Result<NextSteps, PolicyError> {
    if !input.outcome.is_final() {
        return Err(PolicyError::NotFinal(input.outcome));
    }
    policy.validate(input.campaign_id)?;
    let mut steps = plan::plan(policy, input)?;
    steps.decisions.extend(crm_commands(policy, input)?);
    Ok(steps)
}

/// Whether the outcome means the call reached the lead's line.
fn counts_as_attempt(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Answered | Outcome::Voicemail | Outcome::NoAnswer | Outcome::Busy
    )
}

fn after_minutes(now: DateTime<Utc>, minutes: u32) -> Result<DateTime<Utc>, PolicyError> {
    now.checked_add_signed(TimeDelta::minutes(i64::from(minutes)))
        .ok_or(PolicyError::TimeOutOfRange)
}

/// The CRM commands of every final outcome: log the call, note the summary
/// (if any), update the last outcome, and a follow-up task where the
/// policy says so.
fn crm_commands(
    policy: &CampaignPolicy,
    input: &PolicyInput<'_>,
) -> Result<Vec<Decision>, PolicyError> {
    let analysis = input.analysis;
    let mut actions = vec![CrmAction::LogCall {
        campaign_id: input.campaign_id.to_owned(),
        outcome: input.outcome,
        occurred_at: input.now,
    }];
    if let Some(summary) = analysis.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        actions.push(CrmAction::AddNote {
            summary: summary.to_owned(),
        });
    }
    actions.push(CrmAction::UpdateLastOutcome {
        outcome: input.outcome,
    });
    let answered = input.outcome == Outcome::Answered;
    let follow_up = match policy.follow_up_task {
        FollowUpTask::Never => None,
        FollowUpTask::WhenInterested if answered && analysis.interested == Some(true) => {
            Some("the lead is interested")
        }
        FollowUpTask::WhenInterested => None,
        FollowUpTask::WhenAnswered if answered => Some("the lead answered"),
        FollowUpTask::WhenAnswered => None,
    };
    if let Some(why) = follow_up {
        actions.push(CrmAction::CreateFollowUpTask {
            due_at: after_minutes(input.now, policy.follow_up_due_minutes)?,
            reason: format!("follow up: {why}"),
        });
    }
    Ok(actions
        .into_iter()
        .map(|action| {
            Decision::Crm(CrmCommand::new(
                input.tenant_id,
                input.contact_id,
                input.call_id,
                action,
            ))
        })
        .collect())
}

#[cfg(test)]
mod tests;

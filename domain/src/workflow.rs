//! The contact workflow as an explicit state machine, and duplicate
//! detection for the events that drive it.
//!
//! A contact moves through *steps*: each step is one planned call, from
//! `scheduled` through `dispatching` and `awaiting_result` to its result,
//! which either ends the workflow (`completed`, `failed`), holds it for a
//! person (`needs_review`) or begins the next step (`scheduled` again).
//! Steps are numbered; every event names the step it belongs to (the
//! processor records the step on each job and call).
//!
//! Guarantees: a transition is applied only if it is in [`TRANSITIONS`]
//! and belongs to the current step (or, for a [`StepKind::NewStep`] edge,
//! begins the next one). Anything else — an event of an earlier step, a
//! move backwards within a step, a move out of a finished step — is
//! returned as a typed [`TransitionRejected`] and leaves the state exactly
//! as it was; the caller counts and logs it.

use serde::{Deserialize, Serialize};
use thiserror::Error;

mod dedupe;

pub use dedupe::{DedupeVerdict, Deduplicator, DEFAULT_DEDUPE_CAPACITY};

/// Where a contact is in its workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowState {
    /// Intake accepted; nothing planned yet.
    Received,
    /// Held for a person (urgent request, exception); no calls go out.
    NeedsReview,
    /// A call is planned on the grid.
    Scheduled,
    /// The launch passed its guards and was sent to the dispatcher.
    Dispatching,
    /// The platform accepted the launch; waiting for the call's result.
    AwaitingResult,
    /// The workflow ended: the lead was reached, finished or opted out.
    Completed,
    /// The workflow ended without success (e.g. the number cannot be called).
    Failed,
}

impl WorkflowState {
    pub const ALL: [WorkflowState; 7] = [
        WorkflowState::Received,
        WorkflowState::NeedsReview,
        WorkflowState::Scheduled,
        WorkflowState::Dispatching,
        WorkflowState::AwaitingResult,
        WorkflowState::Completed,
        WorkflowState::Failed,
    ];

    /// Whether the workflow has ended (only a new step can leave it).
    pub fn is_terminal(self) -> bool {
        matches!(self, WorkflowState::Completed | WorkflowState::Failed)
    }

    /// Progress within one step; a move to a lower rank in the same step is
    /// "backwards". Review sits between intake and scheduling because a
    /// reviewed contact goes on to be scheduled (as a new step).
    fn rank(self) -> u8 {
        match self {
            WorkflowState::Received => 0,
            WorkflowState::NeedsReview => 1,
            WorkflowState::Scheduled => 2,
            WorkflowState::Dispatching => 3,
            WorkflowState::AwaitingResult => 4,
            WorkflowState::Completed | WorkflowState::Failed => 5,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowState::Received => "received",
            WorkflowState::NeedsReview => "needs_review",
            WorkflowState::Scheduled => "scheduled",
            WorkflowState::Dispatching => "dispatching",
            WorkflowState::AwaitingResult => "awaiting_result",
            WorkflowState::Completed => "completed",
            WorkflowState::Failed => "failed",
        }
    }
}

impl std::fmt::Display for WorkflowState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether an edge stays within the current step or begins the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    SameStep,
    NewStep,
}

use StepKind::{NewStep, SameStep};
use WorkflowState::{
    AwaitingResult, Completed, Dispatching, Failed as FailedState, NeedsReview, Received, Scheduled,
};

/// Every allowed transition, and only those. `(from, to, kind)`.
pub const TRANSITIONS: &[(WorkflowState, WorkflowState, StepKind)] = &[
    // Intake.
    (Received, Scheduled, SameStep),
    (Received, NeedsReview, SameStep),
    (Received, Completed, SameStep),
    (Received, FailedState, SameStep),
    // Planned: launched, moved (a replacement job in the same step), held
    // for review, or ended by a cancel (do-not-call, blocked, enrolled...).
    (Scheduled, Dispatching, SameStep),
    (Scheduled, Scheduled, SameStep),
    (Scheduled, NeedsReview, SameStep),
    (Scheduled, Completed, SameStep),
    (Scheduled, FailedState, SameStep),
    // Launching: accepted, or rejected by the platform.
    (Dispatching, AwaitingResult, SameStep),
    (Dispatching, NeedsReview, SameStep),
    (Dispatching, Completed, SameStep),
    (Dispatching, FailedState, SameStep),
    (Dispatching, Scheduled, NewStep),
    // In flight: progress reports keep it here; the result ends the step.
    (AwaitingResult, AwaitingResult, SameStep),
    (AwaitingResult, NeedsReview, SameStep),
    (AwaitingResult, Completed, SameStep),
    (AwaitingResult, FailedState, SameStep),
    (AwaitingResult, Scheduled, NewStep),
    // Review: a person finishes it, or releases it into a new call.
    (NeedsReview, Completed, SameStep),
    (NeedsReview, FailedState, SameStep),
    (NeedsReview, Scheduled, NewStep),
    // An ended workflow only reopens as a new step (operator retry,
    // re-enrolment); its own step stays finished.
    (Completed, Scheduled, NewStep),
    (FailedState, Scheduled, NewStep),
];

/// The table entry for `from → to`, if the edge exists.
pub fn edge(from: WorkflowState, to: WorkflowState) -> Option<StepKind> {
    TRANSITIONS
        .iter()
        .find(|(f, t, _)| *f == from && *t == to)
        .map(|(_, _, kind)| *kind)
}

/// Why a transition was not applied. None of these is retriable: the
/// event is late, duplicated or wrong, and the state did not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum TransitionRejected {
    #[error("event of step {event_step} arrived in step {current_step}: that step is finished")]
    StaleStep { event_step: u64, current_step: u64 },
    #[error("event names step {event_step}, but the current step is {current_step}")]
    UnknownStep { event_step: u64, current_step: u64 },
    #[error("{from} → {to} would move step backwards")]
    Backwards {
        from: WorkflowState,
        to: WorkflowState,
    },
    #[error("{from} → {to} is not an allowed transition")]
    NotAllowed {
        from: WorkflowState,
        to: WorkflowState,
    },
}

impl TransitionRejected {
    /// A stable label for the rejection counter.
    pub fn reason_code(&self) -> &'static str {
        match self {
            TransitionRejected::StaleStep { .. } => "stale_step",
            TransitionRejected::UnknownStep { .. } => "unknown_step",
            TransitionRejected::Backwards { .. } => "backwards",
            TransitionRejected::NotAllowed { .. } => "not_allowed",
        }
    }
}

/// A transition that was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub from: WorkflowState,
    pub to: WorkflowState,
    /// The step the contact is in after the transition.
    pub step: u64,
    /// Whether this transition began that step.
    pub new_step: bool,
}

/// One contact's workflow position: its state and its current step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workflow {
    state: WorkflowState,
    step: u64,
}

impl Default for Workflow {
    fn default() -> Self {
        Self::new()
    }
}

impl Workflow {
    /// A contact just received: step 0.
    pub fn new() -> Self {
        Workflow {
            state: WorkflowState::Received,
            step: 0,
        }
    }

    /// Restores a stored position.
    pub fn at(state: WorkflowState, step: u64) -> Self {
        Workflow { state, step }
    }

    pub fn state(&self) -> WorkflowState {
        self.state
    }

    pub fn step(&self) -> u64 {
        self.step
    }

    /// Checks a transition without applying it.
    ///
    /// `event_step` is the step the triggering event belongs to; it must be
    /// the current step. A [`StepKind::NewStep`] edge is triggered by the
    /// event that ends the current step (its result, or an operator's
    /// command on it) and moves the contact into the next step.
    pub fn check(&self, event_step: u64, to: WorkflowState) -> Result<Applied, TransitionRejected> {
        let (from, current_step) = (self.state, self.step);
        if event_step < current_step {
            return Err(TransitionRejected::StaleStep {
                event_step,
                current_step,
            });
        }
        if event_step > current_step {
            return Err(TransitionRejected::UnknownStep {
                event_step,
                current_step,
            });
        }
        match edge(from, to) {
            Some(SameStep) => Ok(Applied {
                from,
                to,
                step: current_step,
                new_step: false,
            }),
            Some(NewStep) => Ok(Applied {
                from,
                to,
                step: current_step.saturating_add(1),
                new_step: true,
            }),
            None if from.is_terminal() || to.rank() < from.rank() => {
                Err(TransitionRejected::Backwards { from, to })
            }
            None => Err(TransitionRejected::NotAllowed { from, to }),
        }
    }

    /// Applies a transition if [`Workflow::check`] allows it; otherwise
    /// leaves the workflow untouched and returns why.
    pub fn apply(
        &mut self,
        event_step: u64,
        to: WorkflowState,
    ) -> Result<Applied, TransitionRejected> {
        let applied = self.check(event_step, to)?;
        self.state = applied.to;
        self.step = applied.step;
        Ok(applied)
    }
}

#[cfg(test)]
mod tests;

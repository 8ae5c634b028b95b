//! What to do next after a request's outcome, or when its result never
//! came. Pure: the state machine applies the decision.
//!
//! The rules, which keep "never twice" and "never stuck":
//! - A create whose outcome is unknown (no answer, a `5xx`, a lost result)
//!   is never sent again blindly: the next step is a search for its
//!   operation id, after the settle time (the CRM's search index lags).
//!   A search that finds nothing inside the settle window is not trusted:
//!   the command searches again, spaced, and is created again only once
//!   the window (longer than the index's longest lag) is over.
//! - A contact update may be sent again: it writes the same values, and
//!   the contact's later commands wait behind it, so order holds.
//! - `429` and transient failures retry with doubling, jittered delays,
//!   never sooner than `Retry-After`; each failure counts against the
//!   bound, and at the bound the command fails for good.
//! - Any other `4xx` is the CRM saying no: failed at once.
//! - A request that expired before it was sent is asked for again; it
//!   sent nothing, so it counts for nothing.

use std::time::Duration;

use crate::config::DispatchPolicy;
use crate::state::Resume;
use crate::wire::Outcome;

/// Which request the outcome is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Create,
    Update,
    Search,
}

/// Why a command failed for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailReason {
    /// The CRM refused it (a `4xx` other than `408`/`429`).
    Rejected,
    /// Transient failures reached the bound.
    RetriesExhausted,
    /// This version does not know how to carry the command out.
    Unsupported,
}

impl FailReason {
    /// The exception's reason code.
    pub fn code(self) -> &'static str {
        match self {
            FailReason::Rejected => "crm_rejected",
            FailReason::RetriesExhausted => "crm_retries_exhausted",
            FailReason::Unsupported => "crm_unsupported_action",
        }
    }
}

/// The next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The write landed.
    Written { object_id: String },
    /// A search found the object: it was applied before.
    Found { object_id: String },
    /// Write now (the switches are read first).
    Write,
    /// Search now.
    Search,
    /// Wait, then resume.
    Park { resume: Resume, delay: Duration },
    /// Fail for good.
    Fail { reason: FailReason },
}

/// A decision and what it says about the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub next: Next,
    /// The outcome was a failure (counts against the bound).
    pub failed: bool,
    /// A create may have been applied (set only, never cleared here, except
    /// by a search that found nothing).
    pub maybe_applied: Option<bool>,
}

fn retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

/// The next step after `outcome` of `sent`, for a command that had failed
/// `failures` times before; `seed` jitters the delay; `settle_left` is the
/// time left in the settle window of a create that may have landed.
pub fn decide(
    sent: Sent,
    outcome: &Outcome,
    failures: u32,
    seed: u64,
    policy: &DispatchPolicy,
    settle_left: Option<Duration>,
) -> Decision {
    let ok = |next| Decision {
        next,
        failed: false,
        maybe_applied: None,
    };
    match outcome {
        Outcome::Written { object_id, .. } => {
            return ok(Next::Written {
                object_id: object_id.clone(),
            })
        }
        Outcome::Found { object_id } => {
            return ok(Next::Found {
                object_id: object_id.clone(),
            })
        }
        Outcome::NotFound => {
            return match settle_left.filter(|left| !left.is_zero()) {
                // The index may not show it yet: search again, never create.
                Some(left) => ok(Next::Park {
                    resume: Resume::Search,
                    delay: policy.search_interval.min(left),
                }),
                None => Decision {
                    maybe_applied: Some(false),
                    ..ok(Next::Write)
                },
            };
        }
        Outcome::Expired => return ok(own(sent)),
        Outcome::Refused { status, .. } if !retryable_status(*status) => {
            return ok(Next::Fail {
                reason: FailReason::Rejected,
            })
        }
        _ => {}
    }
    // A failure from here on.
    let failures = failures.saturating_add(1);
    let retry_after = match outcome {
        Outcome::Refused {
            retry_after_ms: Some(ms),
            ..
        } => Some(Duration::from_millis(*ms)),
        _ => None,
    };
    // Whether the request may have been applied (only creates care).
    let ambiguous = match outcome {
        Outcome::Refused { status, .. } => *status != 429,
        Outcome::Unanswered { .. } => true,
        _ => false,
    };
    let backoff = policy.retry.delay(failures, seed, retry_after);
    let (resume, delay, maybe_applied) = match sent {
        Sent::Create if ambiguous => (Resume::Search, backoff.max(policy.settle), Some(true)),
        Sent::Create | Sent::Update => (Resume::Write, backoff, None),
        Sent::Search => (Resume::Search, backoff, None),
    };
    let next = if policy.retry.may_retry(failures) {
        Next::Park { resume, delay }
    } else {
        Next::Fail {
            reason: FailReason::RetriesExhausted,
        }
    };
    Decision {
        next,
        failed: true,
        maybe_applied,
    }
}

/// The next step when the result of `sent` never came (the process that
/// sent it crashed, or the result was lost with an aborted transaction).
/// The reconciliation timer fires only after the request must be over and
/// searchable, so a search can go at once.
pub fn decide_lost(sent: Sent, failures: u32, policy: &DispatchPolicy) -> Decision {
    let failures = failures.saturating_add(1);
    let (next, maybe_applied) = match sent {
        Sent::Create => (Next::Search, Some(true)),
        Sent::Update => (Next::Write, None),
        Sent::Search => (Next::Search, None),
    };
    let next = if policy.retry.may_retry(failures) {
        next
    } else {
        Next::Fail {
            reason: FailReason::RetriesExhausted,
        }
    };
    Decision {
        next,
        failed: true,
        maybe_applied,
    }
}

/// The same request again.
fn own(sent: Sent) -> Next {
    match sent {
        Sent::Create | Sent::Update => Next::Write,
        Sent::Search => Next::Search,
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;

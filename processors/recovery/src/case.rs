//! The recovery cases of one contact and the pure decision of what a lookup
//! result means for a case. No clock is read here; the processor passes it.
//!
//! A case is one launch reported missing. It is looking the call up
//! (`Fetching`), waiting to look again (`Waiting`: the call is still in
//! progress, or the last lookup failed), or `Failed` (an exception is open;
//! an operator or a late completion closes it). Bounded: at most
//! `max_polls` looks at a call in progress and `max_attempts` failed
//! lookups, with doubling, jittered delays, then an exception.

use callstream_domain::normaliser::{normalise, provider_status};
use callstream_schemas::{Actor, CallOutcome};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::config::RecoveryConfig;
use crate::wire::{CallRecord, FetchResult};

/// Where a case stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// Lookup number `fetch` is out; its result is awaited.
    Fetching { fetch: u32 },
    /// Looking again at `at_ms`.
    Waiting { at_ms: i64 },
    /// Gave up; the recovery-failed exception is open.
    Failed,
}

/// One launch reported missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    pub launch_id: Uuid,
    pub missing_event_id: Uuid,
    pub tenant_id: String,
    pub contact_id: String,
    pub campaign_id: Option<String>,
    pub job_id: Option<Uuid>,
    pub provider: String,
    pub provider_call_id: String,
    pub correlation_id: Option<Uuid>,
    /// Who asked for the recovery under way: the system, or the operator
    /// whose `recover` command restarted it.
    pub actor: Actor,
    pub command_id: Option<Uuid>,
    pub phase: Phase,
    /// Lookups asked for so far (numbers them).
    pub fetches: u32,
    /// Looks that found the call still in progress.
    pub polls: u32,
    /// Lookups that failed in a row.
    pub failures: u32,
    /// Whether a recovery-failed exception was opened (and must be closed).
    pub failed_exception: bool,
}

/// Everything recovery keeps for one contact.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ContactCases {
    pub cases: Vec<Case>,
    /// Launches whose case closed, with when: a repeat does nothing.
    pub closed: Vec<(Uuid, i64)>,
    /// Recent operator commands handled (a redelivered one does nothing).
    pub commands: Vec<Uuid>,
}

/// Commands remembered per contact.
const COMMAND_MEMORY: usize = 32;

impl ContactCases {
    pub fn is_empty(&self) -> bool {
        self.cases.is_empty() && self.closed.is_empty() && self.commands.is_empty()
    }

    pub fn find(&self, launch_id: &Uuid) -> Option<usize> {
        self.cases.iter().position(|c| c.launch_id == *launch_id)
    }

    pub fn is_closed(&self, launch_id: &Uuid) -> bool {
        self.closed.iter().any(|(l, _)| l == launch_id)
    }

    /// Removes case `index` and remembers it as closed.
    pub fn close(&mut self, index: usize, now_ms: i64) -> Case {
        let case = self.cases.remove(index);
        self.closed.push((case.launch_id, now_ms));
        case
    }

    /// Remembers a command; false when it was handled before.
    pub fn remember_command(&mut self, id: Uuid) -> bool {
        if self.commands.contains(&id) {
            return false;
        }
        if self.commands.len() >= COMMAND_MEMORY {
            self.commands.remove(0);
        }
        self.commands.push(id);
        true
    }

    /// Forgets closed cases older than the retention.
    pub fn expire(&mut self, now_ms: i64, retention_ms: i64) {
        self.closed
            .retain(|(_, at)| at.saturating_add(retention_ms) > now_ms);
    }

    /// When the earliest closed case is forgotten.
    pub fn next_expiry(&self, retention_ms: i64) -> Option<i64> {
        self.closed
            .iter()
            .map(|(_, at)| at.saturating_add(retention_ms))
            .min()
    }
}

/// What a lookup result means for its case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The call ended: replay it with this outcome.
    Recovered {
        record: CallRecord,
        outcome: CallOutcome,
    },
    /// The provider has no such call: advance the contact as no-answer.
    AdvanceNoAnswer,
    /// Still in progress: look again at `at_ms`.
    Poll { at_ms: i64 },
    /// The lookup failed: try again at `at_ms`.
    Retry { at_ms: i64 },
    /// Give up: open an exception.
    Fail { reason: String },
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The delay before retry `n` (1-based): doubling from the base up to the
/// maximum, with "equal jitter" (half fixed, half spread) drawn from a hash
/// of the launch and `n`, so a replay waits the same and a burst of
/// failures spreads out.
pub fn retry_delay_ms(launch_id: &Uuid, n: u32, config: &RecoveryConfig) -> i64 {
    let base = ms(config.retry_base).max(1);
    let max = ms(config.retry_max).max(base);
    let doubled = base.saturating_mul(1i64 << n.saturating_sub(1).min(30));
    let delay = doubled.min(max);
    let half = delay / 2;
    let draw = launch_id
        .as_u128()
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(u128::from(n).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    let spread = i64::try_from((draw >> 64) as u64 % (half.max(1) as u64 + 1)).unwrap_or(0);
    half + spread.min(delay - half)
}

/// Decides what `result` means for `case` (whose counters it updates).
pub fn decide(case: &mut Case, result: &FetchResult, now_ms: i64, config: &RecoveryConfig) -> Next {
    match result {
        FetchResult::Found { record } => {
            case.failures = 0;
            let outcome = provider_status(
                &case.provider,
                &record.status,
                record.answered_by.as_deref(),
            )
            .map(|s| normalise(s).map(CallOutcome::from));
            match outcome {
                None => Next::Fail {
                    reason: format!("no status vocabulary for provider {}", case.provider),
                },
                Some(Err(e)) => Next::Fail {
                    reason: format!("the call record's status cannot be mapped: {e}"),
                },
                Some(Ok(outcome)) if outcome.is_final() => {
                    if case.provider == "twilio" && record.sequence_number.is_none() {
                        return retry(
                            case,
                            "the final callback's sequence number is unknown",
                            now_ms,
                            config,
                        );
                    }
                    Next::Recovered {
                        record: record.clone(),
                        outcome,
                    }
                }
                Some(Ok(_)) => {
                    case.polls += 1;
                    if case.polls > config.max_polls {
                        Next::Fail {
                            reason: format!(
                                "the call is still {} after {} looks",
                                record.status, case.polls
                            ),
                        }
                    } else {
                        Next::Poll {
                            at_ms: now_ms.saturating_add(ms(config.poll_delay)),
                        }
                    }
                }
            }
        }
        FetchResult::NotFound => Next::AdvanceNoAnswer,
        FetchResult::Failed {
            retriable: true,
            reason,
        } => retry(case, reason, now_ms, config),
        FetchResult::Failed {
            retriable: false,
            reason,
        } => Next::Fail {
            reason: format!("lookup refused: {reason}"),
        },
    }
}

fn retry(case: &mut Case, reason: &str, now_ms: i64, config: &RecoveryConfig) -> Next {
    case.failures += 1;
    if case.failures >= config.max_attempts {
        return Next::Fail {
            reason: format!("lookup failed {} times, last: {reason}", case.failures),
        };
    }
    Next::Retry {
        at_ms: now_ms.saturating_add(retry_delay_ms(&case.launch_id, case.failures, config)),
    }
}

#[cfg(test)]
#[path = "case_tests.rs"]
mod tests;

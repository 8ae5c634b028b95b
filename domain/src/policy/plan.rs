//! The planning half of the policy: which calls, holds, exceptions and
//! finishes follow an outcome (the precedence is in the parent module).

use chrono::{DateTime, TimeDelta, Utc};

use super::{
    after_minutes, counts_as_attempt, CallOrigin, CampaignPolicy, Counters, Decision,
    ExceptionKind, NextSteps, PlannedCall, PolicyError, PolicyInput, Reason, ReasonCode,
};
use crate::normaliser::Outcome;
use crate::workflow::WorkflowState;

/// Lead phrases are kept in reasons, clipped so a rambling one stays short.
const PHRASE_LIMIT: usize = 80;

pub(super) fn plan(
    policy: &CampaignPolicy,
    input: &PolicyInput<'_>,
) -> Result<NextSteps, PolicyError> {
    let counters = next_counters(input);
    let mut out = NextSteps {
        decisions: Vec::new(),
        counters,
        next_state: None,
    };
    let analysis = input.analysis;

    // 1. A do-not-call request wins over everything that would call.
    if analysis.do_not_call {
        let reason = || {
            Reason::new(
                ReasonCode::DoNotCallRequested,
                "the lead asked not to be called",
            )
        };
        out.decisions
            .push(Decision::MarkDoNotCall { reason: reason() });
        out.decisions
            .push(Decision::CancelFutureJobs { reason: reason() });
        if analysis.wants_person {
            // Not a call: a rep should still see that a person was asked for.
            out.decisions.push(person_requested_exception());
        }
        out.decisions.push(Decision::Finish { reason: reason() });
        out.next_state = Some(WorkflowState::Completed);
        return Ok(out);
    }

    // 2. Whoever barred the contact or canceled the call already decided
    //    what comes next; a late result only reaches the CRM.
    if input.flags.barred() || input.outcome == Outcome::Canceled {
        return Ok(out);
    }

    // 3. The platform could not place the call.
    if input.outcome == Outcome::Failed {
        let failures = counters.consecutive_provider_failures;
        let backoff = &policy.provider_failure;
        if failures <= backoff.max_retries {
            let seconds = backoff.delay_seconds(failures, input.jitter);
            let earliest = input
                .now
                .checked_add_signed(TimeDelta::seconds(seconds as i64))
                .ok_or(PolicyError::TimeOutOfRange)?;
            let detail = format!(
                "provider failure {failures} of at most {}; retry in {seconds} s",
                backoff.max_retries
            );
            out.decisions.push(plan_call(
                input,
                CallOrigin::ProviderFailureRetry,
                earliest,
                None,
                Reason::new(ReasonCode::ProviderFailure, detail),
            ));
            out.next_state = Some(WorkflowState::Scheduled);
        } else {
            let reason = || {
                Reason::new(
                    ReasonCode::ProviderFailuresExhausted,
                    format!("the platform failed to place the call {failures} times in a row"),
                )
            };
            out.decisions.push(Decision::OpenException {
                kind: ExceptionKind::ProviderFailuresExhausted,
                urgent: false,
                reason: reason(),
            });
            out.decisions.push(Decision::HoldCalls { reason: reason() });
            out.next_state = Some(WorkflowState::NeedsReview);
        }
        return Ok(out);
    }

    // 4. The call reached the line.
    debug_assert!(counts_as_attempt(input.outcome));
    let held = analysis.wants_person || input.flags.urgent_open;
    if analysis.wants_person {
        out.decisions.push(person_requested_exception());
        out.decisions.push(Decision::HoldCalls {
            reason: Reason::new(
                ReasonCode::PersonRequested,
                "calls held until the person request has an outcome",
            ),
        });
    }
    if let Some(call) = lead_requested_call(policy, input)? {
        out.decisions.push(call);
        out.next_state = Some(WorkflowState::Scheduled);
        return Ok(out);
    }
    if held {
        out.next_state = Some(WorkflowState::NeedsReview);
        return Ok(out);
    }
    let attempts = counters.attempts_in_campaign;
    let (origin, code, delays) = match input.outcome {
        Outcome::Voicemail => (
            CallOrigin::VoicemailRetry,
            ReasonCode::VoicemailRetry,
            &policy.voicemail_retry_minutes,
        ),
        Outcome::NoAnswer => (
            CallOrigin::NoAnswerRetry,
            ReasonCode::NoAnswerRetry,
            &policy.no_answer_retry_minutes,
        ),
        Outcome::Busy => (
            CallOrigin::BusyRetry,
            ReasonCode::BusyRetry,
            &policy.busy_retry_minutes,
        ),
        _ => {
            out.decisions.push(Decision::Finish {
                reason: Reason::new(ReasonCode::Answered, "the lead answered"),
            });
            out.next_state = Some(WorkflowState::Completed);
            return Ok(out);
        }
    };
    if attempts < policy.max_attempts {
        let minutes = CampaignPolicy::retry_delay(delays, attempts);
        let detail = format!(
            "{} on attempt {attempts} of {}; retry in {minutes} min",
            input.outcome, policy.max_attempts
        );
        let earliest = after_minutes(input.now, minutes)?;
        out.decisions.push(plan_call(
            input,
            origin,
            earliest,
            None,
            Reason::new(code, detail),
        ));
        out.next_state = Some(WorkflowState::Scheduled);
        return Ok(out);
    }
    let exhausted = format!(
        "{} on attempt {attempts} of {}: the lead is stale",
        input.outcome, policy.max_attempts
    );
    let reason = Reason::new(ReasonCode::AttemptsExhausted, exhausted);
    match policy.next_campaign.as_deref() {
        Some(next) => {
            out.decisions.push(Decision::AdvanceCampaign {
                from: input.campaign_id.to_owned(),
                to: next.to_owned(),
                reason: reason.clone(),
            });
            let earliest = after_minutes(input.now, policy.stale_lead_advance_minutes)?;
            let mut call = PlannedCall {
                origin: CallOrigin::StaleLeadAdvance,
                campaign_id: next.to_owned(),
                earliest,
                requested_at: None,
                reason,
            };
            call.reason.detail += &format!(
                "; first call of {next} in {} min",
                policy.stale_lead_advance_minutes
            );
            out.decisions.push(Decision::PlanCall(call));
            out.next_state = Some(WorkflowState::Scheduled);
        }
        None => {
            out.decisions.push(Decision::Finish { reason });
            out.next_state = Some(WorkflowState::Completed);
        }
    }
    Ok(out)
}

/// Counts this outcome: a call that reached the line is an attempt and
/// ends a run of provider failures; a failure extends the run.
fn next_counters(input: &PolicyInput<'_>) -> Counters {
    let before = input.counters;
    match input.outcome {
        o if counts_as_attempt(o) => Counters {
            attempts_in_campaign: before.attempts_in_campaign.saturating_add(1),
            consecutive_provider_failures: 0,
        },
        Outcome::Failed => Counters {
            consecutive_provider_failures: before.consecutive_provider_failures.saturating_add(1),
            ..before
        },
        _ => before,
    }
}

/// The callback the lead asked for in this call, if any: at the time they
/// named (never before the outcome), or two hours out when they named none
/// or one that could not be read.
fn lead_requested_call(
    policy: &CampaignPolicy,
    input: &PolicyInput<'_>,
) -> Result<Option<Decision>, PolicyError> {
    let analysis = input.analysis;
    let later = policy.call_me_later_minutes;
    let call = match &analysis.callback {
        Some(callback) => {
            let phrase: String = callback.phrase.chars().take(PHRASE_LIMIT).collect();
            match callback.requested_at {
                Some(at) => {
                    let earliest = at.max(input.now);
                    let detail = if at < input.now {
                        format!("the lead asked for a callback \"{phrase}\"; that time has passed, calling now")
                    } else {
                        format!("the lead asked for a callback \"{phrase}\"")
                    };
                    let reason = Reason::new(ReasonCode::CallbackRequested, detail);
                    plan_call(input, CallOrigin::Callback, earliest, Some(at), reason)
                }
                None => {
                    let detail = format!(
                        "could not read the callback time \"{phrase}\"; calling back in {later} min"
                    );
                    let reason = Reason::new(ReasonCode::CallbackTimeUnresolved, detail);
                    let earliest = after_minutes(input.now, later)?;
                    plan_call(input, CallOrigin::Callback, earliest, None, reason)
                }
            }
        }
        None if analysis.call_me_later => {
            let detail = format!("the lead asked to be called later; calling back in {later} min");
            let reason = Reason::new(ReasonCode::CallMeLater, detail);
            let earliest = after_minutes(input.now, later)?;
            plan_call(input, CallOrigin::CallMeLater, earliest, None, reason)
        }
        None => return Ok(None),
    };
    Ok(Some(call))
}

fn plan_call(
    input: &PolicyInput<'_>,
    origin: CallOrigin,
    earliest: DateTime<Utc>,
    requested_at: Option<DateTime<Utc>>,
    reason: Reason,
) -> Decision {
    Decision::PlanCall(PlannedCall {
        origin,
        campaign_id: input.campaign_id.to_owned(),
        earliest,
        requested_at,
        reason,
    })
}

fn person_requested_exception() -> Decision {
    Decision::OpenException {
        kind: ExceptionKind::PersonRequested,
        urgent: true,
        reason: Reason::new(
            ReasonCode::PersonRequested,
            "the lead asked to speak to a person",
        ),
    }
}

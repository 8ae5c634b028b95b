//! Which call events are completions. The gateway never normalises (its
//! events carry `outcome = unknown` and the raw status), so the detector
//! asks the one shared normaliser, exactly as the contact processor and
//! recovery do; a status it cannot map is not final and closes nothing.

use callstream_domain::normaliser::{normalise, Outcome, ProviderStatus};
use callstream_schemas::{CallEvent, CallOutcome};

/// The schema's outcome for one of the normaliser's.
pub fn to_call_outcome(outcome: Outcome) -> CallOutcome {
    match outcome {
        Outcome::Queued => CallOutcome::Queued,
        Outcome::Ringing => CallOutcome::Ringing,
        Outcome::InProgress => CallOutcome::InProgress,
        Outcome::Answered => CallOutcome::Answered,
        Outcome::Voicemail => CallOutcome::Voicemail,
        Outcome::NoAnswer => CallOutcome::NoAnswer,
        Outcome::Busy => CallOutcome::Busy,
        Outcome::Failed => CallOutcome::Failed,
        Outcome::Canceled => CallOutcome::Canceled,
    }
}

/// The provider status of a call, in the normaliser's terms; `None` for a
/// provider it does not know.
pub fn provider_status<'a>(
    provider: &str,
    status: &'a str,
    answered_by: Option<&'a str>,
) -> Option<ProviderStatus<'a>> {
    match provider {
        "twilio" => Some(ProviderStatus::Twilio {
            call_status: status,
            answered_by,
        }),
        "json" => Some(ProviderStatus::Json { outcome: status }),
        _ => None,
    }
}

/// The event's outcome: as set, or (when the producer left it `unknown`)
/// mapped from the raw status by the shared normaliser.
pub fn outcome_of(event: &CallEvent) -> CallOutcome {
    if event.outcome != CallOutcome::Unknown {
        return event.outcome;
    }
    provider_status(
        &event.provider,
        &event.provider_status,
        event.answered_by.as_deref(),
    )
    .and_then(|status| normalise(status).ok())
    .map_or(CallOutcome::Unknown, to_call_outcome)
}

/// The final outcome of a completion, `None` for a call still going (or a
/// status nobody can map).
pub fn final_outcome(event: &CallEvent) -> Option<CallOutcome> {
    Some(outcome_of(event)).filter(|o| o.is_final())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_normalised_outcome_keeps_its_finality() {
        for outcome in Outcome::ALL {
            assert_eq!(
                to_call_outcome(outcome).is_final(),
                outcome.is_final(),
                "{outcome}"
            );
            assert_eq!(to_call_outcome(outcome).as_str(), outcome.as_str());
        }
    }

    #[test]
    fn raw_statuses_are_normalised() {
        let cases = [
            (
                "twilio",
                "completed",
                Some("machine_start"),
                Some(CallOutcome::Voicemail),
            ),
            ("twilio", "no-answer", None, Some(CallOutcome::NoAnswer)),
            ("twilio", "ringing", None, None),
            ("twilio", "exploded", None, None),
            ("json", "answered", None, Some(CallOutcome::Answered)),
            ("carrier-pigeon", "completed", None, None),
        ];
        for (provider, status, by, expected) in cases {
            let status = provider_status(provider, status, by)
                .and_then(|s| normalise(s).ok())
                .map(to_call_outcome)
                .filter(|o| o.is_final());
            assert_eq!(status, expected, "{provider} {status:?}");
        }
    }
}

//! The outcome of a call event, decided in one place for every consumer
//! (contact processor, completion detector, recovery, projections).
//!
//! A call event carries the provider's raw status and an `outcome` its
//! producer may have filled in. The gateway never interprets statuses (its
//! events say `unknown`), recovery fills in what it mapped, and older
//! producers may differ. The rule, so that every consumer reads the same
//! outcome from the same event:
//!
//! 1. The raw status, mapped by [`normalise`](super::normalise), wins: it is
//!    the provider's own word, and mapping it here means a consumer never
//!    depends on which build of which producer wrote the event.
//! 2. Only when this build cannot map the raw status (a provider it has no
//!    vocabulary for, or a status newer than its vocabulary) does the
//!    producer's outcome count, if it stated one.
//! 3. Otherwise the normaliser's error is returned; callers treat it as not
//!    final (or dead-letter it), never as a default outcome.

use super::{clip, normalise, NormaliseError, Outcome, ProviderStatus};

/// A provider's raw status in the normaliser's terms; `None` for a provider
/// it has no vocabulary for. `provider` is the call event's adapter name.
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

/// The outcome of a call event from its fields: `provider`, the raw
/// `status` and `answered_by`, and the outcome its producer `stated`
/// (`None` when it said `unknown`). See the module doc for the precedence.
pub fn event_outcome(
    provider: &str,
    status: &str,
    answered_by: Option<&str>,
    stated: Option<Outcome>,
) -> Result<Outcome, NormaliseError> {
    let mapped = match provider_status(provider, status, answered_by) {
        Some(raw) => normalise(raw),
        None => Err(NormaliseError::UnknownProvider(clip(provider))),
    };
    match (mapped, stated) {
        (Ok(outcome), _) => Ok(outcome),
        (Err(_), Some(stated)) => Ok(stated),
        (Err(e), None) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// provider, raw status, answered_by, stated outcome, expected outcome.
    type Case = (
        &'static str,
        &'static str,
        Option<&'static str>,
        Option<Outcome>,
        Option<Outcome>,
    );

    #[test]
    fn the_raw_status_wins_and_the_stated_outcome_fills_gaps() {
        use Outcome::*;
        let cases: [Case; 9] = [
            // Gateway events: nothing stated, the raw status decides.
            (
                "twilio",
                "completed",
                Some("machine_start"),
                None,
                Some(Voicemail),
            ),
            ("twilio", "no-answer", None, None, Some(NoAnswer)),
            ("twilio", "ringing", None, None, Some(Ringing)),
            ("json", "answered", None, None, Some(Answered)),
            // A stated outcome that disagrees with the raw status loses.
            ("twilio", "busy", None, Some(Answered), Some(Busy)),
            // A status this build cannot map: the producer's word counts.
            ("twilio", "teleported", None, Some(Failed), Some(Failed)),
            (
                "carrier-pigeon",
                "landed",
                None,
                Some(Answered),
                Some(Answered),
            ),
            // Nothing to go on.
            ("twilio", "teleported", None, None, None),
            ("carrier-pigeon", "landed", None, None, None),
        ];
        for (provider, status, by, stated, expected) in cases {
            let got = event_outcome(provider, status, by, stated).ok();
            assert_eq!(got, expected, "{provider} {status} {by:?} {stated:?}");
        }
    }

    #[test]
    fn an_unknown_provider_is_a_typed_error() {
        assert_eq!(
            event_outcome("pigeon", "landed", None, None),
            Err(NormaliseError::UnknownProvider("pigeon".into()))
        );
    }
}

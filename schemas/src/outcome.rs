//! A call event's outcome by the one shared normaliser
//! ([`callstream_domain::normaliser::event_outcome`]), and the conversions
//! between the normaliser's [`Outcome`] and the schema's [`CallOutcome`].
//!
//! Every consumer of `call-events` asks [`CallEvent::normalised_outcome`] (or
//! [`CallEvent::mapped_outcome`]) instead of reading `outcome`: the gateway
//! leaves `outcome` as `unknown` and sends the raw provider status, so a
//! consumer reading the field alone would never see a live call complete.

use callstream_domain::normaliser::{event_outcome, NormaliseError, Outcome};

use crate::types::{CallEvent, CallOutcome};

impl From<Outcome> for CallOutcome {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Queued => Self::Queued,
            Outcome::Ringing => Self::Ringing,
            Outcome::InProgress => Self::InProgress,
            Outcome::Answered => Self::Answered,
            Outcome::Voicemail => Self::Voicemail,
            Outcome::NoAnswer => Self::NoAnswer,
            Outcome::Busy => Self::Busy,
            Outcome::Failed => Self::Failed,
            Outcome::Canceled => Self::Canceled,
        }
    }
}

impl CallOutcome {
    /// The normaliser's outcome; `None` for `unknown` (nothing was mapped).
    pub fn to_domain(self) -> Option<Outcome> {
        Some(match self {
            Self::Queued => Outcome::Queued,
            Self::Ringing => Outcome::Ringing,
            Self::InProgress => Outcome::InProgress,
            Self::Answered => Outcome::Answered,
            Self::Voicemail => Outcome::Voicemail,
            Self::NoAnswer => Outcome::NoAnswer,
            Self::Busy => Outcome::Busy,
            Self::Failed => Outcome::Failed,
            Self::Canceled => Outcome::Canceled,
            Self::Unknown => return None,
        })
    }
}

impl CallEvent {
    /// What the call's status means: the raw status by the shared normaliser,
    /// else the outcome the producer stated; an error when neither says.
    pub fn normalised_outcome(&self) -> Result<Outcome, NormaliseError> {
        event_outcome(
            &self.provider,
            &self.provider_status,
            self.answered_by.as_deref(),
            self.outcome.to_domain(),
        )
    }

    /// [`normalised_outcome`](Self::normalised_outcome) as the schema's
    /// outcome, `unknown` (not final) when nothing maps.
    pub fn mapped_outcome(&self) -> CallOutcome {
        self.normalised_outcome()
            .map_or(CallOutcome::Unknown, CallOutcome::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip_and_keep_finality() {
        for outcome in Outcome::ALL {
            let call = CallOutcome::from(outcome);
            assert_eq!(call.to_domain(), Some(outcome));
            assert_eq!(call.as_str(), outcome.as_str());
            assert_eq!(call.is_final(), outcome.is_final(), "{outcome}");
        }
        assert_eq!(CallOutcome::Unknown.to_domain(), None);
    }
}

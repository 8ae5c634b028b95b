//! Which call events are completions. The gateway never normalises (its
//! events carry `outcome = unknown` and the raw status), so the detector
//! asks the one shared rule ([`CallEvent::mapped_outcome`], over the shared
//! normaliser), exactly as the contact processor, recovery and the
//! projections do; a status it cannot map is not final and closes nothing.

use callstream_domain::normaliser::event_outcome;
use callstream_schemas::{CallEvent, CallOutcome};

/// The final outcome of a completion, `None` for a call still going (or a
/// status nobody can map).
pub fn final_outcome(event: &CallEvent) -> Option<CallOutcome> {
    Some(event.mapped_outcome()).filter(|o| o.is_final())
}

/// `final_outcome` from the fields it reads, for an event the detector did
/// not build whole (`CallEvent::mapped_outcome` asks the same normaliser).
pub fn final_outcome_of(
    provider: &str,
    provider_status: &str,
    answered_by: Option<&str>,
    stated: CallOutcome,
) -> Option<CallOutcome> {
    event_outcome(provider, provider_status, answered_by, stated.to_domain())
        .ok()
        .map(CallOutcome::from)
        .filter(|o| o.is_final())
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn event(provider: &str, status: &str, by: Option<&str>, stated: CallOutcome) -> CallEvent {
        CallEvent {
            event_id: Uuid::nil(),
            tenant_id: "t1".into(),
            occurred_at: chrono::DateTime::UNIX_EPOCH,
            causation_id: None,
            correlation_id: None,
            provider: provider.into(),
            integration_id: None,
            provider_event_id: String::new(),
            call_id: "CA1".into(),
            contact_id: "c1".into(),
            launch_id: None,
            campaign_id: None,
            source: callstream_schemas::CallEventSource::Live,
            provider_status: status.into(),
            outcome: stated,
            answered_by: by.map(str::to_string),
            duration_seconds: None,
            sequence_number: None,
            provider_error: None,
            reported_time_zone: None,
            received_at: chrono::DateTime::UNIX_EPOCH,
            analysis: None,
        }
    }

    #[test]
    fn raw_statuses_are_normalised() {
        use CallOutcome::*;
        let cases = [
            (
                "twilio",
                "completed",
                Some("machine_start"),
                Unknown,
                Some(Voicemail),
            ),
            ("twilio", "no-answer", None, Unknown, Some(NoAnswer)),
            ("twilio", "ringing", None, Unknown, None),
            ("twilio", "exploded", None, Unknown, None),
            ("json", "answered", None, Unknown, Some(Answered)),
            ("carrier-pigeon", "completed", None, Unknown, None),
            ("carrier-pigeon", "landed", None, Busy, Some(Busy)),
        ];
        for (provider, status, by, stated, expected) in cases {
            let got = final_outcome(&event(provider, status, by, stated));
            assert_eq!(got, expected, "{provider} {status:?}");
            let by_fields = final_outcome_of(provider, status, by, stated);
            assert_eq!(by_fields, expected, "{provider} {status:?} by fields");
        }
    }
}

//! What recovery writes is named by the rules of `callstream_domain::ids`.
//!
//! The replayed call event takes the gateway's own rule
//! ([`ids::gateway::twilio_call_event`]), so a replay of a callback that did
//! arrive carries the same event id and downstream dedupe drops it.
//! Everything else is derived from the launch, so a repeated decision (after
//! a crash, or a repeated command) writes a record with the id it had the
//! first time. Here the ids are paired with the `provider_event_id` strings
//! that go with them.

use callstream_domain::ids;
use uuid::Uuid;

/// The event id and `provider_event_id` of a call event recovered from the
/// provider's call record.
pub fn recovered_event(
    tenant: &str,
    provider: &str,
    call_sid: &str,
    status: &str,
    sequence: &str,
) -> (Uuid, String) {
    match provider {
        // Exactly the gateway's Twilio rule (see its `provider::twilio`).
        "twilio" => (
            ids::gateway::twilio_call_event(tenant, call_sid, status, sequence),
            format!("{call_sid}:{status}:{sequence}"),
        ),
        other => (
            ids::recovery::call_event(tenant, other, call_sid, status),
            format!("recovery:{call_sid}:{status}"),
        ),
    }
}

/// The call event that advances a contact without a call record (not found,
/// or an operator's advance), one per launch and outcome.
pub fn advance_event(tenant: &str, launch_id: &Uuid, outcome: &str) -> (Uuid, String) {
    (
        ids::recovery::advance(tenant, launch_id, outcome),
        format!("recovery:{launch_id}:{outcome}"),
    )
}

pub use ids::recovery::{audit as audit_event, rejected_command_audit};

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;
    use callstream_gateway::config::{IntegrationConfig, RateLimit};
    use callstream_gateway::event::ProviderKind;
    use callstream_gateway::provider::twilio::{Twilio, SIGNATURE_HEADER};
    use callstream_gateway::provider::{Inbound, Provider};
    use callstream_gateway::secret::Secret;
    use callstream_gateway::testkit;

    /// The event id the gateway gives a signed Twilio callback.
    fn gateway_event_id(pairs: &[(&str, &str)]) -> (Uuid, String) {
        let integration = IntegrationConfig {
            id: "tw".into(),
            tenant_id: "acme".into(),
            provider: ProviderKind::Twilio,
            secrets: vec![Secret::new(b"token".to_vec())],
            rate_limit: RateLimit::default(),
        };
        let path = "/v1/webhooks/twilio/tw?contact_id=c-1&tenant=acme";
        let base = "https://gw.example.com";
        let body = testkit::form(pairs);
        let mut headers = HeaderMap::new();
        let signature = testkit::twilio_signature("token", &format!("{base}{path}"), &body);
        headers.insert(SIGNATURE_HEADER, signature.parse().unwrap());
        let request = Inbound {
            integration: &integration,
            path_and_query: path,
            headers: &headers,
            body: &body,
            received_at: chrono::Utc::now(),
        };
        let twilio = Twilio {
            public_base_url: base.into(),
        };
        let verified = twilio.verify(&request).unwrap();
        let draft = twilio.parse(&request, verified).unwrap();
        (draft.event_id, draft.provider_event_id)
    }

    #[test]
    fn a_replayed_twilio_completion_has_the_gateways_event_id() {
        let cases = [
            ("CA42", "completed", "3"),
            ("CA42", "no-answer", "2"),
            ("CAffff", "busy", "0"),
        ];
        for (sid, status, seq) in cases {
            let live = gateway_event_id(&[
                ("CallSid", sid),
                ("CallStatus", status),
                ("SequenceNumber", seq),
                ("CallDuration", "12"),
            ]);
            assert_eq!(
                recovered_event("acme", "twilio", sid, status, seq),
                live,
                "{sid} {status} {seq}"
            );
        }
    }

    #[test]
    fn other_ids_are_stable_and_apart() {
        let launch = Uuid::from_u128(1);
        assert_eq!(
            advance_event("t", &launch, "no_answer"),
            advance_event("t", &launch, "no_answer")
        );
        assert_ne!(
            advance_event("t", &launch, "no_answer").0,
            advance_event("t", &launch, "voicemail").0
        );
        let command = Uuid::from_u128(9);
        assert_ne!(
            audit_event(&launch, "recovery.recovered", None),
            audit_event(&launch, "recovery.recovered", Some(&command))
        );
    }
}

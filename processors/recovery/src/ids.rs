//! What recovery writes is named by the rules of `callstream_domain::ids`.
//!
//! The replayed call event takes the gateway's own rule
//! ([`ids::gateway::twilio_call_event`]), so a replay of a callback that did
//! arrive carries the same event id and downstream dedupe drops it (checked
//! against the gateway's parser in `tests/tests/gateway_contracts.rs`).
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

pub use ids::recovery::{audit as audit_event, lookup_audit, rejected_command_audit};

#[cfg(test)]
mod tests {
    use super::*;

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

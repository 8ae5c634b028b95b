//! Deterministic ids of what recovery writes.
//!
//! The replayed call event takes the gateway's own rule (its `derive_id`,
//! over tenant, provider, `CallSid`, `CallStatus` and `SequenceNumber`), so
//! a replay of a callback that did arrive carries the same event id and
//! downstream dedupe drops it (checked against the gateway's parser in the
//! end-to-end crate, `tests/tests/gateway_contracts.rs`). Everything else is derived from the launch,
//! so a repeated decision (after a crash, or a repeated command) writes a
//! record with the id it had the first time.

use callstream_gateway::event::derive_id;
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
            derive_id(&[tenant, "twilio", call_sid, status, sequence]),
            format!("{call_sid}:{status}:{sequence}"),
        ),
        // Other providers identify deliveries by a webhook id a call record
        // does not carry; this id at least never changes for one status.
        other => (
            derive_id(&["recovery", tenant, other, call_sid, status]),
            format!("recovery:{call_sid}:{status}"),
        ),
    }
}

/// The call event that advances a contact without a call record (not found,
/// or an operator's advance), one per launch and outcome.
pub fn advance_event(tenant: &str, launch_id: &Uuid, outcome: &str) -> (Uuid, String) {
    let launch = launch_id.to_string();
    (
        derive_id(&["recovery-advance", tenant, &launch, outcome]),
        format!("recovery:{launch}:{outcome}"),
    )
}

/// An audit event: one per launch, action and command (the system's own
/// actions have no command).
pub fn audit_event(launch_id: &Uuid, action: &str, command_id: Option<&Uuid>) -> Uuid {
    let launch = launch_id.to_string();
    let command = command_id.map(Uuid::to_string).unwrap_or_default();
    derive_id(&["recovery-audit", &launch, action, &command])
}

/// An audit of a command that found nothing to act on.
pub fn rejected_command_audit(command_id: &Uuid) -> Uuid {
    derive_id(&["recovery-audit-rejected", &command_id.to_string()])
}

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

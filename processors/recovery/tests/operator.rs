//! The operator's recover, advance and ignore on the in-memory driver:
//! each acts on its case with the operator as actor, a repeat does nothing,
//! and one that finds no case is audited as rejected.

mod support;

use callstream_platform::topics;
use callstream_recovery::wire::FetchResult;
use callstream_schemas::{
    Actor, ActorKind, AuditEvent, AuditResult, CallEvent, CallOutcome, CompletionResolved,
    ContactCommandKind, ExceptionEvent, ExceptionStatus, ExceptionType, Resolution,
};
use support::*;
use uuid::Uuid;

#[test]
fn operator_commands_recover_advance_and_ignore_with_the_operator_as_actor() {
    // Recover a case that gave up.
    let mut d = driver();
    missing(&mut d, 1);
    answer(
        &mut d,
        FetchResult::Failed {
            retriable: false,
            reason: "401".into(),
        },
    );
    command(&mut d, 500, ContactCommandKind::Recover, Some(1));
    answer(
        &mut d,
        found("completed", Some("machine_end_beep"), Some("3")),
    );
    let events: Vec<CallEvent> = d.outputs(&name(topics::CALL_EVENTS));
    assert_eq!(events[0].outcome, CallOutcome::Voicemail);
    let audit: Vec<AuditEvent> = d.outputs(&name(topics::AUDIT));
    assert_eq!(audit.last().unwrap().action, "recovery.recovered");
    assert_eq!(
        audit.last().unwrap().actor,
        Actor::operator("ops@example.com")
    );
    assert_eq!(audit.last().unwrap().command_id, Some(Uuid::from_u128(500)));
    // Both exceptions close: the detector's and recovery's own.
    let closed: Vec<_> = d
        .outputs::<ExceptionEvent>(&name(topics::EXCEPTIONS))
        .into_iter()
        .filter(|e| e.status == ExceptionStatus::Resolved)
        .map(|e| e.exception_type)
        .collect();
    assert_eq!(
        closed,
        [
            ExceptionType::CompletionMissing,
            ExceptionType::RecoveryFailed
        ]
    );

    // Advance as voicemail, and a repeat of the same command.
    let mut d = driver();
    missing(&mut d, 2);
    command(&mut d, 501, ContactCommandKind::AdvanceVoicemail, Some(2));
    command(&mut d, 501, ContactCommandKind::AdvanceVoicemail, Some(2));
    let events: Vec<CallEvent> = d.outputs(&name(topics::CALL_EVENTS));
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].outcome, events[0].provider_status.as_str()),
        (CallOutcome::Voicemail, "completed")
    );
    assert_eq!(events[0].answered_by.as_deref(), Some("machine_start"));
    assert_eq!(
        d.outputs::<CompletionResolved>(&name(topics::COMPLETION_RESOLVED))[0].resolution,
        Resolution::AdvancedVoicemail
    );
    // The lookup asked for before the command comes back: nothing more happens.
    answer(&mut d, found("completed", None, Some("3")));
    assert_eq!(d.outputs::<CallEvent>(&name(topics::CALL_EVENTS)).len(), 1);

    // Ignore: the case closes without a call event; then a command finds nothing.
    let mut d = driver();
    missing(&mut d, 3);
    command(&mut d, 502, ContactCommandKind::Ignore, Some(3));
    assert!(d
        .outputs::<CallEvent>(&name(topics::CALL_EVENTS))
        .is_empty());
    let exceptions: Vec<ExceptionEvent> = d.outputs(&name(topics::EXCEPTIONS));
    assert_eq!(exceptions[0].status, ExceptionStatus::Ignored);
    command(&mut d, 503, ContactCommandKind::AdvanceNoAnswer, Some(3));
    assert_eq!(
        audits(&d),
        [
            (
                "recovery.ignored".into(),
                AuditResult::Applied,
                ActorKind::Operator
            ),
            (
                "recovery.advanced_no_answer".into(),
                AuditResult::Rejected,
                ActorKind::Operator
            ),
        ]
    );
    // Other kinds belong to the contact processor.
    command(&mut d, 504, ContactCommandKind::RetryNow, None);
    assert_eq!(audits(&d).len(), 2);
}

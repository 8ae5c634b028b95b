//! The records the notifier writes about its messages: an audit event for each message
//! sent (`notification.sent`) and for each that failed for good (`notification.failed`),
//! and a `notification_failed` exception for the latter, which an operator can see in the
//! console and which is never notified itself. Ids derive from the message id, so a step
//! replayed after a crash writes the same records.

use callstream_domain::failures::PermanentFailure;
use callstream_domain::ids::notifier as ids;
use callstream_kit::emit::timestamp;
use callstream_schemas::{
    Actor, AuditEvent, AuditResult, ExceptionEvent, ExceptionStatus, ExceptionType,
};

use crate::outbox::Message;

/// The actor of the notifier's records.
pub const ACTOR: &str = "notifier";
pub const AUDIT_SENT: &str = "notification.sent";
pub const AUDIT_FAILED: &str = "notification.failed";

fn audit(
    m: &Message,
    action: &str,
    result: AuditResult,
    detail: String,
    now_ms: i64,
) -> AuditEvent {
    AuditEvent {
        event_id: ids::record(&m.message_id, action),
        tenant_id: m.tenant.clone(),
        occurred_at: timestamp(now_ms),
        causation_id: m.notifications.first().copied(),
        correlation_id: None,
        actor: Actor::system(ACTOR),
        action: action.to_owned(),
        subject_type: "notification".into(),
        subject_id: m.message_id.to_string(),
        contact_id: None,
        command_id: None,
        result,
        reason: Some(m.kind.clone()),
        detail: Some(detail),
    }
}

/// The audit of a message sent.
pub fn sent(m: &Message, channel: &str, now_ms: i64) -> AuditEvent {
    let detail = format!(
        "{channel}: {} ({} notification(s), attempt {})",
        m.title, m.count, m.attempts
    );
    audit(m, AUDIT_SENT, AuditResult::Applied, detail, now_ms)
}

/// The audit and the exception of a message that failed for good.
pub fn failed(
    m: &Message,
    channel: &str,
    reason: &str,
    now_ms: i64,
) -> (AuditEvent, ExceptionEvent) {
    let detail = format!("{channel}: {} not sent: {reason}", m.title);
    let audit = audit(
        m,
        AUDIT_FAILED,
        AuditResult::Rejected,
        detail.clone(),
        now_ms,
    );
    let exception = ExceptionEvent {
        event_id: ids::record(&m.message_id, "exception-open"),
        tenant_id: m.tenant.clone(),
        occurred_at: timestamp(now_ms),
        causation_id: m.notifications.first().copied(),
        correlation_id: None,
        exception_id: ids::record(&m.message_id, "exception"),
        status: ExceptionStatus::Open,
        exception_type: ExceptionType::from(PermanentFailure::NotificationUndeliverable),
        urgent: false,
        // Not about a lead: the channel stands where the contact would.
        contact_id: format!("channel:{channel}"),
        campaign_id: None,
        job_id: None,
        launch_id: None,
        call_id: None,
        operation_id: None,
        reason: "notification_failed".into(),
        detail: Some(detail),
        actor: Actor::system(ACTOR),
        assignee: None,
    };
    (audit, exception)
}

//! `exception.avsc`, `alert.avsc` and `audit_event.avsc`: what people look at.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Actor, Timestamp};

avro_enum! {
    /// State of an exception case after an event.
    ExceptionStatus = "io.callstream.events.ExceptionStatus" {
        Open => "open",
        Resolved => "resolved",
        Ignored => "ignored",
    }
}

avro_enum! {
    /// What needs attention.
    ExceptionType = "io.callstream.events.ExceptionType" {
        UrgentRequest => "urgent_request",
        LaunchFailed => "launch_failed",
        ProviderFailure => "provider_failure",
        CrmFailed => "crm_failed",
        NoSlot => "no_slot",
        CompletionMissing => "completion_missing",
        RecoveryFailed => "recovery_failed",
        TransitionRejected => "transition_rejected",
        /// A notification could not be sent for good (the notifier never notifies these,
        /// so a channel that is down does not notify about itself in a loop).
        NotificationFailed => "notification_failed",
        /// A record, timer or effect result a processor could not handle, parked on the
        /// dead-letter topic (the exception's id is the letter's; a replay resolves it).
        DeadLetter => "dead_letter",
        /// A lead that cannot be called (barred, or no usable phone number) ended failed.
        LeadUnreachable => "lead_unreachable",
        /// A record the projections could not apply to the views, and skipped.
        UnappliableRecord => "unappliable_record",
    }
}

impl From<callstream_domain::failures::PermanentFailure> for ExceptionType {
    /// The exception each permanent failure opens (exhaustive: a new kind of failure
    /// does not build until it is given one).
    fn from(failure: callstream_domain::failures::PermanentFailure) -> Self {
        use callstream_domain::failures::PermanentFailure as F;
        match failure {
            F::LeadBarred | F::NoPhoneNumber => Self::LeadUnreachable,
            F::NoWindowOpening | F::NoSlot => Self::NoSlot,
            F::ResultRejected => Self::TransitionRejected,
            F::ProviderFailuresExhausted | F::ProviderFailed => Self::ProviderFailure,
            F::LaunchRefused => Self::LaunchFailed,
            F::CrmWriteFailed => Self::CrmFailed,
            F::CompletionMissing => Self::CompletionMissing,
            F::RecoveryGaveUp => Self::RecoveryFailed,
            F::DeadLettered => Self::DeadLetter,
            F::NotificationUndeliverable => Self::NotificationFailed,
            F::UnappliableRecord => Self::UnappliableRecord,
        }
    }
}

/// A change in an exception case (`io.callstream.events.ExceptionEvent`, topic `exceptions`,
/// keyed by contact). Named `ExceptionEvent` so generated Java code does not shadow
/// `java.lang.Exception`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExceptionEvent {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    /// Stable id of the case.
    #[serde(with = "crate::serde_util::uuid_str")]
    pub exception_id: Uuid,
    pub status: ExceptionStatus,
    pub exception_type: ExceptionType,
    pub urgent: bool,
    pub contact_id: String,
    pub campaign_id: Option<String>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub job_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub launch_id: Option<Uuid>,
    pub call_id: Option<String>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub operation_id: Option<Uuid>,
    pub reason: String,
    pub detail: Option<String>,
    pub actor: Actor,
    pub assignee: Option<String>,
}

avro_enum! {
    /// What an alert is about.
    AlertKind = "io.callstream.events.AlertKind" {
        DeliveryRateLow => "delivery_rate_low",
        /// Missing completions still open over a threshold.
        MissingBacklog => "missing_backlog",
        /// Records were dead-lettered.
        DeadLetters => "dead_letters",
        /// A processor's consumer lag stayed over a threshold.
        ConsumerLag => "consumer_lag",
        /// Failed launches and CRM failures per 10 minutes over a threshold.
        ErrorRate => "error_rate",
    }
}

avro_enum! {
    /// State of an alert after an event.
    AlertStatus = "io.callstream.events.AlertStatus" {
        Raised => "raised",
        Resolved => "resolved",
    }
}

/// An operational alert (`io.callstream.events.Alert`, topic `alerts`, keyed by tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::uuid_str")]
    pub alert_id: Uuid,
    pub kind: AlertKind,
    pub status: AlertStatus,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub bucket_start: Timestamp,
    pub bucket_ms: i64,
    pub launches: i64,
    pub completions: i64,
    pub rate: f64,
    pub threshold: f64,
    pub detail: Option<String>,
    /// What it is about beyond the tenant (the processor whose lag it reports).
    pub subject: Option<String>,
}

avro_enum! {
    /// How much a notification matters.
    NotificationSeverity = "io.callstream.events.NotificationSeverity" {
        Info => "info",
        Warning => "warning",
        Critical => "critical",
    }
}

/// A notification decided for one channel (`io.callstream.events.Notification`, topic
/// `notifications`, keyed by channel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    /// The delivery ledger's key; sent as webhook-id and Message-ID.
    #[serde(with = "crate::serde_util::uuid_str")]
    pub notification_id: Uuid,
    pub channel: String,
    pub kind: String,
    pub digest_key: String,
    pub severity: NotificationSeverity,
    pub urgent: bool,
    pub title: String,
    pub text: String,
    pub link: Option<String>,
    pub subject_id: Option<String>,
}

avro_enum! {
    /// Whether an audited action took effect.
    AuditResult = "io.callstream.events.AuditResult" {
        Applied => "applied",
        Rejected => "rejected",
    }
}

/// The audit action of an operator assigning an exception to someone (subject: the
/// exception, `subject_type` `exception`; detail: the assignee, absent to unassign). The
/// exceptions view keeps the latest per exception.
pub const AUDIT_EXCEPTION_ASSIGN: &str = "exception.assign";

/// The audit action of a missing completion's lookup that did not close its case (the call
/// still in progress, the lookup failed, or recovery gave up after it); subject: the launch,
/// `subject_type` `launch`; reason `in_progress`, `lookup_failed` or `gave_up`; detail: what
/// the lookup found. One per lookup, so a case's count is its recovery attempts.
pub const AUDIT_RECOVERY_LOOKUP: &str = "recovery.lookup";

/// The audit action of an operator replaying a dead letter (subject: the letter,
/// `subject_type` `dead_letter`; detail: where the record was sent again).
pub const AUDIT_DEAD_LETTER_REPLAY: &str = "dead_letter.replay";

/// An action by the system or an operator (`io.callstream.events.AuditEvent`, topic `audit`,
/// keyed by tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    pub actor: Actor,
    /// Dotted action code, for example `recovery.recovered`.
    pub action: String,
    pub subject_type: String,
    pub subject_id: String,
    pub contact_id: Option<String>,
    /// The operator command carried out, if any.
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub command_id: Option<Uuid>,
    pub result: AuditResult,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

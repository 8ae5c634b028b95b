//! `contact_command.avsc`: launch requests, LaunchDue and operator or recovery actions.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Actor, JobOrigin, Timestamp};

avro_enum! {
    /// What a contact command asks for.
    ContactCommandKind = "io.callstream.events.ContactCommandKind" {
        LaunchRequest => "launch_request",
        LaunchDue => "launch_due",
        RetryNow => "retry_now",
        RetryLater => "retry_later",
        CancelFutureJobs => "cancel_future_jobs",
        ForceFinish => "force_finish",
        Recover => "recover",
        AdvanceNoAnswer => "advance_no_answer",
        AdvanceVoicemail => "advance_voicemail",
        Ignore => "ignore",
        ContactUpdate => "contact_update",
        LiftRestriction => "lift_restriction",
    }
}

/// A command about one contact (`io.callstream.events.ContactCommand`, topic
/// `contact-commands`, keyed by contact). One record for every kind, so a new kind is a new
/// enum symbol and maybe new optional fields, which old readers skip; fields a kind does not
/// use are `None`. `event_id` is the command id answered to the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContactCommand {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    pub kind: ContactCommandKind,
    pub contact_id: String,
    pub actor: Actor,
    /// The caller's own id for the request (CRM launch request id).
    pub request_id: Option<String>,
    pub campaign_id: Option<String>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub job_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub launch_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub exception_id: Option<Uuid>,
    pub origin: Option<JobOrigin>,
    pub slot: Option<i64>,
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub slot_at: Option<Timestamp>,
    /// retry_later's time; a launch request's earliest time.
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub requested_at: Option<Timestamp>,
    pub contact: Option<ContactDetails>,
    pub reason: Option<String>,
}

/// What the caller knows about a contact; `None` is unknown or unchanged
/// (`io.callstream.events.ContactDetails`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ContactDetails {
    pub phone_number: Option<String>,
    pub time_zone: Option<String>,
    pub do_not_call: Option<bool>,
    pub blocked: Option<bool>,
    pub enrolled_student: Option<bool>,
    pub spam: Option<bool>,
    /// The US state (two-letter code) on the contact record.
    #[serde(default)]
    pub state: Option<String>,
}

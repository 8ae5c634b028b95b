//! What the gateway makes of an accepted request, before encoding: a call
//! event carrying the provider's raw status and analysis (the gateway never
//! normalises or decides; the domain's normaliser does that downstream), or
//! a launch request for the contact processor.
//!
//! Guarantee: the event id is a pure function of the tenant, the provider
//! and the provider's identity of the event (`callstream_domain::ids::gateway`),
//! so a redelivered webhook gets the id it had the first time and downstream
//! dedupe can drop it.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// The voice-platform formats the gateway accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// Twilio status callbacks (form-encoded, `X-Twilio-Signature`).
    Twilio,
    /// JSON call events signed by the Standard Webhooks scheme.
    Json,
}

impl ProviderKind {
    /// The name in webhook URLs, configuration and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Twilio => "twilio",
            Self::Json => "json",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "twilio" => Some(Self::Twilio),
            "json" => Some(Self::Json),
            _ => None,
        }
    }
}

/// What a platform's end-of-call analysis said the lead said, as reported
/// (not interpreted: the domain decides what it means).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallAnalysis {
    /// Short summary of the conversation; carried for the CRM note, never logged.
    pub summary: Option<String>,
    /// Whether the lead showed interest; `None` when the analysis does not say.
    pub interested: Option<bool>,
    /// The lead asked to be called back.
    pub callback_requested: bool,
    /// The lead's own words for when ("tomorrow after three").
    pub callback_phrase: Option<String>,
    /// The lead asked never to be called again.
    pub do_not_call: bool,
    /// The lead asked for a person (an urgent request).
    pub wants_person: bool,
    /// The lead's own words for a do-not-call or person request.
    pub request_phrase: Option<String>,
}

/// A call outcome, ready to encode as a `call-event` (schema `CallEvent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallEventDraft {
    pub event_id: Uuid,
    pub tenant_id: String,
    pub integration_id: String,
    pub provider: ProviderKind,
    /// The provider's identity of this delivery (`CallSid:CallStatus:Seq`,
    /// or the `webhook-id`); `event_id` is derived from it.
    pub provider_event_id: String,
    /// The provider's call id (Twilio `CallSid`).
    pub call_id: String,
    /// The Kafka key: every event of one contact is on one partition.
    pub contact_id: String,
    /// The launch (operation id) that placed the call, from the signed request.
    pub launch_id: Option<Uuid>,
    pub campaign_id: Option<String>,
    /// The status exactly as the provider sent it.
    pub provider_status: String,
    /// The provider's error code or message for a failed call.
    pub provider_error: Option<String>,
    /// When the provider says it happened; the receive time when it doesn't.
    pub occurred_at: DateTime<Utc>,
    pub received_at: DateTime<Utc>,
    pub duration_seconds: Option<i32>,
    /// Answering-machine detection, as the provider labels it.
    pub answered_by: Option<String>,
    /// Twilio's `SequenceNumber`: orders the callbacks of one call.
    pub sequence_number: Option<i64>,
    /// A time zone the platform reported for the lead (IANA name).
    pub reported_time_zone: Option<String>,
    pub analysis: Option<CallAnalysis>,
    /// The chain this event continues, when the caller named one; `None`
    /// means the webhook starts its own chain.
    pub correlation_id: Option<Uuid>,
}

/// What the CRM knows about the contact (schema `ContactDetails`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContactDetails {
    /// E.164 number; carried to Kafka, never logged.
    pub phone_number: Option<String>,
    pub time_zone: Option<String>,
    pub do_not_call: Option<bool>,
    pub blocked: Option<bool>,
    pub enrolled_student: Option<bool>,
    pub spam: Option<bool>,
    /// Two-letter US state code.
    pub state: Option<String>,
}

/// A request from the CRM to call a contact in a campaign (a `ContactCommand`
/// of kind `launch_request`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRequestDraft {
    /// Derived from tenant and the CRM's request id: a retried request keeps it.
    pub command_id: Uuid,
    pub tenant_id: String,
    /// The CRM's idempotency key for this request.
    pub request_id: String,
    pub contact_id: String,
    pub campaign_id: String,
    /// The earliest time the CRM wants the call; `None` means as soon as allowed.
    pub not_before: Option<DateTime<Utc>>,
    pub contact: Option<ContactDetails>,
    pub reason: Option<String>,
    pub received_at: DateTime<Utc>,
    /// The chain this request continues, when the caller named one.
    pub correlation_id: Option<Uuid>,
}

/// What the CRM (or an integration) says of a contact now, without asking
/// for a call (a `ContactCommand` of kind `contact_update`): a new number or
/// zone, or a restriction ("stop calling").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContactUpdateDraft {
    /// Derived from tenant and the CRM's request id: a retried update keeps it.
    pub command_id: Uuid,
    pub tenant_id: String,
    /// The CRM's idempotency key for this update.
    pub request_id: String,
    pub contact_id: String,
    pub contact: ContactDetails,
    pub reason: Option<String>,
    pub received_at: DateTime<Utc>,
    /// The chain this update continues, when the caller named one.
    pub correlation_id: Option<Uuid>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_round_trip() {
        for kind in [ProviderKind::Twilio, ProviderKind::Json] {
            assert_eq!(ProviderKind::from_name(kind.as_str()), Some(kind));
        }
        assert_eq!(ProviderKind::from_name("Twilio"), None);
    }
}

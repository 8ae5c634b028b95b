//! What the gateway makes of an accepted request, before encoding: a call
//! event carrying the provider's raw status and analysis (the gateway never
//! normalises or decides; the domain's normaliser does that downstream), or
//! a launch request for the contact processor.
//!
//! Guarantee: the event id is a pure function of the tenant, the provider
//! and the provider's identity of the event, so a redelivered webhook gets
//! the id it had the first time and downstream dedupe can drop it.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// The namespace of every id the gateway derives (UUIDv5).
pub const EVENT_ID_NAMESPACE: Uuid = Uuid::from_u128(0x6c1e_3c4f_9a0b_5d2e_8f71_0c2b_4a6d_9e13);

/// A deterministic event id: UUIDv5 over the length-prefixed parts, so no
/// two different part lists can produce the same name.
pub fn derive_id(parts: &[&str]) -> Uuid {
    let capacity = parts.iter().map(|p| p.len() + 4).sum();
    let mut name = Vec::with_capacity(capacity);
    for part in parts {
        name.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
        name.extend_from_slice(part.as_bytes());
    }
    Uuid::new_v5(&EVENT_ID_NAMESPACE, &name)
}

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

/// What a platform's analysis of the call said, as reported (not interpreted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallAnalysis {
    /// The platform's own outcome label, e.g. `callback_requested`.
    pub outcome: Option<String>,
    /// Who or what answered, as the platform labels it (`human`, `machine`...).
    pub answered_by: Option<String>,
    /// The lead asked to be called back.
    pub callback: Option<CallbackRequest>,
    /// The lead asked never to be called again.
    pub do_not_call: bool,
    /// The lead raised something urgent; the platform's description of it.
    pub urgent: Option<String>,
    /// Free-text summary; carried for the timeline, never logged.
    pub summary: Option<String>,
}

/// A callback the lead asked for, in the lead's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackRequest {
    /// The words the lead used ("tomorrow after three").
    pub requested_text: String,
    /// The platform's reading of them, if it gave one.
    pub requested_at: Option<DateTime<Utc>>,
}

/// A call outcome, ready to encode as a `call-event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallEventDraft {
    pub event_id: Uuid,
    pub tenant_id: String,
    pub integration_id: String,
    pub provider: ProviderKind,
    /// The provider's identity of this delivery (`CallSid:CallStatus:Seq`,
    /// or the `webhook-id`), kept for audits of dedupe.
    pub provider_event_id: String,
    /// The provider's call id (Twilio `CallSid`).
    pub call_id: String,
    /// The Kafka key: every event of one contact is on one partition.
    pub contact_id: String,
    /// The launch that placed the call, when the launch told the platform.
    pub launch_id: Option<String>,
    /// The status exactly as the provider sent it.
    pub raw_status: String,
    /// When the provider says it happened; the receive time when it doesn't.
    pub occurred_at: DateTime<Utc>,
    pub received_at: DateTime<Utc>,
    pub duration_seconds: Option<u32>,
    /// Answering-machine detection, as the provider labels it.
    pub answered_by: Option<String>,
    /// Twilio's `SequenceNumber`: orders the callbacks of one call.
    pub sequence: Option<u64>,
    /// A time zone the platform reported for the lead (IANA name).
    pub timezone: Option<String>,
    pub analysis: Option<CallAnalysis>,
    pub correlation_id: String,
}

/// A request from the CRM to call a contact in a campaign.
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
    /// Lead's time zone if the CRM knows it (IANA name).
    pub timezone: Option<String>,
    pub requested_at: DateTime<Utc>,
    pub correlation_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_unambiguous() {
        let a = derive_id(&["t1", "twilio", "CA1", "completed", "3"]);
        assert_eq!(a, derive_id(&["t1", "twilio", "CA1", "completed", "3"]));
        assert_eq!(a.get_version_num(), 5);
        let different = [
            derive_id(&["t2", "twilio", "CA1", "completed", "3"]),
            derive_id(&["t1", "json", "CA1", "completed", "3"]),
            derive_id(&["t1", "twilio", "CA1", "completed", "4"]),
            derive_id(&["t1", "twilio", "CA1completed", "", "3"]),
            derive_id(&["t1twilio", "CA1", "completed", "3"]),
        ];
        for other in different {
            assert_ne!(a, other);
        }
    }

    #[test]
    fn provider_names_round_trip() {
        for kind in [ProviderKind::Twilio, ProviderKind::Json] {
            assert_eq!(ProviderKind::from_name(kind.as_str()), Some(kind));
        }
        assert_eq!(ProviderKind::from_name("Twilio"), None);
    }
}

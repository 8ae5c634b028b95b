//! Turning drafts into record values: Avro single-object encoding of the
//! `schemas` crate's `CallEvent` and `ContactCommand`, behind a small trait
//! so the router does not depend on how values are encoded.
//!
//! The gateway fills `outcome` with `unknown`: mapping provider statuses is
//! the shared normaliser's job downstream, and the raw status travels in
//! `provider_status` so every event can be re-normalised later.

use std::sync::OnceLock;

use callstream_schemas::{
    Actor, ActorKind, CallAnalysis, CallEvent, CallEventSource, CallOutcome, ContactCommand,
    ContactCommandKind, ContactDetails, Event, EventKind,
};

use crate::event::{CallEventDraft, ContactUpdateDraft, LaunchRequestDraft};

/// One encoded value and what the record headers say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The record value.
    pub payload: Vec<u8>,
    /// The `event-type` header: the schema's full record name.
    pub event_type: &'static str,
    /// The `schema-fingerprint` header: 16 lowercase hex digits of the
    /// writer schema's CRC-64-AVRO fingerprint.
    pub fingerprint: [u8; 16],
}

/// An event that does not fit its schema: a bug, never the caller's fault.
#[derive(Debug, thiserror::Error)]
#[error("encoding {event_type}: {message}")]
pub struct CodecError {
    pub event_type: &'static str,
    pub message: String,
}

/// Encodes the two kinds of value the gateway produces.
pub trait EventCodec: Send + Sync + 'static {
    fn call_event(&self, event: CallEventDraft) -> Result<Encoded, CodecError>;
    fn launch_request(&self, request: LaunchRequestDraft) -> Result<Encoded, CodecError>;
    fn contact_update(&self, update: ContactUpdateDraft) -> Result<Encoded, CodecError>;
}

/// The production codec: the schemas crate's types, single-object encoded.
#[derive(Debug, Clone, Copy, Default)]
pub struct AvroCodec;

fn fingerprint_hex(kind: EventKind) -> [u8; 16] {
    let mut out = [b'0'; 16];
    let text = kind.fingerprint().to_string();
    if text.len() == 16 {
        out.copy_from_slice(text.as_bytes());
    }
    out
}

/// [`fingerprint_hex`] of `E`, formatted once per process rather than per record.
fn cached_fingerprint<E: Event>() -> [u8; 16] {
    static CALL_EVENT: OnceLock<[u8; 16]> = OnceLock::new();
    static CONTACT_COMMAND: OnceLock<[u8; 16]> = OnceLock::new();
    let cell = match E::KIND {
        EventKind::CallEvent => &CALL_EVENT,
        EventKind::ContactCommand => &CONTACT_COMMAND,
        other => return fingerprint_hex(other),
    };
    *cell.get_or_init(|| fingerprint_hex(E::KIND))
}

fn encode<E: Event>(event: &E) -> Result<Encoded, CodecError> {
    let payload = event.encode().map_err(|e| CodecError {
        event_type: E::name(),
        message: e.to_string(),
    })?;
    Ok(Encoded {
        payload,
        event_type: E::name(),
        fingerprint: cached_fingerprint::<E>(),
    })
}

/// The `CallEvent` a draft becomes.
pub fn to_call_event(d: CallEventDraft) -> CallEvent {
    CallEvent {
        event_id: d.event_id,
        tenant_id: d.tenant_id,
        occurred_at: d.occurred_at,
        // A webhook is caused by nothing we logged.
        causation_id: None,
        correlation_id: d.correlation_id,
        provider: d.provider.as_str().to_string(),
        integration_id: Some(d.integration_id),
        provider_event_id: d.provider_event_id,
        call_id: d.call_id,
        contact_id: d.contact_id,
        launch_id: d.launch_id,
        campaign_id: d.campaign_id,
        source: CallEventSource::Live,
        provider_status: d.provider_status,
        outcome: CallOutcome::Unknown,
        answered_by: d.answered_by,
        duration_seconds: d.duration_seconds,
        sequence_number: d.sequence_number,
        provider_error: d.provider_error,
        reported_time_zone: d.reported_time_zone,
        received_at: d.received_at,
        analysis: d.analysis.map(|a| CallAnalysis {
            summary: a.summary,
            interested: a.interested,
            callback_requested: a.callback_requested,
            callback_phrase: a.callback_phrase,
            do_not_call: a.do_not_call,
            wants_person: a.wants_person,
            request_phrase: a.request_phrase,
        }),
    }
}

/// The `ContactCommand` (kind `launch_request`) a draft becomes.
pub fn to_contact_command(d: LaunchRequestDraft) -> ContactCommand {
    ContactCommand {
        event_id: d.command_id,
        tenant_id: d.tenant_id,
        occurred_at: d.received_at,
        causation_id: None,
        correlation_id: d.correlation_id,
        kind: ContactCommandKind::LaunchRequest,
        contact_id: d.contact_id,
        actor: Actor {
            kind: ActorKind::Integration,
            id: LAUNCH_INTAKE_ACTOR.to_string(),
        },
        request_id: Some(d.request_id),
        campaign_id: Some(d.campaign_id),
        job_id: None,
        launch_id: None,
        exception_id: None,
        origin: None,
        slot: None,
        slot_at: None,
        requested_at: d.not_before,
        contact: d.contact.map(details),
        reason: d.reason,
    }
}

fn details(c: crate::event::ContactDetails) -> ContactDetails {
    ContactDetails {
        phone_number: c.phone_number,
        time_zone: c.time_zone,
        do_not_call: c.do_not_call,
        blocked: c.blocked,
        enrolled_student: c.enrolled_student,
        spam: c.spam,
        state: c.state,
    }
}

/// The `ContactCommand` (kind `contact_update`) a draft becomes: the same
/// intake actor as launch requests (the CRM), so its flags count as the CRM's.
pub fn to_contact_update(d: ContactUpdateDraft) -> ContactCommand {
    ContactCommand {
        kind: ContactCommandKind::ContactUpdate,
        campaign_id: None,
        requested_at: None,
        ..to_contact_command(LaunchRequestDraft {
            command_id: d.command_id,
            tenant_id: d.tenant_id,
            request_id: d.request_id,
            contact_id: d.contact_id,
            campaign_id: String::new(),
            not_before: None,
            contact: Some(d.contact),
            reason: d.reason,
            received_at: d.received_at,
            correlation_id: d.correlation_id,
        })
    }
}

/// The actor id of launch requests: the CRM, through launch intake.
pub const LAUNCH_INTAKE_ACTOR: &str = "launch-intake";

impl EventCodec for AvroCodec {
    fn call_event(&self, event: CallEventDraft) -> Result<Encoded, CodecError> {
        encode(&to_call_event(event))
    }

    fn launch_request(&self, request: LaunchRequestDraft) -> Result<Encoded, CodecError> {
        encode(&to_contact_command(request))
    }

    fn contact_update(&self, update: ContactUpdateDraft) -> Result<Encoded, CodecError> {
        encode(&to_contact_update(update))
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use uuid::Uuid;

    use super::*;
    use crate::event::ProviderKind;
    use callstream_domain::ids;

    fn draft() -> CallEventDraft {
        let at = Utc.with_ymd_and_hms(2024, 3, 1, 15, 0, 0).unwrap();
        CallEventDraft {
            event_id: ids::gateway::twilio_call_event("t", "CA1", "completed", "2"),
            tenant_id: "t".into(),
            integration_id: "i".into(),
            provider: ProviderKind::Twilio,
            provider_event_id: "CA1:completed:2".into(),
            call_id: "CA1".into(),
            contact_id: "c-1".into(),
            launch_id: Some(Uuid::from_u128(7)),
            campaign_id: None,
            provider_status: "completed".into(),
            provider_error: None,
            occurred_at: at,
            received_at: at,
            duration_seconds: Some(12),
            answered_by: Some("human".into()),
            sequence_number: Some(2),
            reported_time_zone: None,
            analysis: None,
            correlation_id: None,
        }
    }

    #[test]
    fn call_events_round_trip_through_avro() {
        let d = draft();
        let encoded = AvroCodec.call_event(d.clone()).unwrap();
        assert_eq!(encoded.event_type, "io.callstream.events.CallEvent");
        assert_eq!(
            std::str::from_utf8(&encoded.fingerprint).unwrap(),
            CallEvent::fingerprint().to_string()
        );
        let decoded = CallEvent::decode(&encoded.payload).unwrap();
        assert_eq!(decoded, to_call_event(d));
        assert_eq!(decoded.provider_status, "completed");
        assert_eq!(decoded.outcome, CallOutcome::Unknown);
        assert_eq!(decoded.source, CallEventSource::Live);
    }

    #[test]
    fn launch_requests_become_contact_commands() {
        let at = Utc.with_ymd_and_hms(2024, 3, 1, 15, 0, 0).unwrap();
        let d = LaunchRequestDraft {
            command_id: Uuid::from_u128(9),
            tenant_id: "t".into(),
            request_id: "crm-1".into(),
            contact_id: "c-1".into(),
            campaign_id: "spring".into(),
            not_before: Some(at),
            contact: None,
            reason: None,
            received_at: at,
            correlation_id: None,
        };
        let encoded = AvroCodec.launch_request(d).unwrap();
        let command = ContactCommand::decode(&encoded.payload).unwrap();
        assert_eq!(command.kind, ContactCommandKind::LaunchRequest);
        assert_eq!(command.event_id, Uuid::from_u128(9));
        assert_eq!(command.campaign_id.as_deref(), Some("spring"));
        assert_eq!(command.requested_at, Some(at));
        assert_eq!(command.actor.kind, ActorKind::Integration);
    }
}

//! Twilio status callbacks: `application/x-www-form-urlencoded` with
//! `CallSid`, `CallStatus`, `CallDuration`, `AnsweredBy`, `Timestamp`,
//! `SequenceNumber`, `To`, `From`, ...
//!
//! The contact and launch are named by the query of the callback URL the
//! launch gave Twilio (`?contact_id=..&launch_id=..&tenant=..`): that URL is
//! covered by the signature, the caller cannot change it. Phone numbers
//! (`To`, `From`, `Caller`, `Called`) are never copied into the event.
//! Identity of the event: `CallSid`, `CallStatus`, `SequenceNumber`.

use chrono::{DateTime, Utc};

use super::{
    check_tenant, correlation_header, optional_id, optional_uuid, required_id, Inbound, Provider,
    Verified,
};
use crate::error::ApiError;
use crate::event::{CallEventDraft, ProviderKind};
use crate::verify::twilio;
use callstream_domain::ids;

/// The Twilio provider; knows the public URL Twilio was given.
#[derive(Debug, Clone)]
pub struct Twilio {
    /// Scheme, host (and port) Twilio calls, without a trailing slash.
    pub public_base_url: String,
}

/// The header Twilio signs with.
pub const SIGNATURE_HEADER: &str = "x-twilio-signature";

fn field<'p>(
    form: &'p [(std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>)],
    name: &str,
) -> Option<&'p str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_ref())
}

fn number<T: std::str::FromStr + PartialOrd + Default>(
    field: &'static str,
    raw: Option<&str>,
) -> Result<Option<T>, ApiError> {
    match raw {
        None | Some("") => Ok(None),
        Some(v) => match v.parse::<T>() {
            Ok(n) if n >= T::default() => Ok(Some(n)),
            _ => Err(ApiError::Unprocessable {
                field,
                problem: "is not a whole number",
            }),
        },
    }
}

impl Provider for Twilio {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Twilio
    }

    fn content_type(&self) -> &'static str {
        "application/x-www-form-urlencoded"
    }

    fn verify<'a>(&self, request: &Inbound<'a>) -> Result<Verified<'a>, ApiError> {
        let url = format!("{}{}", self.public_base_url, request.path_and_query);
        let form = twilio::sorted_params(request.body);
        let header = request.headers.get(SIGNATURE_HEADER).map(|v| v.as_bytes());
        twilio::verify(&request.integration.secrets, &url, &form, header)?;
        Ok(Verified {
            form,
            signed_at: None,
        })
    }

    fn parse(
        &self,
        request: &Inbound<'_>,
        verified: Verified<'_>,
    ) -> Result<CallEventDraft, ApiError> {
        let form = &verified.form;
        let query = request
            .path_and_query
            .split_once('?')
            .map_or(&b""[..], |(_, q)| q.as_bytes());
        let (mut contact, mut launch, mut campaign, mut tenant) = (None, None, None, None);
        for (name, value) in form_urlencoded::parse(query) {
            match name.as_ref() {
                "contact_id" => contact = Some(value),
                "launch_id" => launch = Some(value),
                "campaign_id" => campaign = Some(value),
                "tenant" => tenant = Some(value),
                _ => {}
            }
        }
        let integration = request.integration;
        check_tenant(integration, tenant.as_deref())?;
        let contact_id = required_id("contact_id", contact.as_deref())?;
        let launch_id = optional_uuid("launch_id", launch.as_deref())?;
        let campaign_id = optional_id("campaign_id", campaign.as_deref())?;
        let call_id = required_id("CallSid", field(form, "CallSid"))?;
        let provider_status = required_id("CallStatus", field(form, "CallStatus"))?;
        let sequence_raw = field(form, "SequenceNumber").unwrap_or("");
        let sequence_number = number("SequenceNumber", Some(sequence_raw))?;
        let duration_seconds = number("CallDuration", field(form, "CallDuration"))?;
        let answered_by = optional_id("AnsweredBy", field(form, "AnsweredBy"))?;
        let provider_error = optional_id("ErrorCode", field(form, "ErrorCode"))?;
        // Twilio's `Timestamp` is RFC 2822; one we cannot read is not worth
        // refusing a signed callback over, the receive time stands in.
        let occurred_at = field(form, "Timestamp")
            .and_then(|t| DateTime::parse_from_rfc2822(t).ok())
            .map_or(request.received_at, |t| t.with_timezone(&Utc));

        let event_id = ids::gateway::twilio_call_event(
            &integration.tenant_id,
            &call_id,
            &provider_status,
            sequence_raw,
        );
        Ok(CallEventDraft {
            event_id,
            tenant_id: integration.tenant_id.clone(),
            integration_id: integration.id.clone(),
            provider: ProviderKind::Twilio,
            provider_event_id: format!("{call_id}:{provider_status}:{sequence_raw}"),
            call_id,
            contact_id,
            launch_id,
            campaign_id,
            provider_status,
            provider_error,
            occurred_at,
            received_at: request.received_at,
            duration_seconds,
            answered_by,
            sequence_number,
            reported_time_zone: None,
            analysis: None,
            correlation_id: correlation_header(request.headers),
        })
    }
}

#[cfg(test)]
#[path = "twilio_tests.rs"]
mod tests;

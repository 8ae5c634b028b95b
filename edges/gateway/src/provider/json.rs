//! JSON call events signed with the Standard Webhooks scheme: the neutral
//! format for AI voice platforms, carrying the call's analysis (outcome,
//! answered by, a callback request in the lead's words, do-not-call or an
//! urgent request). The format is documented in the crate's README.
//!
//! The whole body is signed, so every field in it is trusted once the
//! signature matches; a `tenant_id` in it must still agree with the
//! integration's. Identity of the event: the `webhook-id` header.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::{
    check_tenant, correlation_header, optional_id, optional_text, optional_time_zone,
    optional_uuid, required_id, Inbound, Provider, Verified,
};
use crate::error::ApiError;
use crate::event::{CallAnalysis, CallEventDraft, ProviderKind};
use crate::verify::standard_webhooks::{self, SignedHeaders};
use crate::verify::Clock;
use callstream_domain::ids;
use callstream_domain::input::{MAX_PHRASE_CHARS, MAX_SUMMARY_CHARS};

/// The Standard Webhooks JSON provider.
#[derive(Clone)]
pub struct Json {
    pub clock: Arc<dyn Clock>,
    pub tolerance: Duration,
}

/// The body, as documented in the README. Unknown fields are ignored so
/// platforms can add to it.
#[derive(Debug, Deserialize)]
pub struct JsonCallEvent {
    pub tenant_id: Option<String>,
    pub call_id: Option<String>,
    pub contact_id: Option<String>,
    pub launch_id: Option<String>,
    pub campaign_id: Option<String>,
    pub status: Option<String>,
    pub occurred_at: Option<DateTime<Utc>>,
    pub duration_seconds: Option<u32>,
    pub answered_by: Option<String>,
    pub error: Option<String>,
    pub time_zone: Option<String>,
    pub analysis: Option<JsonAnalysis>,
}

/// The platform's end-of-call analysis.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct JsonAnalysis {
    pub summary: Option<String>,
    pub interested: Option<bool>,
    pub callback_requested: bool,
    pub callback_phrase: Option<String>,
    pub do_not_call: bool,
    pub wants_person: bool,
    pub request_phrase: Option<String>,
}

/// A message about a JSON error that says where, never what was there.
pub fn describe_json_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Io | Category::Syntax => "not valid JSON",
        Category::Eof => "JSON ends too early",
        Category::Data => "a field has the wrong type",
    };
    format!("{what} (line {}, column {})", e.line(), e.column())
}

impl Provider for Json {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Json
    }

    fn content_type(&self) -> &'static str {
        "application/json"
    }

    fn verify<'a>(&self, request: &Inbound<'a>) -> Result<Verified<'a>, ApiError> {
        let header = |name: &str| request.headers.get(name).map(|v| v.as_bytes());
        let headers = SignedHeaders {
            id: header("webhook-id"),
            timestamp: header("webhook-timestamp"),
            signature: header("webhook-signature"),
        };
        let signed_at = standard_webhooks::verify(
            &request.integration.secrets,
            headers,
            request.body,
            self.clock.as_ref(),
            self.tolerance,
        )?;
        Ok(Verified {
            form: Vec::new(),
            signed_at: Some(signed_at),
        })
    }

    fn parse(
        &self,
        request: &Inbound<'_>,
        verified: Verified<'_>,
    ) -> Result<CallEventDraft, ApiError> {
        let webhook_id = request
            .headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok());
        let webhook_id = required_id("webhook-id", webhook_id)?;
        let body: JsonCallEvent = serde_json::from_slice(request.body)
            .map_err(|e| ApiError::Malformed(describe_json_error(&e)))?;
        let integration = request.integration;
        check_tenant(integration, body.tenant_id.as_deref())?;
        let call_id = required_id("call_id", body.call_id.as_deref())?;
        let contact_id = required_id("contact_id", body.contact_id.as_deref())?;
        let provider_status = required_id("status", body.status.as_deref())?;
        let launch_id = optional_uuid("launch_id", body.launch_id.as_deref())?;
        let analysis = match body.analysis {
            None => None,
            Some(a) => Some(CallAnalysis {
                summary: optional_text("analysis.summary", a.summary, MAX_SUMMARY_CHARS)?,
                interested: a.interested,
                callback_requested: a.callback_requested,
                callback_phrase: optional_text(
                    "analysis.callback_phrase",
                    a.callback_phrase,
                    MAX_PHRASE_CHARS,
                )?,
                do_not_call: a.do_not_call,
                wants_person: a.wants_person,
                request_phrase: optional_text(
                    "analysis.request_phrase",
                    a.request_phrase,
                    MAX_PHRASE_CHARS,
                )?,
            }),
        };
        let signed_at = verified
            .signed_at
            .and_then(|s| DateTime::from_timestamp(s, 0));
        let occurred_at = body
            .occurred_at
            .or(signed_at)
            .unwrap_or(request.received_at);
        let duration_seconds = match body.duration_seconds.map(i32::try_from) {
            None => None,
            Some(Ok(d)) => Some(d),
            Some(Err(_)) => {
                return Err(ApiError::Unprocessable {
                    field: "duration_seconds",
                    problem: "is too large",
                })
            }
        };
        let event_id = ids::gateway::json_call_event(&integration.tenant_id, &webhook_id);
        Ok(CallEventDraft {
            event_id,
            tenant_id: integration.tenant_id.clone(),
            integration_id: integration.id.clone(),
            provider: ProviderKind::Json,
            provider_event_id: webhook_id,
            call_id,
            contact_id,
            launch_id,
            campaign_id: optional_id("campaign_id", body.campaign_id.as_deref())?,
            provider_status,
            provider_error: optional_text("error", body.error, MAX_PHRASE_CHARS)?,
            occurred_at,
            received_at: request.received_at,
            duration_seconds,
            answered_by: optional_id("answered_by", body.answered_by.as_deref())?,
            sequence_number: None,
            reported_time_zone: optional_time_zone("time_zone", body.time_zone.as_deref())?,
            analysis,
            correlation_id: correlation_header(request.headers),
        })
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;

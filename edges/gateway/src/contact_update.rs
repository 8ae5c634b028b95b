//! Contact updates from the CRM: `POST /v1/contact-updates`, with the same
//! tenant token and rate limit as launch requests. What the CRM knows of a contact changed (a number, a
//! zone, a restriction such as do-not-call) without asking for a call: one
//! `ContactCommand` of kind `contact_update` on `contact-commands`, keyed by
//! the contact, answered 202 with the command id once Kafka has it.
//!
//! The contact processor cancels every future job of the contact at once
//! when a restriction comes into force, and never lets the CRM lift one the
//! lead or an operator set. The command id is derived from the tenant and
//! the CRM's `request_id`, so a retried update keeps its id.

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::app::AppState;
use crate::error::ApiError;
use crate::event::ContactUpdateDraft;
use crate::launch::{contact_details, tenant_intake, ContactBody, Intake};
use crate::metrics::Route;
use crate::provider::json::describe_json_error;
use crate::provider::{correlation_header, optional_text, required_id};
use callstream_domain::ids;
use callstream_domain::input::MAX_REASON_CHARS;

/// The request body (documented in the README).
#[derive(Debug, Deserialize)]
pub struct ContactUpdateBody {
    pub request_id: Option<String>,
    pub contact_id: Option<String>,
    pub reason: Option<String>,
    pub contact: Option<ContactBody>,
}

/// Reads a contact update out of a body: `request_id`, `contact_id` and a
/// `contact` with at least one field are required.
pub fn parse(
    tenant_id: &str,
    body: &[u8],
    headers: &HeaderMap,
    received_at: DateTime<Utc>,
) -> Result<ContactUpdateDraft, ApiError> {
    let body: ContactUpdateBody =
        serde_json::from_slice(body).map_err(|e| ApiError::Malformed(describe_json_error(&e)))?;
    let request_id = required_id("request_id", body.request_id.as_deref())?;
    let contact_id = required_id("contact_id", body.contact_id.as_deref())?;
    let contact = contact_details(body.contact.unwrap_or_default())?;
    if contact == Default::default() {
        return Err(ApiError::missing("contact"));
    }
    Ok(ContactUpdateDraft {
        command_id: ids::gateway::contact_update(tenant_id, &request_id),
        tenant_id: tenant_id.to_string(),
        request_id,
        contact_id,
        contact,
        reason: optional_text("reason", body.reason, MAX_REASON_CHARS)?,
        received_at,
        correlation_id: correlation_header(headers),
    })
}

pub(crate) async fn contact_update(State(state): State<AppState>, request: Request) -> Response {
    tenant_intake(
        &state,
        request,
        Route::ContactUpdate,
        |inner, tenant, body, headers| {
            let draft = parse(tenant, body, headers, callstream_platform::clock::now_utc())?;
            Ok(Intake {
                command_id: draft.command_id,
                correlation_id: draft.correlation_id,
                contact_id: draft.contact_id.clone(),
                encoded: inner.codec.contact_update(draft).map_err(|e| {
                    tracing::error!(error = %e, "contact update does not encode");
                    ApiError::Internal
                })?,
            })
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_parse_keep_their_id_and_need_something_to_say() {
        let body = br#"{"request_id":"crm-9","contact_id":"c-1","reason":"opted out by email","contact":{"do_not_call":true}}"#;
        let now = Utc::now();
        let a = parse("acme", body, &HeaderMap::new(), now).unwrap();
        assert_eq!(a.contact.do_not_call, Some(true));
        assert_eq!(a.contact_id, "c-1");
        assert_eq!(
            a.command_id,
            parse("acme", body, &HeaderMap::new(), now)
                .unwrap()
                .command_id
        );
        assert_ne!(
            a.command_id,
            crate::launch::parse(
                "acme",
                br#"{"request_id":"crm-9","contact_id":"c-1","campaign_id":"x"}"#,
                &HeaderMap::new(),
                now
            )
            .unwrap()
            .command_id,
            "a launch request with the same request id is another command"
        );
        for refused in [
            &br#"{"contact_id":"c","contact":{"spam":true}}"#[..],
            br#"{"request_id":"r","contact":{"spam":true}}"#,
            br#"{"request_id":"r","contact_id":"c"}"#,
            br#"{"request_id":"r","contact_id":"c","contact":{}}"#,
        ] {
            let error = parse("acme", refused, &HeaderMap::new(), now).unwrap_err();
            assert_eq!(
                error.code(),
                "invalid_event",
                "{}",
                String::from_utf8_lossy(refused)
            );
        }
    }
}

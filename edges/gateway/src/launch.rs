//! Launch intake for the CRM: `POST /v1/launch-requests` with a tenant's
//! bearer token asks for a call to a contact in a campaign. It becomes one
//! `ContactCommand` (kind `launch_request`) on `contact-commands`, keyed by
//! the contact, answered 202 with the command id once Kafka has it. The
//! contact-update route (`contact_update`) shares this path.
//!
//! The tenant is the one whose token matched; tokens are compared by their
//! SHA-256 in constant time, against every configured hash. The command id
//! is derived from the tenant and the CRM's `request_id`, so a retried
//! request gets the id it had the first time.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use crate::app::{spend, AppState, Budgeted, Inner};
use crate::codec::Encoded;
use crate::config::{hash_token, TenantConfig};
use crate::error::ApiError;
use crate::event::{ContactDetails, LaunchRequestDraft};
use crate::intake::{accepted, produce, read_body, RecordHeaders};
use crate::metrics::{Outcome, Route, ACCEPTED};
use crate::provider::json::describe_json_error;
use crate::provider::{
    content_type_is, correlation_header, optional_phone, optional_state, optional_text,
    optional_time_zone, required_id,
};
use crate::verify::ct_eq;
use callstream_domain::ids;
use callstream_domain::input::MAX_REASON_CHARS;

/// The request body (documented in the README).
#[derive(Debug, Deserialize)]
pub struct LaunchRequestBody {
    pub request_id: Option<String>,
    pub contact_id: Option<String>,
    pub campaign_id: Option<String>,
    pub not_before: Option<DateTime<Utc>>,
    pub reason: Option<String>,
    pub contact: Option<ContactBody>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ContactBody {
    pub phone_number: Option<String>,
    pub time_zone: Option<String>,
    pub do_not_call: Option<bool>,
    pub blocked: Option<bool>,
    pub enrolled_student: Option<bool>,
    pub spam: Option<bool>,
    /// The US state on the contact record (`FL`, `US-FL` or `Florida`).
    pub state: Option<String>,
}

/// The bearer token of an `Authorization` header, if it has one.
pub fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, token) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = token.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// The tenant whose token hash matches. Every hash is compared, so the time
/// taken does not depend on which one (if any) matched.
pub(crate) fn tenant_for<'t>(
    tenants: &'t [Budgeted<TenantConfig>],
    token: &[u8],
) -> Option<&'t Budgeted<TenantConfig>> {
    let presented = hash_token(token);
    let mut found = None;
    for tenant in tenants {
        for hash in &tenant.config.token_hashes {
            let matched = ct_eq(hash.expose(), presented.expose());
            if matched && found.is_none() {
                found = Some(tenant);
            }
        }
    }
    found
}

/// The contact's details as the caller gave them, with the ids checked.
pub(crate) fn contact_details(c: ContactBody) -> Result<ContactDetails, ApiError> {
    Ok(ContactDetails {
        phone_number: optional_phone("contact.phone_number", c.phone_number.as_deref())?,
        time_zone: optional_time_zone("contact.time_zone", c.time_zone.as_deref())?,
        do_not_call: c.do_not_call,
        blocked: c.blocked,
        enrolled_student: c.enrolled_student,
        spam: c.spam,
        state: optional_state("contact.state", c.state.as_deref())?,
    })
}

/// Reads a launch request out of a body.
pub fn parse(
    tenant_id: &str,
    body: &[u8],
    headers: &HeaderMap,
    received_at: DateTime<Utc>,
) -> Result<LaunchRequestDraft, ApiError> {
    let body: LaunchRequestBody =
        serde_json::from_slice(body).map_err(|e| ApiError::Malformed(describe_json_error(&e)))?;
    let request_id = required_id("request_id", body.request_id.as_deref())?;
    let contact_id = required_id("contact_id", body.contact_id.as_deref())?;
    let campaign_id = required_id("campaign_id", body.campaign_id.as_deref())?;
    let contact = body.contact.map(contact_details).transpose()?;
    Ok(LaunchRequestDraft {
        command_id: ids::gateway::launch_request(tenant_id, &request_id),
        tenant_id: tenant_id.to_string(),
        request_id,
        contact_id,
        campaign_id,
        not_before: body.not_before,
        contact,
        reason: optional_text("reason", body.reason, MAX_REASON_CHARS)?,
        received_at,
        correlation_id: correlation_header(headers),
    })
}

pub(crate) async fn launch_request(State(state): State<AppState>, request: Request) -> Response {
    tenant_intake(
        &state,
        request,
        Route::LaunchRequest,
        |inner, tenant, body, headers| {
            let draft = parse(tenant, body, headers, callstream_platform::clock::now_utc())?;
            let intake = Intake {
                command_id: draft.command_id,
                correlation_id: draft.correlation_id,
                contact_id: draft.contact_id.clone(),
                encoded: inner.codec.launch_request(draft).map_err(|e| {
                    tracing::error!(error = %e, "launch request does not encode");
                    ApiError::Internal
                })?,
            };
            Ok(intake)
        },
    )
    .await
}

/// A tenant's command, parsed and encoded, ready for `contact-commands`.
pub(crate) struct Intake {
    pub command_id: Uuid,
    pub correlation_id: Option<Uuid>,
    pub contact_id: String,
    pub encoded: Encoded,
}

/// The CRM's intake routes (launch requests, contact updates): the tenant
/// by its bearer token, then [`accept`]; the outcome is counted and logged.
pub(crate) async fn tenant_intake(
    state: &AppState,
    request: Request,
    route: Route,
    parse: impl FnOnce(&Inner, &str, &[u8], &HeaderMap) -> Result<Intake, ApiError>,
) -> Response {
    let started = Instant::now();
    let inner = &*state.0;
    let (parts, body) = request.into_parts();
    let token = bearer(&parts.headers);
    let has_token = token.is_some();
    let tenant = token.and_then(|token| tenant_for(&inner.tenants, token));
    let result = match (has_token, tenant) {
        (false, _) => Err(ApiError::MissingToken),
        (true, None) => Err(ApiError::BadToken),
        (true, Some(tenant)) => accept(state, tenant, parts, body, parse).await,
    };
    let (code, status, id, response) = match result {
        Ok(id) => (ACCEPTED, 202, Some(id), accepted("command_id", id)),
        Err(e) => (e.code(), e.status().as_u16(), None, e.into_response()),
    };
    inner.metrics.record(&Outcome {
        route,
        code,
        status,
        integration: None,
        tenant: tenant.map(|t| t.config.tenant_id.as_str()),
        event_id: id,
        elapsed: started.elapsed(),
    });
    response
}

/// A JSON body within the size limit, within the tenant's rate limit,
/// parsed, then produced to `contact-commands` keyed by the contact; the
/// command id once Kafka has it.
async fn accept(
    state: &AppState,
    tenant: &Budgeted<TenantConfig>,
    parts: Parts,
    body: Body,
    parse: impl FnOnce(&Inner, &str, &[u8], &HeaderMap) -> Result<Intake, ApiError>,
) -> Result<Uuid, ApiError> {
    let inner = &*state.0;
    let headers = &parts.headers;
    if !content_type_is(headers, "application/json") {
        return Err(ApiError::WrongContentType {
            expected: "application/json",
        });
    }
    let body = read_body(headers, body, inner.max_body_bytes).await?;
    spend(&tenant.limiter)?;
    let intake = parse(inner, &tenant.config.tenant_id, &body, headers)?;
    let record_headers = RecordHeaders::new(intake.command_id, intake.correlation_id, headers);
    // As for webhooks: nothing of the request is needed past this point.
    drop((parts, body));
    produce(
        inner,
        &inner.contact_commands,
        callstream_platform::topics::CONTACT_COMMANDS,
        &intake.contact_id,
        &intake.encoded,
        &record_headers,
    )
    .await?;
    Ok(intake.command_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn bearer_tokens() {
        let cases: &[(Option<&str>, Option<&[u8]>)] = &[
            (None, None),
            (Some("Bearer abc"), Some(b"abc")),
            (Some("bearer  abc "), Some(b"abc")),
            (Some("Basic abc"), None),
            (Some("Bearer "), None),
            (Some("Bearer"), None),
        ];
        for (header, want) in cases {
            let mut headers = HeaderMap::new();
            if let Some(h) = header {
                headers.insert(header::AUTHORIZATION, HeaderValue::from_static(h));
            }
            assert_eq!(bearer(&headers), *want, "{header:?}");
        }
    }

    #[test]
    fn tokens_pick_their_tenant() {
        let budget = |config: TenantConfig| Budgeted {
            limiter: crate::app::limiter(config.rate_limit),
            config,
        };
        let tenants = vec![
            budget(TenantConfig::with_tokens("acme", &["a-old", "a-new"])),
            budget(TenantConfig::with_tokens("globex", &["g"])),
        ];
        let find = |t: &str| tenant_for(&tenants, t.as_bytes()).map(|t| t.config.tenant_id.clone());
        assert_eq!(find("a-old").as_deref(), Some("acme"));
        assert_eq!(find("a-new").as_deref(), Some("acme"));
        assert_eq!(find("g").as_deref(), Some("globex"));
        assert_eq!(find("a-ol"), None);
        assert_eq!(find(""), None);
    }

    #[test]
    fn a_contact_state_is_kept_as_its_code_and_an_unknown_one_refused() {
        let now = Utc::now();
        let with_state = |state: &str| {
            let body = format!(
                r#"{{"request_id":"r","contact_id":"c","campaign_id":"x","contact":{{"state":"{state}"}}}}"#
            );
            parse("acme", body.as_bytes(), &HeaderMap::new(), now)
        };
        for given in ["FL", "us-fl", "Florida"] {
            let draft = with_state(given).unwrap();
            assert_eq!(
                draft.contact.and_then(|c| c.state).as_deref(),
                Some("FL"),
                "{given}"
            );
        }
        let refused = with_state("Narnia").unwrap_err();
        assert!(
            matches!(
                refused,
                ApiError::Invalid {
                    field: "contact.state",
                    ..
                }
            ),
            "{refused:?}"
        );
    }

    #[test]
    fn requests_parse_and_keep_their_id() {
        let body = br#"{"request_id":"crm-1","contact_id":"c-1","campaign_id":"spring","contact":{"phone_number":"+15551234567","time_zone":"America/Denver"}}"#;
        let now = Utc::now();
        let a = parse("acme", body, &HeaderMap::new(), now).unwrap();
        assert_eq!(
            (a.contact_id.as_str(), a.campaign_id.as_str()),
            ("c-1", "spring")
        );
        assert_eq!(
            a.contact.as_ref().and_then(|c| c.time_zone.as_deref()),
            Some("America/Denver")
        );
        let again = parse("acme", body, &HeaderMap::new(), now).unwrap();
        assert_eq!(a.command_id, again.command_id);
        assert_ne!(
            a.command_id,
            parse("globex", body, &HeaderMap::new(), now)
                .unwrap()
                .command_id
        );
        let cases = [
            (
                &br#"{"contact_id":"c","campaign_id":"x"}"#[..],
                "invalid_event",
            ),
            (br#"{"request_id":"r","campaign_id":"x"}"#, "invalid_event"),
            (br#"{"request_id":"r","contact_id":"c"}"#, "invalid_event"),
            (
                br#"{"request_id":"r","contact_id":"c","campaign_id":"x","not_before":"soon"}"#,
                "malformed_body",
            ),
            (b"[]", "malformed_body"),
        ];
        for (body, code) in cases {
            let err = parse("acme", body, &HeaderMap::new(), now).unwrap_err();
            assert_eq!(err.code(), code, "{}", String::from_utf8_lossy(body));
        }
    }
}

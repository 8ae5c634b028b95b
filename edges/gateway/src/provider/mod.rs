//! The voice-platform formats, behind one trait: each provider checks its
//! signature over the raw request, then (and only then) reads the event out
//! of it. Tenant and integration come from configuration; the contact and
//! launch ids only from signed parts of the request.
//!
//! Two steps, not one, so the caller can spend the integration's rate
//! budget only on requests that really came from the provider.

pub mod json;
pub mod twilio;

use std::borrow::Cow;

use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use callstream_domain::input;

use crate::config::IntegrationConfig;
use crate::error::ApiError;
use crate::event::{CallEventDraft, ProviderKind};

/// Longest id (call, contact, launch, webhook) accepted: ids become Kafka
/// keys, headers and URL path segments (the rule is `callstream_domain::input`'s).
pub const MAX_ID_LEN: usize = input::MAX_ID_BYTES;

/// One webhook request as received.
#[derive(Debug, Clone, Copy)]
pub struct Inbound<'a> {
    pub integration: &'a IntegrationConfig,
    /// Path and query exactly as received (Twilio signs them).
    pub path_and_query: &'a str,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    pub received_at: DateTime<Utc>,
}

/// What signature verification established, handed to `parse`.
#[derive(Debug, Default)]
pub struct Verified<'a> {
    /// Decoded form fields (Twilio), already needed to check the signature.
    pub form: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// The signed timestamp (Standard Webhooks), Unix seconds.
    pub signed_at: Option<i64>,
}

/// One voice-platform format.
pub trait Provider: Send + Sync + 'static {
    fn kind(&self) -> ProviderKind;

    /// The media type the provider posts (parameters such as `charset` ignored).
    fn content_type(&self) -> &'static str;

    /// Checks the signature with the integration's secrets. Reads nothing
    /// out of the body beyond what the signature scheme itself needs.
    fn verify<'a>(&self, request: &Inbound<'a>) -> Result<Verified<'a>, ApiError>;

    /// Reads the call event out of a verified request.
    fn parse(
        &self,
        request: &Inbound<'_>,
        verified: Verified<'_>,
    ) -> Result<CallEventDraft, ApiError>;
}

/// Whether the `Content-Type` header names `expected` (case-insensitive,
/// parameters ignored).
pub fn content_type_is(headers: &HeaderMap, expected: &str) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(expected))
}

/// A required id: present, non-empty, and an id by `callstream_domain::input`'s rule.
pub fn required_id(field: &'static str, value: Option<&str>) -> Result<String, ApiError> {
    match value {
        None | Some("") => Err(ApiError::missing(field)),
        Some(v) => check(field, v, input::check_id).map(str::to_string),
    }
}

/// An optional id: absent or empty is `None`; otherwise checked like a required one.
pub fn optional_id(field: &'static str, value: Option<&str>) -> Result<Option<String>, ApiError> {
    optional(field, value, input::check_id)
}

/// Optional free text of at most `max_chars` characters, without control characters
/// other than tab and line breaks. Absent or empty is `None`.
pub fn optional_text(
    field: &'static str,
    value: Option<String>,
    max_chars: usize,
) -> Result<Option<String>, ApiError> {
    match value {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => {
            check(field, &v, |v| input::check_text(v, max_chars))?;
            Ok(Some(v))
        }
    }
}

/// An optional phone number, E.164 only.
pub fn optional_phone(
    field: &'static str,
    value: Option<&str>,
) -> Result<Option<String>, ApiError> {
    optional(field, value, input::check_e164)
}

/// An optional IANA time zone name.
pub fn optional_time_zone(
    field: &'static str,
    value: Option<&str>,
) -> Result<Option<String>, ApiError> {
    optional(field, value, input::check_time_zone)
}

/// An optional US state, as its two-letter code.
pub fn optional_state(
    field: &'static str,
    value: Option<&str>,
) -> Result<Option<String>, ApiError> {
    match value {
        None | Some("") => Ok(None),
        Some(v) => input::normal_state(v)
            .map(Some)
            .map_err(|refusal| ApiError::Invalid { field, refusal }),
    }
}

fn optional(
    field: &'static str,
    value: Option<&str>,
    rule: fn(&str) -> Result<(), input::Refusal>,
) -> Result<Option<String>, ApiError> {
    match value {
        None | Some("") => Ok(None),
        Some(v) => check(field, v, rule).map(|v| Some(v.to_string())),
    }
}

fn check<'v>(
    field: &'static str,
    value: &'v str,
    rule: impl FnOnce(&str) -> Result<(), input::Refusal>,
) -> Result<&'v str, ApiError> {
    rule(value)
        .map(|()| value)
        .map_err(|refusal| ApiError::Invalid { field, refusal })
}

/// The chain a caller says this request continues (`X-Correlation-Id`),
/// if it is a UUID (correlation ids are event ids). Anything else is
/// ignored rather than refused: it is a hint, not part of the event.
pub fn correlation_header(headers: &HeaderMap) -> Option<Uuid> {
    let value = headers.get("x-correlation-id")?.to_str().ok()?;
    Uuid::try_parse(value.trim()).ok()
}

/// An optional id that must be a UUID (launch ids are operation ids).
pub fn optional_uuid(field: &'static str, value: Option<&str>) -> Result<Option<Uuid>, ApiError> {
    match value {
        None | Some("") => Ok(None),
        Some(v) => Uuid::try_parse(v)
            .map(Some)
            .map_err(|_| ApiError::Unprocessable {
                field,
                problem: "is not a UUID",
            }),
    }
}

/// A signed tenant field must agree with the integration's tenant.
pub fn check_tenant(
    integration: &IntegrationConfig,
    claimed: Option<&str>,
) -> Result<(), ApiError> {
    match claimed {
        Some(t) if !t.is_empty() && t != integration.tenant_id => Err(ApiError::Unprocessable {
            field: "tenant",
            problem: "does not match the integration's tenant",
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn content_types() {
        let cases = [
            (Some("application/json"), "application/json", true),
            (
                Some("Application/JSON; charset=utf-8"),
                "application/json",
                true,
            ),
            (Some("application/jsonx"), "application/json", false),
            (Some("text/plain"), "application/json", false),
            (None, "application/json", false),
        ];
        for (header, expected, want) in cases {
            let mut headers = HeaderMap::new();
            if let Some(h) = header {
                headers.insert("content-type", HeaderValue::from_static(h));
            }
            assert_eq!(content_type_is(&headers, expected), want, "{header:?}");
        }
    }

    #[test]
    fn ids() {
        assert_eq!(required_id("f", Some("c-1")), Ok("c-1".into()));
        assert_eq!(required_id("f", None), Err(ApiError::missing("f")));
        assert_eq!(required_id("f", Some("")), Err(ApiError::missing("f")));
        assert!(required_id("f", Some(&"x".repeat(MAX_ID_LEN + 1))).is_err());
        assert!(required_id("f", Some("a\nb")).is_err());
        assert_eq!(optional_id("f", Some("")), Ok(None));
    }

    #[test]
    fn correlation_ids() {
        let mut headers = HeaderMap::new();
        assert_eq!(correlation_header(&headers), None);
        headers.insert("x-correlation-id", HeaderValue::from_static("not-a-uuid"));
        assert_eq!(correlation_header(&headers), None);
        let id = "6f1c2a4e-8b9d-4c3e-a1f2-0b1c2d3e4f50";
        headers.insert("x-correlation-id", HeaderValue::from_static(id));
        assert_eq!(correlation_header(&headers), Uuid::try_parse(id).ok());
    }

    #[test]
    fn uuids() {
        assert_eq!(optional_uuid("f", None), Ok(None));
        assert!(optional_uuid("f", Some("l-9")).is_err());
        assert!(
            optional_uuid("f", Some("6f1c2a4e-8b9d-4c3e-a1f2-0b1c2d3e4f50"))
                .unwrap()
                .is_some()
        );
    }
}

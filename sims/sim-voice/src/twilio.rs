//! Twilio's JSON shapes: the call resource, the paged list, the call
//! `Events` subresource, and the error body (`code`, `message`,
//! `more_info`, `status`) every refusal carries. Dates are RFC 2822, as
//! Twilio writes them; `duration` is a string of seconds.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::store::CallRecord;

/// A refusal, as Twilio words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct TwilioError {
    pub status: StatusCode,
    pub code: u32,
    pub message: String,
}

impl TwilioError {
    pub fn new(status: StatusCode, code: u32, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// 401: the credentials are missing or wrong.
    pub fn authenticate() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, 20003, "Authenticate")
    }

    /// 404 for a resource path.
    pub fn not_found(path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            20404,
            format!("The requested resource {path} was not found"),
        )
    }

    /// 400 with a validation code.
    pub fn invalid(code: u32, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// The injected create failure.
    pub fn server(status: u16) -> Self {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let message = status.canonical_reason().unwrap_or("Internal Server Error");
        Self::new(status, 20000 + u32::from(status.as_u16()), message)
    }
}

impl IntoResponse for TwilioError {
    fn into_response(self) -> Response {
        let body = json!({
            "code": self.code,
            "message": self.message,
            "more_info": format!("https://www.twilio.com/docs/errors/{}", self.code),
            "status": self.status.as_u16(),
        });
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"Twilio API\""),
            );
        }
        response
    }
}

/// `/2010-04-01/Accounts/{account}/Calls`.
pub fn calls_path(account: &str) -> String {
    format!("/2010-04-01/Accounts/{account}/Calls")
}

/// US numbers as Twilio formats them, others as given.
fn formatted(number: &str) -> String {
    match number.strip_prefix("+1") {
        Some(rest) if rest.len() == 10 && rest.chars().all(|c| c.is_ascii_digit()) => {
            format!("({}) {}-{}", &rest[..3], &rest[3..6], &rest[6..])
        }
        _ => number.to_string(),
    }
}

/// The call resource, as Twilio writes it: a typed twin of the JSON, so a
/// create's answer is serialized straight from the record rather than
/// through a `Value` tree (a map of some thirty owned keys and strings per
/// call). Fields in alphabetical order, as a `serde_json::Map` orders them:
/// both shapes write the same bytes.
#[derive(Debug, Serialize)]
pub struct CallResource<'a> {
    account_sid: &'a str,
    /// Always null here.
    annotation: (),
    answered_by: Option<&'a str>,
    api_version: &'static str,
    caller_name: (),
    date_created: String,
    date_updated: String,
    direction: &'static str,
    duration: Option<String>,
    end_time: Option<String>,
    forwarded_from: (),
    from: &'a str,
    from_formatted: String,
    group_sid: (),
    parent_call_sid: (),
    phone_number_sid: (),
    price: (),
    price_unit: &'static str,
    queue_time: String,
    sid: &'a str,
    start_time: String,
    status: &'static str,
    subresource_uris: SubresourceUris,
    to: &'a str,
    to_formatted: String,
    trunk_sid: (),
    uri: String,
}

#[derive(Debug, Serialize)]
struct SubresourceUris {
    events: String,
    notifications: String,
    recordings: String,
}

impl<'a> CallResource<'a> {
    pub fn of(account: &'a str, c: &'a CallRecord) -> Self {
        let base = format!("{}/{}", calls_path(account), c.sid);
        let sub = |name: &str| format!("{base}/{name}.json");
        let queue_ms = c.start_time.signed_duration_since(c.created_at);
        Self {
            sid: &c.sid,
            account_sid: account,
            annotation: (),
            answered_by: c.answered_by,
            api_version: "2010-04-01",
            caller_name: (),
            date_created: c.created_at.to_rfc2822(),
            date_updated: c.updated_at.to_rfc2822(),
            direction: "outbound-api",
            duration: c.duration.map(|d| d.to_string()),
            end_time: c.end_time.map(|d| d.to_rfc2822()),
            forwarded_from: (),
            from: &c.from,
            from_formatted: formatted(&c.from),
            group_sid: (),
            parent_call_sid: (),
            phone_number_sid: (),
            price: (),
            price_unit: "USD",
            queue_time: queue_ms.num_milliseconds().max(0).to_string(),
            start_time: c.start_time.to_rfc2822(),
            status: c.status.as_str(),
            subresource_uris: SubresourceUris {
                events: sub("Events"),
                notifications: sub("Notifications"),
                recordings: sub("Recordings"),
            },
            to: &c.to,
            to_formatted: formatted(&c.to),
            trunk_sid: (),
            uri: format!("{base}.json"),
        }
    }
}

/// The call resource as a JSON value (fetch and list build pages of them).
pub fn call_json(account: &str, c: &CallRecord) -> Value {
    serde_json::to_value(CallResource::of(account, c)).unwrap_or(Value::Null)
}

/// One page of the list: `calls`, `page`, `page_size`, `start`, `end`,
/// `uri`, `first_page_uri`, `next_page_uri`, `previous_page_uri`.
pub fn list_json(
    account: &str,
    page_calls: &[CallRecord],
    page: usize,
    page_size: usize,
    has_next: bool,
    filter_query: &str,
) -> Value {
    let path = format!("{}.json", calls_path(account));
    let uri = |p: usize| {
        let sep = if filter_query.is_empty() { "" } else { "&" };
        format!("{path}?{filter_query}{sep}PageSize={page_size}&Page={p}")
    };
    let start = page * page_size;
    let end = (start + page_calls.len()).saturating_sub(1);
    json!({
        "calls": page_calls.iter().map(|c| call_json(account, c)).collect::<Vec<_>>(),
        "page": page,
        "page_size": page_size,
        "start": start,
        "end": end,
        "uri": uri(page),
        "first_page_uri": uri(0),
        "next_page_uri": if has_next { Value::String(uri(page + 1)) } else { Value::Null },
        "previous_page_uri": if page > 0 { Value::String(uri(page - 1)) } else { Value::Null },
    })
}

/// The `Events` subresource: the requests the platform made to the
/// call's `StatusCallback`, with their answers.
pub fn events_json(account: &str, c: &CallRecord) -> Value {
    let url = c.target.as_ref().map(|t| t.url.as_str()).unwrap_or("");
    let events: Vec<Value> = c
        .requests
        .iter()
        .map(|r| {
            let params: Map<String, Value> = r
                .params
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            json!({
                "request": { "method": "POST", "url": url, "parameters": params },
                "response": {
                    "response_code": r.response_code,
                    "request_duration": r.elapsed_ms,
                    "date_created": r.sent_at.to_rfc2822(),
                },
            })
        })
        .collect();
    let here = format!("{}/{}/Events.json", calls_path(account), c.sid);
    json!({
        "events": events,
        "meta": {
            "page": 0,
            "page_size": events.len().max(1),
            "first_page_url": here,
            "previous_page_url": null,
            "url": here,
            "next_page_url": null,
            "key": "events",
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn us_numbers_are_formatted() {
        let cases = [
            ("+15558675310", "(555) 867-5310"),
            ("+442071838750", "+442071838750"),
            ("+1555", "+1555"),
        ];
        for (n, want) in cases {
            assert_eq!(formatted(n), want);
        }
    }

    /// The typed resource writes what the `Value` it replaced wrote (keys
    /// sorted, as `serde_json::Map` sorts them), bytes included.
    #[test]
    fn the_typed_resource_writes_the_same_json() {
        let now = chrono::Utc::now();
        let mut record = CallRecord {
            index: 0,
            sid: "CA0123".into(),
            to: "+15558675310".into(),
            from: "+442071838750".into(),
            created_at: now,
            updated_at: now,
            start_time: now,
            end_time: None,
            status: crate::plan::CallStatus::Queued,
            duration: None,
            answered_by: None,
            target: None,
            outcome: crate::plan::Outcome::Busy,
            intent: None,
            completion_dropped: false,
            vanished: false,
            requests: Vec::new(),
            accepted_event_ids: Vec::new(),
        };
        let old = |c: &CallRecord| {
            let base = format!("{}/{}", calls_path("AC1"), c.sid);
            let sub = |name: &str| format!("{base}/{name}.json");
            json!({
                "sid": c.sid, "account_sid": "AC1", "annotation": null,
                "answered_by": c.answered_by, "api_version": "2010-04-01",
                "caller_name": null, "date_created": c.created_at.to_rfc2822(),
                "date_updated": c.updated_at.to_rfc2822(), "direction": "outbound-api",
                "duration": c.duration.map(|d| d.to_string()),
                "end_time": c.end_time.map(|d| d.to_rfc2822()), "forwarded_from": null,
                "from": c.from, "from_formatted": formatted(&c.from), "group_sid": null,
                "parent_call_sid": null, "phone_number_sid": null, "price": null,
                "price_unit": "USD", "queue_time": "0",
                "start_time": c.start_time.to_rfc2822(), "status": c.status.as_str(),
                "subresource_uris": {
                    "events": sub("Events"), "notifications": sub("Notifications"),
                    "recordings": sub("Recordings"),
                },
                "to": c.to, "to_formatted": formatted(&c.to), "trunk_sid": null,
                "uri": format!("{base}.json"),
            })
        };
        for _ in 0..2 {
            assert_eq!(call_json("AC1", &record), old(&record));
            assert_eq!(
                serde_json::to_string(&CallResource::of("AC1", &record)).unwrap(),
                serde_json::to_string(&old(&record)).unwrap()
            );
            record.status = crate::plan::CallStatus::Completed;
            record.duration = Some(61);
            record.end_time = Some(now);
            record.answered_by = Some("human");
        }
    }

    #[test]
    fn errors_have_twilios_body() {
        let e = TwilioError::server(503);
        assert_eq!(e.code, 20503);
        assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
        let r = TwilioError::authenticate().into_response();
        assert!(r.headers().contains_key(header::WWW_AUTHENTICATE));
    }
}

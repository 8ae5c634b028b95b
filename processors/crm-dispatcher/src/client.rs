//! The HTTP client for the CRM: sends one [`CrmRequest`] with a bearer
//! token and classifies what came back into an [`Outcome`].
//!
//! Guarantee: the classification errs towards "may have been applied". Only
//! a failed connect is `Unreachable` (nothing sent); any other transport
//! error, a timeout, or a 2xx whose body cannot be read is `Unanswered`, so
//! the state machine searches before it writes again.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde::Deserialize;

use crate::request;
use crate::wire::{CrmRequest, Outcome};

/// Longest error text kept from a CRM answer (it goes into results), in bytes.
pub const MAX_MESSAGE: usize = 300;

/// Longest `Retry-After` honoured (one hour): a CRM asking for more still
/// waits that long, and the retry bound still ends the command; a larger
/// value would hold every request of the token back for good.
pub const MAX_RETRY_AFTER_MS: u64 = 3_600_000;

/// A pooled HTTP client for one CRM base URL.
#[derive(Debug, Clone)]
pub struct CrmClient {
    http: reqwest::Client,
    base_url: String,
}

/// The HTTP client could not be built (TLS backend, settings).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the CRM HTTP client: {0}")]
pub struct ClientError(#[from] reqwest::Error);

#[derive(Deserialize)]
struct Created {
    id: String,
}

#[derive(Deserialize)]
struct SearchAnswer {
    #[serde(default)]
    results: Vec<Created>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    message: Option<String>,
    category: Option<String>,
}

impl CrmClient {
    pub fn new(
        base_url: &str,
        request_timeout: Duration,
        connect_timeout: Duration,
        pool_size: usize,
    ) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .timeout(request_timeout)
            .connect_timeout(connect_timeout)
            .pool_max_idle_per_host(pool_size)
            .tcp_nodelay(true)
            .build()?;
        Ok(Self {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
        })
    }

    /// Sends `request` once and says what came of it.
    pub async fn send(&self, token: &str, request: &CrmRequest) -> Outcome {
        let (method, path) = match request.method_and_path() {
            Ok(method_and_path) => method_and_path,
            // A permanent refusal of our own, like the CRM's 400 would be.
            Err(e) => {
                return Outcome::Refused {
                    status: 400,
                    retry_after_ms: None,
                    message: truncated(format!("{e}; nothing was sent"), MAX_MESSAGE),
                }
            }
        };
        let url = format!("{}{path}", self.base_url);
        let builder = match method {
            "PATCH" => self.http.patch(url),
            _ => self.http.post(url),
        };
        let response = builder
            .bearer_auth(token)
            .json(&request::body(request))
            .send()
            .await;
        let response = match response {
            Ok(response) => response,
            Err(error) => return transport_outcome(&error),
        };
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(error) => return transport_outcome(&error),
        };
        answer(request, status, &headers, &bytes)
    }
}

fn transport_outcome(error: &reqwest::Error) -> Outcome {
    // The error's chain names the cause (refused, reset, timed out) and
    // never a body.
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    let message = truncated(message, MAX_MESSAGE);
    if error.is_connect() {
        Outcome::Unreachable { message }
    } else {
        Outcome::Unanswered { message }
    }
}

/// `text` cut to at most `max` bytes, at a character boundary (a plain
/// `String::truncate` panics inside a multi-byte character).
pub fn truncated(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut at = max;
        // Index 0 is always a boundary, so this ends.
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    text
}

/// `Retry-After` in seconds (HubSpot's form), as ms, at most
/// [`MAX_RETRY_AFTER_MS`]. Anything else (a date, a negative or
/// non-finite number, bytes that are not text) is ignored.
fn retry_after(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let seconds: f64 = value.parse().ok()?;
    // The cap comes first, so the product is small and the cast exact.
    (seconds.is_finite() && seconds >= 0.0)
        .then(|| (seconds.min(MAX_RETRY_AFTER_MS as f64 / 1000.0) * 1000.0).ceil() as u64)
}

/// What an HTTP answer (status, headers, body) means for `request`: the
/// whole classification [`CrmClient::send`] applies once the body is read.
/// Any input gives an outcome, never a panic (the fuzz target
/// `crm_answer` holds it to that).
pub fn answer(request: &CrmRequest, status: u16, headers: &HeaderMap, body: &[u8]) -> Outcome {
    classify(request, status, retry_after(headers), body)
}

/// What an HTTP answer means for `request`, `Retry-After` already read.
pub fn classify(
    request: &CrmRequest,
    status: u16,
    retry_after_ms: Option<u64>,
    body: &[u8],
) -> Outcome {
    if !(200..300).contains(&status) {
        let answer: Option<ErrorAnswer> = serde_json::from_slice(body).ok();
        let message = answer
            .and_then(|a| a.message.or(a.category))
            .unwrap_or_else(|| format!("HTTP {status}"));
        return Outcome::Refused {
            status,
            retry_after_ms,
            message: truncated(message, MAX_MESSAGE),
        };
    }
    match request {
        CrmRequest::Search { op_id, .. } => match serde_json::from_slice::<SearchAnswer>(body) {
            Ok(answer) => {
                if answer.results.len() > 1 {
                    tracing::warn!(op_id = %op_id, found = answer.results.len(),
                        "more than one CRM object carries this operation id");
                }
                match answer.results.into_iter().next() {
                    Some(found) => Outcome::Found {
                        object_id: found.id,
                    },
                    None => Outcome::NotFound,
                }
            }
            Err(e) => Outcome::Unanswered {
                message: format!("unreadable search answer: {e}"),
            },
        },
        _ => match serde_json::from_slice::<Created>(body) {
            Ok(created) => Outcome::Written {
                status,
                object_id: created.id,
            },
            Err(e) => Outcome::Unanswered {
                message: format!("unreadable answer to a write: {e}"),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create() -> CrmRequest {
        CrmRequest::Create {
            object_type: "notes".into(),
            properties: Default::default(),
            contact_id: "1".into(),
            association_type_id: 202,
        }
    }

    fn search() -> CrmRequest {
        CrmRequest::Search {
            object_type: "notes".into(),
            op_id: "op".into(),
        }
    }

    #[test]
    fn answers_classify_by_status_and_body() {
        let cases: Vec<(CrmRequest, u16, Option<u64>, &str, Outcome)> = vec![
            (
                create(),
                201,
                None,
                r#"{"id":"55","properties":{}}"#,
                Outcome::Written {
                    status: 201,
                    object_id: "55".into(),
                },
            ),
            (
                create(),
                201,
                None,
                "not json",
                Outcome::Unanswered {
                    message: "unreadable answer to a write: expected ident at line 1 column 2"
                        .into(),
                },
            ),
            (
                search(),
                200,
                None,
                r#"{"total":1,"results":[{"id":"9"}]}"#,
                Outcome::Found {
                    object_id: "9".into(),
                },
            ),
            (
                search(),
                200,
                None,
                r#"{"total":0,"results":[]}"#,
                Outcome::NotFound,
            ),
            (
                create(),
                429,
                Some(2000),
                r#"{"status":"error","message":"You have reached your secondly limit.","category":"RATE_LIMITS"}"#,
                Outcome::Refused {
                    status: 429,
                    retry_after_ms: Some(2000),
                    message: "You have reached your secondly limit.".into(),
                },
            ),
            (
                create(),
                503,
                None,
                "",
                Outcome::Refused {
                    status: 503,
                    retry_after_ms: None,
                    message: "HTTP 503".into(),
                },
            ),
        ];
        for (request, status, retry_after, body, want) in cases {
            assert_eq!(
                classify(&request, status, retry_after, body.as_bytes()),
                want,
                "{status} {body}"
            );
        }
    }

    #[test]
    fn truncation_never_splits_a_character() {
        // "é" is 2 bytes, "€" 3, "😀" 4: each straddles byte 300 here.
        for (pad, ch) in [(299, "é"), (299, "€"), (298, "€"), (297, "😀"), (299, "😀")] {
            let text = format!("{}{ch}{ch}", "a".repeat(pad));
            let cut = truncated(text.clone(), 300);
            assert!(cut.len() <= 300, "{pad} {ch}: {} bytes", cut.len());
            assert!(text.starts_with(&cut));
            assert_eq!(cut.trim_start_matches('a').len() % ch.len(), 0);
            // Nothing more than the split character is dropped.
            assert!(
                cut.len() > 300 - ch.len(),
                "{pad} {ch}: {} bytes",
                cut.len()
            );
        }
        assert_eq!(truncated("short".into(), 300), "short");
        assert_eq!(truncated("ab€".into(), 3), "ab");
        assert_eq!(truncated("€".into(), 0), "");
    }

    #[test]
    fn an_error_message_with_a_multi_byte_character_at_the_limit_is_cut_before_it() {
        let message = format!("{}€ tail", "x".repeat(299));
        let body = serde_json::json!({ "message": message }).to_string();
        let Outcome::Refused { message, .. } = classify(&create(), 400, None, body.as_bytes())
        else {
            panic!("a 400 is a refusal");
        };
        assert_eq!(message, "x".repeat(299));
    }

    #[test]
    fn retry_after_reads_seconds() {
        let cases = [
            ("2", Some(2000)),
            ("0.5", Some(500)),
            ("soon", None),
            ("-1", None),
            ("-0.5", None),
            ("NaN", None),
            ("inf", None),
            ("1e400", None),
            ("Wed, 21 Oct 2015 07:28:00 GMT", None),
            ("1e30", Some(MAX_RETRY_AFTER_MS)),
            ("18446744073709551616", Some(MAX_RETRY_AFTER_MS)),
            ("3600.0001", Some(MAX_RETRY_AFTER_MS)),
            (" 1 ", Some(1000)),
        ];
        for (value, want) in cases {
            let mut headers = HeaderMap::new();
            headers.insert(RETRY_AFTER, value.parse().unwrap());
            assert_eq!(retry_after(&headers), want, "{value}");
        }
    }
}

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

/// Longest error text kept from a CRM answer (it goes into results).
const MAX_MESSAGE: usize = 300;

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
        let (method, path) = request.method_and_path();
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
        let retry_after_ms = retry_after(response.headers());
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(error) => return transport_outcome(&error),
        };
        classify(request, status, retry_after_ms, &bytes)
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
    message.truncate(MAX_MESSAGE);
    if error.is_connect() {
        Outcome::Unreachable { message }
    } else {
        Outcome::Unanswered { message }
    }
}

/// `Retry-After` in seconds (HubSpot's form), as ms.
fn retry_after(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let seconds: f64 = value.parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1000.0).ceil() as u64)
}

/// What an HTTP answer means for `request`.
pub fn classify(
    request: &CrmRequest,
    status: u16,
    retry_after_ms: Option<u64>,
    body: &[u8],
) -> Outcome {
    if !(200..300).contains(&status) {
        let answer: Option<ErrorAnswer> = serde_json::from_slice(body).ok();
        let mut message = answer
            .and_then(|a| a.message.or(a.category))
            .unwrap_or_else(|| format!("HTTP {status}"));
        message.truncate(MAX_MESSAGE);
        return Outcome::Refused {
            status,
            retry_after_ms,
            message,
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
    fn retry_after_reads_seconds() {
        let cases = [
            ("2", Some(2000)),
            ("0.5", Some(500)),
            ("soon", None),
            ("-1", None),
        ];
        for (value, want) in cases {
            let mut headers = HeaderMap::new();
            headers.insert(RETRY_AFTER, value.parse().unwrap());
            assert_eq!(retry_after(&headers), want, "{value}");
        }
    }
}

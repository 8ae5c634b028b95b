//! Error answers as RFC 9457 problem details (`application/problem+json`), the one shape
//! every HTTP service of callstream refuses a request with.
//!
//! `type` is `about:blank` and `title` the status's reason phrase, as the RFC asks when
//! the status says it all; what a program branches on is the extension member `code`,
//! stable per service (documented in each service's README). `detail` is for people and
//! never echoes what the client sent. `field`, when present, names the input refused.

use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::Serialize;
use tower_http::timeout::TimeoutLayer;

/// The media type of every error answer.
pub const CONTENT_TYPE: &str = "application/problem+json";

/// One problem detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub title: &'static str,
    pub status: u16,
    pub detail: String,
    /// Stable and machine-readable (extension member).
    pub code: &'static str,
    /// The request field that was refused, when one was (extension member).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            kind: "about:blank",
            title: status.canonical_reason().unwrap_or("Error"),
            status: status.as_u16(),
            detail: detail.into(),
            code,
            field: None,
        }
    }

    /// Names the refused field.
    pub fn with_field(mut self, field: &'static str) -> Self {
        self.field = Some(field);
        self
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(self)).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        response
    }
}

/// `Retry-After` in whole seconds: rounded up, so a client that waits it is not refused
/// again for a fraction of a second, and at least 1, since 0 reads as "now".
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

/// Bounds every request of `router`, the reading of its body included, by `timeout`;
/// past it the answer is a 408 problem with the code `request_timeout` (tower-http's own
/// 408 has no body).
pub fn with_request_timeout(router: Router, timeout: Duration) -> Router {
    router
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .layer(axum::middleware::map_response(timeout_as_problem))
}

async fn timeout_as_problem(response: Response) -> Response {
    let bare = response.status() == StatusCode::REQUEST_TIMEOUT
        && !response.headers().contains_key(header::CONTENT_TYPE);
    if !bare {
        return response;
    }
    Problem::new(
        StatusCode::REQUEST_TIMEOUT,
        "request_timeout",
        "the request did not arrive whole in time",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::to_bytes;

    use super::*;

    #[test]
    fn retry_after_is_whole_seconds_rounded_up_and_at_least_one() {
        let cases = [
            (Duration::ZERO, 1),
            (Duration::from_millis(1), 1),
            (Duration::from_millis(999), 1),
            (Duration::from_millis(1000), 1),
            (Duration::from_millis(1001), 2),
            (Duration::from_millis(2500), 3),
            (Duration::from_secs(30), 30),
        ];
        for (wait, want) in cases {
            assert_eq!(retry_after_secs(wait), want, "{wait:?}");
        }
    }

    #[tokio::test]
    async fn a_request_past_its_timeout_is_a_408_problem() {
        use tower::ServiceExt;
        let slow = Router::new().route(
            "/",
            axum::routing::get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        );
        let router = with_request_timeout(slow, Duration::from_millis(10));
        let request = axum::http::Request::get("/")
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(response.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        let body = to_bytes(response.into_body(), 4096).await.unwrap();
        assert!(std::str::from_utf8(&body)
            .unwrap()
            .contains(r#""code":"request_timeout""#));
    }

    #[tokio::test]
    async fn a_problem_is_problem_json_with_its_code_and_field() {
        let response = Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_event",
            "field `reason` is bad",
        )
        .with_field("reason")
        .into_response();
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(response.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        let body = to_bytes(response.into_body(), 4096).await.unwrap();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            r#"{"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"field `reason` is bad","code":"invalid_event","field":"reason"}"#
        );
    }
}

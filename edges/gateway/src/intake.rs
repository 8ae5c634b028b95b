//! Request plumbing shared by the webhook and launch-intake handlers:
//! bounded body reading, the record headers, and the produce that maps
//! "not confirmed by Kafka" to 503.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use callstream_schemas::headers;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use uuid::Uuid;

use crate::app::Inner;
use crate::codec::Encoded;
use crate::error::ApiError;
use crate::publish::{Outgoing, PublishError};

/// How long a client is asked to wait after a 503.
pub const UNAVAILABLE_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Reads the body, refusing more than `limit` bytes before buffering them.
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ApiError::TooLarge { limit });
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(ApiError::TooLarge { limit })
        }
        Err(_) => Err(ApiError::Malformed("the body could not be read".into())),
    }
}

/// The record headers every produced event carries.
pub(crate) struct RecordHeaders {
    event_id: [u8; 36],
    correlation_id: [u8; 36],
    traceparent: String,
}

impl RecordHeaders {
    pub fn new(event_id: Uuid, correlation_id: Option<Uuid>, headers: &HeaderMap) -> Self {
        let mut e = [0u8; 36];
        let mut c = [0u8; 36];
        event_id.hyphenated().encode_lower(&mut e);
        correlation_id
            .unwrap_or(event_id)
            .hyphenated()
            .encode_lower(&mut c);
        let incoming = headers.get("traceparent").map(|v| v.as_bytes());
        Self {
            event_id: e,
            correlation_id: c,
            traceparent: crate::trace::child_of(incoming),
        }
    }

    pub fn pairs<'a>(&'a self, encoded: &'a Encoded) -> [(&'a str, &'a [u8]); 5] {
        [
            (headers::EVENT_TYPE, encoded.event_type.as_bytes()),
            (headers::SCHEMA_FINGERPRINT, &encoded.fingerprint),
            ("event-id", &self.event_id),
            // Always present: the chain's id, which is this event's own
            // when the request starts a chain (as every webhook does).
            (headers::CORRELATION_ID, &self.correlation_id),
            (headers::TRACEPARENT, self.traceparent.as_bytes()),
        ]
    }
}

/// Produces one encoded record and maps failure to 503.
pub(crate) async fn produce(
    inner: &Inner,
    topic: &str,
    logical: &'static str,
    key: &str,
    encoded: &Encoded,
    headers: &RecordHeaders,
) -> Result<(), ApiError> {
    let started = Instant::now();
    let result = inner
        .publisher
        .publish(Outgoing {
            topic,
            key,
            payload: &encoded.payload,
            headers: &headers.pairs(encoded),
        })
        .await;
    inner
        .metrics
        .produce(logical, result.is_ok(), started.elapsed());
    result.map(|_| ()).map_err(|e: PublishError| {
        tracing::warn!(topic, error = %e, "produce failed");
        ApiError::Unavailable {
            reason: e.reason(),
            retry_after: UNAVAILABLE_RETRY_AFTER,
        }
    })
}

/// A 202 naming what was made durable: `{"<field>":"<id>","status":"accepted"}`.
/// Written directly rather than through `serde_json::Value` (a map, two
/// strings and a serializer per request): `field` is one of our own
/// identifiers and a UUID needs no escaping.
pub(crate) fn accepted(field: &'static str, id: Uuid) -> Response {
    let mut body = String::with_capacity(field.len() + 64);
    // Writing into a String cannot fail.
    let _ = write!(
        body,
        r#"{{"{field}":"{}","status":"accepted"}}"#,
        id.hyphenated()
    );
    (
        StatusCode::ACCEPTED,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn accepted_is_the_json_it_always_was() {
        let id = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        for field in ["event_id", "command_id"] {
            let response = accepted(field, id);
            assert_eq!(response.status(), StatusCode::ACCEPTED);
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            let got: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(got, json!({ field: id, "status": "accepted" }));
        }
    }
}

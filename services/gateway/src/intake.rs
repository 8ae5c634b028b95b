//! Request plumbing shared by the webhook and launch-intake handlers:
//! bounded body reading, the record headers, and the produce that maps
//! "not confirmed by Kafka" to 503.

use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use callstream_schemas::headers;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::json;
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

/// A 202 naming what was made durable.
pub(crate) fn accepted(field: &'static str, id: Uuid) -> Response {
    (
        StatusCode::ACCEPTED,
        Json(json!({ field: id, "status": "accepted" })),
    )
        .into_response()
}

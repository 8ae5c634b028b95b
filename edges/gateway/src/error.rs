//! The one error type of the HTTP surface. Clients get a status and an RFC 9457
//! problem (`application/problem+json`) with a stable machine-readable `code`, the
//! refused `field` where there is one, and a short `detail`; the log line (written by
//! the handler, with ids only) gets the rest. Details never echo the request body, so
//! nothing a caller sent is reflected or logged.

use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use callstream_domain::input::Refusal;
use callstream_platform::problem::{retry_after_secs, Problem};

use crate::verify::VerifyError;

/// Everything a request can be refused for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error("signature missing")]
    MissingSignature,
    #[error("signature does not match")]
    BadSignature,
    #[error("signed timestamp is outside the tolerance")]
    StaleTimestamp,
    #[error("bearer token missing")]
    MissingToken,
    #[error("bearer token not recognised")]
    BadToken,
    #[error("no such integration for this provider")]
    UnknownIntegration,
    #[error("no such endpoint")]
    NoRoute,
    #[error("content type must be {expected}")]
    WrongContentType { expected: &'static str },
    /// The body cannot be read as the format it claims to be.
    #[error("malformed body: {0}")]
    Malformed(String),
    /// Well-formed, but a required field is missing, empty, too long or
    /// contradicts the integration's configuration.
    #[error("field `{field}` {problem}")]
    Unprocessable {
        field: &'static str,
        problem: &'static str,
    },
    /// A field that is present but not what the documented rules allow (an id's
    /// characters, a text's control characters or length, a number not E.164).
    #[error("field `{field}` {refusal}")]
    Invalid {
        field: &'static str,
        refusal: Refusal,
    },
    #[error("method not allowed on this route")]
    WrongMethod,
    #[error("body larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("rate limit exceeded for this integration")]
    RateLimited { retry_after: Duration },
    /// Kafka did not confirm the record in time (or refused it): nothing was
    /// accepted, the sender must retry.
    #[error("event not durable: {reason}; retry later")]
    Unavailable {
        reason: &'static str,
        retry_after: Duration,
    },
    /// A bug on our side (e.g. an event that does not fit its schema).
    #[error("internal error")]
    Internal,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::MissingSignature
            | Self::BadSignature
            | Self::StaleTimestamp
            | Self::MissingToken
            | Self::BadToken => StatusCode::UNAUTHORIZED,
            Self::UnknownIntegration | Self::NoRoute => StatusCode::NOT_FOUND,
            Self::WrongContentType { .. } | Self::Malformed(_) => StatusCode::BAD_REQUEST,
            Self::Unprocessable { .. } | Self::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::WrongMethod => StatusCode::METHOD_NOT_ALLOWED,
            Self::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The machine-readable code; also the `outcome` label of the metrics.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingSignature => "missing_signature",
            Self::BadSignature => "bad_signature",
            Self::StaleTimestamp => "stale_timestamp",
            Self::MissingToken => "missing_token",
            Self::BadToken => "bad_token",
            Self::UnknownIntegration => "unknown_integration",
            Self::NoRoute => "not_found",
            Self::WrongContentType { .. } => "wrong_content_type",
            Self::Malformed(_) => "malformed_body",
            Self::Unprocessable { .. } | Self::Invalid { .. } => "invalid_event",
            Self::WrongMethod => "method_not_allowed",
            Self::TooLarge { .. } => "body_too_large",
            Self::RateLimited { .. } => "rate_limited",
            Self::Unavailable { .. } => "unavailable",
            Self::Internal => "internal",
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after } | Self::Unavailable { retry_after, .. } => {
                Some(*retry_after)
            }
            _ => None,
        }
    }

    /// The request field refused, if the refusal is about one.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::Unprocessable { field, .. } | Self::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }

    /// A field that is missing or empty.
    pub fn missing(field: &'static str) -> Self {
        Self::Unprocessable {
            field,
            problem: "is required",
        }
    }
}

impl From<VerifyError> for ApiError {
    fn from(e: VerifyError) -> Self {
        match e {
            VerifyError::Missing => Self::MissingSignature,
            VerifyError::Mismatch => Self::BadSignature,
            VerifyError::Stale => Self::StaleTimestamp,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut problem = Problem::new(self.status(), self.code(), self.to_string());
        problem.field = self.field();
        let mut response = problem.into_response();
        if let Some(wait) = self.retry_after() {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs(wait)),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_waits_carry_retry_after() {
        let limited = ApiError::RateLimited {
            retry_after: Duration::from_millis(1500),
        }
        .into_response();
        assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(limited.headers()[header::RETRY_AFTER], "2");
        let refused = ApiError::BadSignature.into_response();
        assert!(refused.headers().get(header::RETRY_AFTER).is_none());
    }
}

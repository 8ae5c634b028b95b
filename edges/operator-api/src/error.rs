//! The one error type of the operator API. Clients get a status and an RFC 9457 problem
//! (`application/problem+json`: `type`, `title`, `status`, `detail`) with the stable `code`
//! as an extension member, and `field` when one input was refused; logs get the rest (ids
//! only, never bodies).

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use callstream_platform::problem::{retry_after_secs, Problem};
use serde::Serialize;
use utoipa::ToSchema;

/// Everything a request can be refused for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// No bearer token, or one that is unknown or revoked.
    #[error("a valid bearer token is required")]
    Unauthenticated,
    /// The token's role does not allow the action.
    #[error("this needs the {needed} role")]
    WrongRole { needed: &'static str },
    /// The request names another tenant than the token's.
    #[error("the token is not scoped to this tenant")]
    WrongTenant,
    /// No such object in the token's tenant.
    #[error("{what} not found")]
    NotFound { what: &'static str },
    /// The request cannot be read (malformed query, path or JSON).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// Well-formed, but a value is not acceptable.
    #[error("{0}")]
    Unprocessable(String),
    /// A field that is not what the documented input rules allow
    /// (`callstream_domain::input`): 422 for a body field, 400 for a query or path one.
    #[error("{field} {refusal}")]
    Invalid {
        field: &'static str,
        refusal: callstream_domain::input::Refusal,
        in_query: bool,
    },
    /// The route exists, the method does not.
    #[error("method not allowed on this route")]
    WrongMethod,
    /// The object is not in a state the action applies to (an exception already closed).
    #[error("{0}")]
    Conflict(String),
    /// Too many requests (of the token, of the address, or waiting at once): try again
    /// after `retry_after` (sent as `Retry-After`, whole seconds rounded up, at least 1).
    #[error("too many requests; retry after {} s", retry_after_secs(*retry_after))]
    RateLimited { retry_after: Duration },
    /// Kafka did not take the command in time, or Postgres is away: nothing was done.
    #[error("{0}; retry later")]
    Unavailable(&'static str),
    /// A bug on our side.
    #[error("internal error")]
    Internal,
}

/// The body of every error answer: an RFC 9457 problem (`application/problem+json`).
#[derive(Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct ErrorBody {
    /// Always `about:blank`: the status says what kind of problem it is, `code` which.
    #[serde(rename = "type")]
    pub kind: String,
    /// The status's reason phrase.
    pub title: String,
    /// The HTTP status, repeated.
    pub status: u16,
    /// For people; never echoes what the request sent.
    pub detail: String,
    /// Stable, machine-readable: `unauthenticated`, `forbidden`, `not_found`,
    /// `bad_request`, `method_not_allowed`, `unprocessable`, `conflict`, `rate_limited`,
    /// `unavailable`, `internal`.
    pub code: String,
    /// The request field that was refused, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::WrongRole { .. } | Self::WrongTenant => StatusCode::FORBIDDEN,
            Self::NotFound { .. } => StatusCode::NOT_FOUND,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Invalid { in_query: true, .. } => StatusCode::BAD_REQUEST,
            Self::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::WrongMethod => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::Unauthenticated => "unauthenticated",
            Self::WrongRole { .. } | Self::WrongTenant => "forbidden",
            Self::NotFound { .. } => "not_found",
            Self::BadRequest(_) => "bad_request",
            Self::Unprocessable(_) => "unprocessable",
            Self::Invalid { in_query: true, .. } => "bad_request",
            Self::Invalid { .. } => "unprocessable",
            Self::WrongMethod => "method_not_allowed",
            Self::Conflict(_) => "conflict",
            Self::RateLimited { .. } => "rate_limited",
            Self::Unavailable(_) => "unavailable",
            Self::Internal => "internal",
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        let transient = matches!(
            error,
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed
        );
        if transient {
            tracing::warn!(%error, "postgres unavailable");
            Self::Unavailable("the views are unavailable")
        } else {
            tracing::error!(%error, "postgres query failed");
            Self::Internal
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut problem = Problem::new(status, self.code(), self.to_string());
        if let Self::Invalid { field, .. } = self {
            problem = problem.with_field(field);
        }
        let mut response = problem.into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        if let Self::RateLimited { retry_after } = self {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs(retry_after)),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_its_status_and_code() {
        let cases = [
            (ApiError::Unauthenticated, 401, "unauthenticated"),
            (ApiError::WrongRole { needed: "admin" }, 403, "forbidden"),
            (ApiError::WrongTenant, 403, "forbidden"),
            (ApiError::NotFound { what: "job" }, 404, "not_found"),
            (ApiError::BadRequest("x".into()), 400, "bad_request"),
            (ApiError::Unprocessable("x".into()), 422, "unprocessable"),
            (ApiError::Conflict("x".into()), 409, "conflict"),
            (ApiError::WrongMethod, 405, "method_not_allowed"),
            (
                ApiError::Invalid {
                    field: "reason",
                    refusal: callstream_domain::input::Refusal::ControlCharacter,
                    in_query: false,
                },
                422,
                "unprocessable",
            ),
            (
                ApiError::Invalid {
                    field: "contact_id",
                    refusal: callstream_domain::input::Refusal::ControlCharacter,
                    in_query: true,
                },
                400,
                "bad_request",
            ),
            (
                ApiError::RateLimited {
                    retry_after: Duration::from_millis(10),
                },
                429,
                "rate_limited",
            ),
            (ApiError::Unavailable("x"), 503, "unavailable"),
            (ApiError::Internal, 500, "internal"),
        ];
        for (error, status, code) in cases {
            assert_eq!(error.status().as_u16(), status, "{error:?}");
            assert_eq!(error.code(), code, "{error:?}");
        }
    }

    #[test]
    fn a_rate_limited_answer_carries_retry_after() {
        let response = ApiError::RateLimited {
            retry_after: Duration::from_millis(1500),
        }
        .into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response.headers().get(axum::http::header::RETRY_AFTER),
            Some(&HeaderValue::from_static("2"))
        );
    }
}

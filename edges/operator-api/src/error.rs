//! The one error type of the operator API. Clients get a status and a JSON body
//! `{"code", "message"}` with a stable code; logs get the detail (ids only, never bodies).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
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
    /// The object is not in a state the action applies to (an exception already closed).
    #[error("{0}")]
    Conflict(String),
    /// Kafka did not take the command in time, or Postgres is away: nothing was done.
    #[error("{0}; retry later")]
    Unavailable(&'static str),
    /// A bug on our side.
    #[error("internal error")]
    Internal,
}

/// The JSON body of every error answer.
#[derive(Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct ErrorBody {
    /// Stable, machine-readable: `unauthenticated`, `forbidden`, `not_found`,
    /// `bad_request`, `unprocessable`, `conflict`, `unavailable`, `internal`.
    pub code: String,
    /// For people.
    pub message: String,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::WrongRole { .. } | Self::WrongTenant => StatusCode::FORBIDDEN,
            Self::NotFound { .. } => StatusCode::NOT_FOUND,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Conflict(_) => StatusCode::CONFLICT,
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
            Self::Conflict(_) => "conflict",
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
        let mut response = (
            status,
            axum::Json(ErrorBody {
                code: self.code().to_string(),
                message: self.to_string(),
            }),
        )
            .into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
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
            (ApiError::Unavailable("x"), 503, "unavailable"),
            (ApiError::Internal, 500, "internal"),
        ];
        for (error, status, code) in cases {
            assert_eq!(error.status().as_u16(), status, "{error:?}");
            assert_eq!(error.code(), code, "{error:?}");
        }
    }
}

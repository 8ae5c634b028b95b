//! HubSpot's error answers: `{"status":"error","message":..,"correlationId":..,
//! "category":..}`, and for the rate limit HubSpot's own shape
//! (`errorType: RATE_LIMIT`, `policyName: TEN_SECONDLY_ROLLING`) with
//! `Retry-After`. Messages never echo a request body.

use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use uuid::Uuid;

use crate::ratelimit::retry_after_secs;

/// Every refusal the CRM makes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrmError {
    #[error("authentication credentials not found")]
    Unauthorized,
    #[error("rate limit reached")]
    RateLimited { retry_after: Duration },
    /// The per-second search limit: HubSpot's answer names the `SECONDLY`
    /// policy and, unlike the ten-second one, sends no `Retry-After`.
    #[error("search rate limit reached")]
    SearchRateLimited,
    #[error("validation: {0}")]
    Validation(String),
    #[error("object not found")]
    NotFound { id: String },
    /// A unique property's value is held by another object.
    #[error("unique value taken")]
    UniqueConflict {
        kind: crate::objects::ObjectType,
        property: String,
        value: String,
        existing_id: String,
    },
    #[error("property exists")]
    PropertyExists { name: String },
    #[error("property not found")]
    PropertyNotFound { name: String },
    #[error("unknown object type")]
    UnknownType(String),
    #[error("injected server error {0}")]
    Injected(u16),
    #[error("outage")]
    Outage,
}

impl CrmError {
    pub fn status(&self) -> StatusCode {
        match self {
            CrmError::Unauthorized => StatusCode::UNAUTHORIZED,
            CrmError::RateLimited { .. } | CrmError::SearchRateLimited => {
                StatusCode::TOO_MANY_REQUESTS
            }
            CrmError::Validation(_) | CrmError::UnknownType(_) => StatusCode::BAD_REQUEST,
            CrmError::NotFound { .. } | CrmError::PropertyNotFound { .. } => StatusCode::NOT_FOUND,
            CrmError::UniqueConflict { .. } | CrmError::PropertyExists { .. } => {
                StatusCode::CONFLICT
            }
            CrmError::Injected(code) => {
                StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
            CrmError::Outage => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl IntoResponse for CrmError {
    fn into_response(self) -> Response {
        let correlation = Uuid::new_v4().to_string();
        let status = self.status();
        let body = match &self {
            CrmError::Unauthorized => json!({
                "status": "error",
                "message": "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview",
                "correlationId": correlation,
                "category": "INVALID_AUTHENTICATION",
            }),
            CrmError::RateLimited { .. } => json!({
                "status": "error",
                "message": "You have reached your ten_secondly_rolling limit.",
                "errorType": "RATE_LIMIT",
                "correlationId": correlation,
                "policyName": "TEN_SECONDLY_ROLLING",
                "groupName": "publicapi:private-app",
            }),
            CrmError::SearchRateLimited => json!({
                "status": "error",
                "message": "You have reached your secondly limit.",
                "errorType": "RATE_LIMIT",
                "correlationId": correlation,
                "policyName": "SECONDLY",
                "groupName": "publicapi:crm-search",
            }),
            CrmError::Validation(message) => json!({
                "status": "error",
                "message": message,
                "correlationId": correlation,
                "category": "VALIDATION_ERROR",
            }),
            CrmError::NotFound { id } => json!({
                "status": "error",
                "message": "Object not found.  objectId are usually numeric.",
                "correlationId": correlation,
                "context": { "id": [id] },
                "category": "OBJECT_NOT_FOUND",
            }),
            CrmError::UniqueConflict {
                kind,
                property,
                value,
                existing_id,
            } => json!({
                "status": "error",
                "message": format!(
                    "A {} with {property} '{value}' already exists. Existing ID: {existing_id}",
                    kind.singular()
                ),
                "correlationId": correlation,
                "category": "CONFLICT",
            }),
            CrmError::PropertyExists { name } => json!({
                "status": "error",
                "message": format!("Property named '{name}' already exists."),
                "correlationId": correlation,
                "category": "OBJECT_ALREADY_EXISTS",
            }),
            CrmError::PropertyNotFound { name } => json!({
                "status": "error",
                "message": format!("Property {name} does not exist"),
                "correlationId": correlation,
                "category": "OBJECT_NOT_FOUND",
            }),
            CrmError::UnknownType(t) => json!({
                "status": "error",
                "message": format!("Unable to infer object type from: {t}"),
                "correlationId": correlation,
                "category": "VALIDATION_ERROR",
            }),
            CrmError::Injected(_) | CrmError::Outage => json!({
                "status": "error",
                "message": status.canonical_reason().unwrap_or("Server Error"),
                "correlationId": correlation,
                "category": "INTERNAL_ERROR",
            }),
        };
        let mut response = (status, Json(body)).into_response();
        if let CrmError::RateLimited { retry_after } = self {
            if let Ok(v) = HeaderValue::from_str(&retry_after_secs(retry_after).to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        response
    }
}

//! Bearer tokens: stored as their SHA-256 only, each with a role and a tenant scope.
//!
//! Guarantees: a request is served only for a known, unrevoked token; every handler gets
//! the token's [`Principal`] and reads and acts only within its tenant; a request that
//! names another tenant (`X-Tenant-Id`) is refused 403 before anything else happens.

use std::fmt;
use std::str::FromStr;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::app::AppState;
use crate::error::ApiError;

/// Header a client may send to say which tenant it means; another tenant than the
/// token's is refused.
pub const TENANT_HEADER: &str = "x-tenant-id";

/// What a token may do; each role can do what the ones before it can.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads the views.
    Viewer,
    /// Also acts on contacts, launches and exceptions.
    Operator,
    /// Also changes the runtime settings (pauses, shadow mode, CRM writes).
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not viewer, operator or admin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?}: use viewer, operator or admin")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "viewer" => Ok(Role::Viewer),
            "operator" => Ok(Role::Operator),
            "admin" => Ok(Role::Admin),
            other => Err(UnknownRole(other.to_string())),
        }
    }
}

/// Who is calling: the token's id, tenant, role and subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub token_id: Uuid,
    pub tenant_id: String,
    pub role: Role,
    /// Becomes the actor id of every command sent with the token.
    pub subject: String,
}

impl Principal {
    /// Refuses with 403 unless the token's role is at least `needed`.
    pub fn require(&self, needed: Role) -> Result<(), ApiError> {
        if self.role >= needed {
            Ok(())
        } else {
            Err(ApiError::WrongRole {
                needed: needed.as_str(),
            })
        }
    }
}

/// The SHA-256 a token is stored and looked up by.
pub fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// A token just created: the plaintext is here and nowhere else.
#[derive(Debug, Clone)]
pub struct CreatedToken {
    pub token_id: Uuid,
    /// `cs_` and 43 characters of URL-safe base64 (256 random bits). Show once.
    pub token: String,
}

/// Creates a token for `tenant_id` with `role`; `subject` names who holds it.
pub async fn create_token(
    pool: &PgPool,
    tenant_id: &str,
    role: Role,
    subject: &str,
) -> Result<CreatedToken, sqlx::Error> {
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let token = format!("cs_{}", URL_SAFE_NO_PAD.encode(secret));
    let token_id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO api_tokens (token_id, token_hash, tenant_id, role, subject)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_id)
    .bind(hash_token(&token))
    .bind(tenant_id)
    .bind(role.as_str())
    .bind(subject)
    .execute(pool)
    .await?;
    Ok(CreatedToken { token_id, token })
}

/// Revokes a token; returns whether it existed and was active.
pub async fn revoke_token(pool: &PgPool, token_id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE api_tokens SET revoked_at = now() WHERE token_id = $1 AND revoked_at IS NULL",
    )
    .bind(token_id)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

async fn lookup(pool: &PgPool, token: &str) -> Result<Option<Principal>, ApiError> {
    let row: Option<(Uuid, String, String, String)> = sqlx::query_as(
        "SELECT token_id, tenant_id, role, subject FROM api_tokens
         WHERE token_hash = $1 AND revoked_at IS NULL",
    )
    .bind(hash_token(token))
    .fetch_optional(pool)
    .await?;
    let Some((token_id, tenant_id, role, subject)) = row else {
        return Ok(None);
    };
    let role = role.parse().map_err(|_| ApiError::Internal)?;
    Ok(Some(Principal {
        token_id,
        tenant_id,
        role,
        subject,
    }))
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or(ApiError::Unauthenticated)?;
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.len() <= 256)
            .ok_or(ApiError::Unauthenticated)?;
        let principal = lookup(state.pool(), token)
            .await?
            .ok_or(ApiError::Unauthenticated)?;
        if let Some(named) = parts.headers.get(TENANT_HEADER) {
            if named.as_bytes() != principal.tenant_id.as_bytes() {
                return Err(ApiError::WrongTenant);
            }
        }
        Ok(principal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_and_parse() {
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Admin);
        for role in [Role::Viewer, Role::Operator, Role::Admin] {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn require_allows_the_role_and_the_ones_above() {
        let cases = [
            (Role::Viewer, Role::Viewer, true),
            (Role::Viewer, Role::Operator, false),
            (Role::Operator, Role::Operator, true),
            (Role::Operator, Role::Admin, false),
            (Role::Admin, Role::Operator, true),
        ];
        for (has, needed, ok) in cases {
            let p = Principal {
                token_id: Uuid::nil(),
                tenant_id: "t".into(),
                role: has,
                subject: "s".into(),
            };
            assert_eq!(p.require(needed).is_ok(), ok, "{has} needs {needed}");
        }
    }

    #[test]
    fn tokens_hash_to_32_bytes() {
        assert_eq!(hash_token("cs_x").len(), 32);
        assert_ne!(hash_token("a"), hash_token("b"));
    }
}

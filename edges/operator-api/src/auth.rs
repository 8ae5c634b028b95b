//! Bearer tokens: stored as their SHA-256 only, each with a role and a tenant scope.
//!
//! Guarantees: a request is served only for a known, unrevoked, unexpired token (an
//! expired or revoked one is 401 exactly like an unknown one, from the next request on:
//! nothing is cached); every handler gets the token's [`Principal`] and reads and acts only
//! within its tenant; a request that names another tenant (`X-Tenant-Id`) is refused 403
//! before anything else happens. A token is scoped to one real tenant: no token is made for
//! `*` (the control topic's every-tenant pseudo-tenant) or any id that is not a plain tenant
//! id, and a stored one with such a tenant is refused.

use std::fmt;
use std::str::FromStr;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use callstream_platform::clock::{Clock as _, SystemClock};
use chrono::{DateTime, Utc};
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

/// Why a token was not made.
#[derive(Debug, thiserror::Error)]
pub enum CreateTokenError {
    #[error("tenant {0:?} cannot hold a token: {1}")]
    Tenant(String, &'static str),
    #[error("the token would expire at {0}, which is not in the future")]
    AlreadyExpired(DateTime<Utc>),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The longest tenant id a token may name.
const MAX_TENANT_LEN: usize = 200;

/// Whether `tenant_id` names one tenant, and why not. `*` is the control topic's pseudo
/// tenant of every tenant: a token for it would write changes (a system pause) for all of
/// them; `/` separates the parts of a control key; `%` (a SQL wildcard), spaces and control
/// characters have no business in an id.
pub fn check_tenant(tenant_id: &str) -> Result<(), &'static str> {
    if tenant_id.trim().is_empty() {
        return Err("it is empty");
    }
    if tenant_id.len() > MAX_TENANT_LEN {
        return Err("it is longer than 200 bytes");
    }
    if tenant_id.contains('*') {
        return Err("`*` means every tenant, and a token is for one tenant");
    }
    if tenant_id
        .chars()
        .any(|c| c == '/' || c == '%' || c.is_whitespace() || c.is_control())
    {
        return Err("it holds `/`, `%`, a space or a control character");
    }
    Ok(())
}

/// Creates a token for `tenant_id` with `role` that does not expire; `subject` names who
/// holds it.
pub async fn create_token(
    pool: &PgPool,
    tenant_id: &str,
    role: Role,
    subject: &str,
) -> Result<CreatedToken, CreateTokenError> {
    create_token_expiring(pool, tenant_id, role, subject, None).await
}

/// Creates a token that is refused from `expires_at` on (never, for `None`).
pub async fn create_token_expiring(
    pool: &PgPool,
    tenant_id: &str,
    role: Role,
    subject: &str,
    expires_at: Option<DateTime<Utc>>,
) -> Result<CreatedToken, CreateTokenError> {
    check_tenant(tenant_id).map_err(|why| CreateTokenError::Tenant(tenant_id.to_owned(), why))?;
    // Token expiry is a security check: real time, whatever the business clock says.
    if let Some(at) = expires_at.filter(|at| *at <= SystemClock.now_utc()) {
        return Err(CreateTokenError::AlreadyExpired(at));
    }
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let token = format!("cs_{}", URL_SAFE_NO_PAD.encode(secret));
    let token_id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO api_tokens (token_id, token_hash, tenant_id, role, subject, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(token_id)
    .bind(hash_token(&token))
    .bind(tenant_id)
    .bind(role.as_str())
    .bind(subject)
    .bind(expires_at)
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

/// A stored token, as `callstream tokens list` shows it (never its secret or hash).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenInfo {
    pub token_id: Uuid,
    pub tenant_id: String,
    pub role: String,
    pub subject: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl TokenInfo {
    /// `active`, `expired` or `revoked`, at `now`.
    pub fn state(&self, now: DateTime<Utc>) -> &'static str {
        if self.revoked_at.is_some() {
            "revoked"
        } else if self.expires_at.is_some_and(|at| at <= now) {
            "expired"
        } else {
            "active"
        }
    }
}

/// Every token (of `tenant_id` only, if given), oldest first.
pub async fn list_tokens(
    pool: &PgPool,
    tenant_id: Option<&str>,
) -> Result<Vec<TokenInfo>, sqlx::Error> {
    sqlx::query_as(
        "SELECT token_id, tenant_id, role, subject, created_at, expires_at, revoked_at
         FROM api_tokens WHERE $1::text IS NULL OR tenant_id = $1
         ORDER BY created_at, token_id",
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await
}

async fn lookup(pool: &PgPool, token: &str) -> Result<Option<Principal>, ApiError> {
    // The database's clock decides expiry, as it stamps `revoked_at`.
    let row: Option<(Uuid, String, String, String)> = sqlx::query_as(
        "SELECT token_id, tenant_id, role, subject FROM api_tokens
         WHERE token_hash = $1 AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > now())",
    )
    .bind(hash_token(token))
    .fetch_optional(pool)
    .await?;
    let Some((token_id, tenant_id, role, subject)) = row else {
        return Ok(None);
    };
    let role = role.parse().map_err(|_| ApiError::Internal)?;
    if check_tenant(&tenant_id).is_err() {
        // Made before tenants were checked, or by hand: it could act for every tenant.
        tracing::warn!(%token_id, "token refused: its tenant is not a plain tenant id");
        return Ok(None);
    }
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
        // After the lookup, so the budget is the token's own (an unknown token has none;
        // the address budget covers guessing).
        state
            .limits()
            .spend_token(principal.token_id)
            .inspect_err(|_| {
                tracing::warn!(token = %principal.token_id, "token over its request budget");
            })?;
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
    fn a_token_is_for_one_plain_tenant() {
        for ok in ["acme", "t-1", "tenant_a", "ACME.eu"] {
            assert_eq!(check_tenant(ok), Ok(()), "{ok:?}");
        }
        let too_long = "x".repeat(201);
        for refused in [
            "*",
            "",
            "  ",
            "ac*me",
            "a/b",
            "a%",
            "a b",
            "a\n",
            too_long.as_str(),
        ] {
            assert!(check_tenant(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn tokens_hash_to_32_bytes() {
        assert_eq!(hash_token("cs_x").len(), 32);
        assert_ne!(hash_token("a"), hash_token("b"));
    }
}

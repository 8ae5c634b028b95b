//! The operator API: reads the Postgres views the projections build, and turns operator
//! actions into commands on Kafka, never into row edits.
//!
//! Guarantees:
//! - Every request needs a bearer token (stored as its SHA-256, with a role and a tenant);
//!   every read and action is scoped to the token's tenant.
//! - An action answers `202` with a command id only once Kafka has acknowledged the
//!   command; `GET /v1/commands/{id}` reports `pending`, `applied` or `rejected`.
//! - Every error is JSON `{code, message}` from one [`ApiError`].
//! - Requests have budgets, per token and per peer address, and at most a set number wait
//!   (`?wait=`) at once; over either, 429 `rate_limited` with `Retry-After` (see [`limits`]).
//! - `/openapi.json` is an OpenAPI 3.1 document of every route.

pub mod actions;
pub mod app;
pub mod auth;
pub mod cases;
pub mod config;
pub mod console;
pub mod control;
pub mod crm_retry;
pub mod cursor;
pub mod dead_letters;
pub mod error;
pub mod extract;
pub mod limits;
pub mod metrics;
pub mod model;
pub mod publish;
pub mod query;
pub mod reads;
pub mod ready;
pub mod retry;
pub mod server;

pub use app::{admin, app, ApiDoc, AppState};
pub use auth::{
    check_tenant, create_token, create_token_expiring, hash_token, list_tokens, revoke_token,
    CreateTokenError, CreatedToken, Principal, Role, TokenInfo, UnknownRole,
};
pub use config::{ConfigError, OperatorApiConfig, RateLimit};
pub use error::ApiError;
pub use server::{run, serve, serve_admin, state, StartError};

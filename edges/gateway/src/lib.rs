//! The ingest gateway: signed provider webhooks and CRM launch requests in,
//! durable Kafka records out.
//!
//! Its one promise: it answers 202 (with the event id) only once Kafka's
//! delivery report says the record is in the log (`acks=all`, idempotent
//! producer), and anything it cannot make durable within a bounded time it
//! refuses with 503 and `Retry-After`, so the sender retries. It never
//! interprets what it carries: statuses and analyses travel raw.

pub mod app;
pub mod codec;
pub mod config;
pub mod contact_update;
pub mod error;
pub mod event;
pub mod intake;
pub mod launch;
pub mod metrics;
pub mod provider;
pub mod publish;
pub mod secret;
pub mod server;
pub mod testkit;
pub mod trace;
pub mod verify;

pub use app::{admin, app, AppState, StartError};
pub use config::GatewayConfig;
pub use error::ApiError;
pub use server::{run, serve, serve_admin};

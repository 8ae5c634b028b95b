//! A voice platform simulator: a real HTTP server speaking the subset of
//! Twilio's Voice REST API callstream uses (create, fetch and list calls),
//! which then plays each call out, posting status callbacks signed exactly
//! as Twilio signs them and, for calls a person answered, an end-of-call
//! analysis signed by the Standard Webhooks scheme.
//!
//! Its behaviour is seeded: the n-th call created with a given seed gets
//! the same outcome, durations, utterance and faults every run. Faults on
//! offer: dropped completions (more of them in bursts), lost calls,
//! delayed, duplicated and reordered deliveries, 5xx on create, and creates
//! accepted whose answer comes too late. `GET /_sim/stats` counts what
//! happened, for tests to assert on.

pub mod admin;
pub mod app;
pub mod callback;
pub mod config;
pub mod list;
pub mod model;
pub mod plan;
pub mod playout;
pub mod seed;
pub mod server;
pub mod signing;
pub mod state;
pub mod store;
pub mod twilio;
pub mod utterance;

pub use app::app;
pub use config::{Behaviour, SimVoiceConfig};
pub use server::{run, serve, serve_state};
pub use state::{SimState, StartError};
pub use store::Stats;

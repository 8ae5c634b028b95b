//! A CRM simulator: a real HTTP server speaking the subset of HubSpot's
//! CRM v3 objects API callstream uses (create notes and tasks with
//! associations, update contacts, search by property, read by id), behind
//! bearer tokens and HubSpot's rolling limit of 100 requests per 10 s per
//! token (429 with `Retry-After` beyond it).
//!
//! Like HubSpot it has no idempotency keys: a create sent twice makes two
//! objects, and `GET /_sim/stats` counts them by `callstream_op_id`, so a
//! test can prove a client never did. Seeded faults: 5xx answers, slow
//! answers, writes applied and then answered too late, outage windows, and
//! a search index that lags behind writes.
//!
//! HubSpot's validation is kept where a client would meet it: notes and
//! tasks need `hs_timestamp`, associations need a category and type id.

pub mod admin;
pub mod app;
pub mod config;
pub mod db;
pub mod error;
pub mod gate;
pub mod objects;
pub mod properties;
pub mod ratelimit;
pub mod search;
pub mod server;
pub mod state;

pub use app::app;
pub use config::{CrmBehaviour, SimCrmConfig};
pub use server::{run, serve, serve_state};
pub use state::{CrmState, StartError};

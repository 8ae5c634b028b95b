//! The one support module of the CRM dispatcher's tests (each test binary declares
//! `mod support;` and uses one part):
//! - `driver`: the dispatcher on the runtime's in-memory driver (`machine*.rs`, `retry.rs`);
//! - `broker`: the dispatcher on the real broker against the CRM simulator, in-process or as
//!   its own OS process (`crash.rs`, `outage*.rs`, `switches.rs`).

#![allow(dead_code)] // each test binary uses part of it

pub mod broker;
pub mod driver;

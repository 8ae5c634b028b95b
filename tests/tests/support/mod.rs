//! The one support module of the end-to-end tests (each test binary declares `mod support;`
//! and uses the part it needs):
//! - `runtime`: the runtime's broker tests (`runtime_*.rs`): the counting processor as an
//!   OS process, feeders, the exactly-once check.
//! - `operator`: the operator path in one process (`operator_api_*.rs`): projections,
//!   processors, simulators and the API's router.
//! - `pipeline`: the calling path in one process (`lead_safety.rs`): the contact
//!   processor, the scheduler and the launch dispatcher against the voice simulator, each
//!   stopped and started at will.
//! - `recovery_sim`: the voice simulator and a receiver that reads callbacks with the
//!   gateway's code (`recovery_simulator.rs`).
//! - `sinks`: an HTTP server and an SMTP server (aiosmtpd) recording what the notifier
//!   sends (`notifier_e2e.rs`).
//! - `voice`: the voice simulator's own test kit, the same file its tests use
//!   (`sim_voice_signatures.rs`).
//!
//! Events come from `callstream_e2e::fixtures`, the live views from `callstream_e2e::views`.
//!
//! Guarantees: every helper names its own topics, groups, databases and ports (random
//! suffixes, port 0), so the tests run in parallel on one shared stack.

#![allow(dead_code)] // each test binary uses part of it

pub mod operator;
pub mod pipeline;
pub mod recovery_sim;
pub mod runtime;
pub mod sinks;
/// One copy of the simulator's test client and webhook receiver: included from
/// `sims/sim-voice/tests/support` rather than copied, so the simulator's tests and the
/// signature contract here drive it the same way.
#[path = "../../../sims/sim-voice/tests/support/mod.rs"]
pub mod voice;

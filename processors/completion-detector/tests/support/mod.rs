//! The detector on the runtime's in-memory driver, with topic names of a
//! default `Topics` and a short window so the tests read in milliseconds.

#![allow(dead_code)] // each test binary uses its own subset
#![allow(clippy::unwrap_used)] // test code: a panic is a failed assertion

use callstream_completion_detector::testkit::{accepted_launch, live_event};
use callstream_completion_detector::{processor, spec, Detector, DetectorConfig, APP_ID};
use callstream_platform::{topics, Topics};
use callstream_runtime::{Input, TestDriver};
use callstream_schemas::{CallEventSource, CompletionMissing, Event};
use uuid::Uuid;

pub const T0: i64 = 1_700_000_000_000;
pub const W: i64 = 60_000;
pub const GRACE: i64 = 5_000;
pub const TENANT: &str = "t1";
pub const PARTITIONS: i32 = 4;

pub fn config() -> DetectorConfig {
    DetectorConfig {
        default_window_ms: W,
        default_grace_ms: GRACE,
        early_grace_ms: 2_000,
        bucket_close_delay_ms: W + GRACE,
        min_bucket_launches: 1,
        ..DetectorConfig::default()
    }
}

pub fn driver_with(config: DetectorConfig) -> TestDriver<Detector> {
    let spec = spec(&config.topics, APP_ID);
    TestDriver::new(processor(config), spec, PARTITIONS, T0)
}

pub fn driver() -> TestDriver<Detector> {
    driver_with(config())
}

pub fn name(logical: &str) -> String {
    Topics::default().name(logical)
}

pub fn launch_id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

pub fn sid(n: u128) -> String {
    format!("CA{n:032x}")
}

/// Pipes an accepted launch `n` of `contact` at `at` (record time too).
pub fn launch(d: &mut TestDriver<Detector>, contact: &str, n: u128, at: i64) {
    let value = accepted_launch(TENANT, contact, launch_id(n), &sid(n), at)
        .encode()
        .unwrap();
    d.pipe(Input::new(name(topics::CALL_LAUNCHES), contact, value).at(at));
}

/// Pipes a completion (Twilio `status`) of call `n`, naming launch `named`.
pub fn complete(
    d: &mut TestDriver<Detector>,
    contact: &str,
    n: u128,
    named: Option<u128>,
    status: &str,
    at: i64,
) {
    let event = live_event(TENANT, contact, named.map(launch_id), &sid(n), status, at);
    d.pipe(Input::new(name(topics::CALL_EVENTS), contact, event.encode().unwrap()).at(at));
}

/// Pipes recovery's replay of call `n`.
pub fn recovered(d: &mut TestDriver<Detector>, contact: &str, n: u128, at: i64) {
    let mut event = live_event(
        TENANT,
        contact,
        Some(launch_id(n)),
        &sid(n),
        "completed",
        at,
    );
    event.source = CallEventSource::Recovery;
    event.event_id = Uuid::from_u128(0xfeed_0000 + n);
    d.pipe(Input::new(name(topics::CALL_EVENTS), contact, event.encode().unwrap()).at(at));
}

pub fn missing(d: &TestDriver<Detector>) -> Vec<CompletionMissing> {
    d.outputs(&name(topics::COMPLETION_MISSING))
}

pub fn missing_launches(d: &TestDriver<Detector>) -> Vec<u128> {
    missing(d).iter().map(|m| m.launch_id.as_u128()).collect()
}

/// A key that lands on the same partition as `key`, for moving its stream time.
pub fn neighbour_of(key: &str) -> String {
    let target = callstream_runtime::partitioner::partition_for_key(key.as_bytes(), PARTITIONS);
    (0..)
        .map(|i| format!("other-{i}"))
        .find(|k| {
            k != key
                && callstream_runtime::partitioner::partition_for_key(k.as_bytes(), PARTITIONS)
                    == target
        })
        .unwrap()
}

/// A key on a different partition than `key`.
pub fn stranger_to(key: &str) -> String {
    let target = callstream_runtime::partitioner::partition_for_key(key.as_bytes(), PARTITIONS);
    (0..)
        .map(|i| format!("far-{i}"))
        .find(|k| {
            callstream_runtime::partitioner::partition_for_key(k.as_bytes(), PARTITIONS) != target
        })
        .unwrap()
}

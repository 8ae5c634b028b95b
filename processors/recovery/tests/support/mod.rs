//! Recovery on the in-memory driver: inputs as their producers write them,
//! and lookups completed by hand.

#![allow(dead_code, clippy::unwrap_used)] // each test binary uses its own subset

use std::time::Duration;

use callstream_domain::ids::completion_case as case_ids;
use callstream_e2e::fixtures;
use callstream_platform::{topics, Topics};
use callstream_recovery::wire::{CallRecord, FetchResult};
use callstream_recovery::{processor, spec, Recovery, RecoveryConfig, TwilioAccess, APP_ID};
use callstream_runtime::{EffectRequest, Input, TestDriver};
use callstream_schemas::{
    Actor, ActorKind, AuditEvent, AuditResult, CompletionMissing, ContactCommand,
    ContactCommandKind, Event,
};
use uuid::Uuid;

pub const T0: i64 = 1_700_000_000_000;
pub const TENANT: &str = "t1";
pub const CONTACT: &str = "contact-1";

pub fn config() -> RecoveryConfig {
    RecoveryConfig {
        poll_delay: Duration::from_secs(30),
        max_polls: 2,
        max_attempts: 3,
        retry_base: Duration::from_secs(1),
        retry_max: Duration::from_secs(8),
        result_timeout: Duration::from_secs(60),
        ..RecoveryConfig::new(
            Topics::default(),
            TwilioAccess {
                base_url: "http://127.0.0.1:1".into(),
                account_sid: "AC1".into(),
                auth_token: "t".into(),
            },
        )
    }
}

pub fn driver() -> TestDriver<Recovery> {
    TestDriver::new(processor(config()), spec(&Topics::default(), APP_ID), 4, T0)
}

pub fn name(logical: &str) -> String {
    Topics::default().name(logical)
}

pub fn launch(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

pub fn sid(n: u128) -> String {
    format!("CA{n:032x}")
}

pub fn missing(d: &mut TestDriver<Recovery>, n: u128) {
    let deadline = chrono::DateTime::from_timestamp_millis(T0).unwrap();
    let event = CompletionMissing {
        event_id: case_ids::missing_event(&launch(n)),
        correlation_id: Some(Uuid::from_u128(0xc0)),
        job_id: Some(Uuid::from_u128(0x10b)),
        campaign_id: Some("campaign-1".into()),
        accepted_at: chrono::DateTime::from_timestamp_millis(T0 - 1_320_000).unwrap(),
        window_ms: 1_200_000,
        grace_ms: 120_000,
        ..fixtures::completion_missing(TENANT, CONTACT, launch(n), &sid(n), deadline)
    };
    d.pipe(Input::new(
        name(topics::COMPLETION_MISSING),
        CONTACT,
        event.encode().unwrap(),
    ));
}

pub fn command(d: &mut TestDriver<Recovery>, id: u128, kind: ContactCommandKind, n: Option<u128>) {
    let at = chrono::DateTime::from_timestamp_millis(T0).unwrap();
    let actor = Actor::operator("ops@example.com");
    let cmd = ContactCommand {
        event_id: Uuid::from_u128(id),
        launch_id: n.map(launch),
        reason: Some("checked with the lead".into()),
        ..fixtures::contact_command(TENANT, CONTACT, kind, actor, at)
    };
    d.pipe(Input::new(
        name(topics::CONTACT_COMMANDS),
        CONTACT,
        cmd.encode().unwrap(),
    ));
}

pub fn found(status: &str, answered_by: Option<&str>, seq: Option<&str>) -> FetchResult {
    FetchResult::Found {
        record: CallRecord {
            status: status.into(),
            answered_by: answered_by.map(str::to_string),
            duration_seconds: Some(42),
            ended_at_ms: Some(T0 - 600_000),
            sequence_number: seq.map(str::to_string),
        },
    }
}

pub fn retriable() -> FetchResult {
    FetchResult::Failed {
        retriable: true,
        reason: "the provider answered 503".into(),
    }
}

/// Completes the one pending lookup with `result`, returning its request.
pub fn answer(d: &mut TestDriver<Recovery>, result: FetchResult) -> EffectRequest {
    let effects = d.take_effects();
    assert_eq!(effects.len(), 1, "one lookup pending: {effects:?}");
    let request = effects[0].clone();
    d.complete_effect(request.clone(), result.encode());
    request
}

pub fn audits(d: &TestDriver<Recovery>) -> Vec<(String, AuditResult, ActorKind)> {
    d.outputs::<AuditEvent>(&name(topics::AUDIT))
        .into_iter()
        .map(|a| (a.action, a.result, a.actor.kind))
        .collect()
}

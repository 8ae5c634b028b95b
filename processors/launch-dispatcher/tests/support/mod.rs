//! Shared helpers of the driver tests: a dispatcher on the in-memory test
//! driver, launch commands, and readers of what it emitted and asked for.
//! The broker tests' helpers (the real broker and the voice simulator, the
//! dispatcher in-process or as its own OS process) are `broker`.
#![allow(dead_code, clippy::unwrap_used)]

pub mod broker;

use callstream_e2e::fixtures;
use callstream_launch_dispatcher::ledger::{key_of, Entry};
use callstream_launch_dispatcher::provider::{CreateOutcome, LookupOutcome};
use callstream_launch_dispatcher::wire::{EffectCall, EffectReply};
use callstream_launch_dispatcher::{
    processor, spec, DispatcherConfig, LaunchDispatcher, LAUNCHES_STORE,
};
use callstream_platform::Topics;
use callstream_runtime::{EffectRequest, Input, TestDriver};
use callstream_schemas::{
    AuditEvent, CallLaunch, ControlChange, ControlSetting, Event, ExceptionEvent, LaunchCommand,
    LaunchStatus,
};
use chrono::DateTime;
use uuid::Uuid;

pub const START: i64 = 1_700_000_000_000;
pub const TENANT: &str = "acme";
pub const CAMPAIGN: &str = "enrol";

pub fn config() -> DispatcherConfig {
    let mut config = DispatcherConfig::new(
        Topics::default(),
        "http://sim.invalid",
        "AC1",
        "token",
        "https://hooks.example.com",
    );
    config.twilio.default_from = Some("+15550009999".into());
    config
}

/// One partition, so `entry` finds every ledger entry (the driver locates
/// state by key, and the ledger's key is not the record key).
pub fn driver_with(config: &DispatcherConfig) -> TestDriver<LaunchDispatcher> {
    TestDriver::new(
        processor(config),
        spec(&config.topics, "dispatcher"),
        1,
        START,
    )
}

pub fn driver() -> TestDriver<LaunchDispatcher> {
    driver_with(&config())
}

pub fn command(n: u128) -> LaunchCommand {
    LaunchCommand {
        event_id: Uuid::from_u128(0xe000 + n),
        ..fixtures::launch_command(
            TENANT,
            &format!("c-{n}"),
            CAMPAIGN,
            Uuid::from_u128(0x1000 + n),
            Uuid::from_u128(0x2000 + n),
            &format!("+1555000{n:04}"),
            DateTime::from_timestamp_millis(START).unwrap(),
        )
    }
}

/// Pipes `command` on its key as the contact processor writes it (tenant and number).
pub fn pipe(driver: &mut TestDriver<LaunchDispatcher>, command: &LaunchCommand) {
    driver.pipe(Input::new(
        "launch-commands",
        callstream_kit::keys::phone_key(&command.tenant_id, &command.to_number),
        command.encode().unwrap(),
    ));
}

/// Sets the tenant's shadow mode.
pub fn set_shadow(driver: &mut TestDriver<LaunchDispatcher>, on: bool) {
    let change = shadow_change(on);
    driver.set_global(
        "control",
        change.record_key(),
        Some(change.encode().unwrap()),
    );
}

/// A control change setting `TENANT`'s shadow mode.
pub fn shadow_change(on: bool) -> ControlChange {
    fixtures::switch(
        TENANT,
        ControlSetting::ShadowMode,
        Some(on),
        callstream_schemas::Actor::system("test"),
        DateTime::from_timestamp_millis(START).unwrap(),
    )
}

pub fn launches(driver: &TestDriver<LaunchDispatcher>) -> Vec<CallLaunch> {
    driver.outputs("call-launches")
}

pub fn exceptions(driver: &TestDriver<LaunchDispatcher>) -> Vec<ExceptionEvent> {
    driver.outputs("exceptions")
}

pub fn audits(driver: &TestDriver<LaunchDispatcher>) -> Vec<AuditEvent> {
    driver.outputs("audit")
}

pub fn entry(driver: &TestDriver<LaunchDispatcher>, launch_id: &Uuid) -> Option<Entry> {
    let key = key_of(launch_id);
    driver
        .get(LAUNCHES_STORE, &key)
        .map(|bytes| Entry::decode(bytes).unwrap())
}

/// The pending effects, decoded.
pub fn pending(driver: &TestDriver<LaunchDispatcher>) -> Vec<(EffectRequest, EffectCall)> {
    driver
        .pending_effects()
        .iter()
        .map(|r| (r.clone(), EffectCall::decode(&r.payload).unwrap()))
        .collect()
}

/// Takes the only pending effect.
pub fn take_one(driver: &mut TestDriver<LaunchDispatcher>) -> (EffectRequest, EffectCall) {
    let mut all = pending(driver);
    assert_eq!(all.len(), 1, "expected one pending effect: {all:?}");
    let (request, call) = all.remove(0);
    let _ = driver.take_effects();
    (request, call)
}

pub fn reply(
    driver: &mut TestDriver<LaunchDispatcher>,
    request: EffectRequest,
    reply: &EffectReply,
) {
    driver.complete_effect(request, reply.encode());
}

pub fn seq_of(call: &EffectCall) -> u32 {
    match call {
        EffectCall::Create { seq, .. } | EffectCall::Lookup { seq, .. } => *seq,
    }
}

pub fn created(call: &EffectCall, outcome: CreateOutcome) -> EffectReply {
    EffectReply::Create {
        seq: seq_of(call),
        outcome,
    }
}

pub fn looked(call: &EffectCall, outcome: LookupOutcome) -> EffectReply {
    EffectReply::Lookup {
        seq: seq_of(call),
        outcome,
    }
}

pub fn accepted(id: &str) -> CreateOutcome {
    CreateOutcome::Accepted { call_id: id.into() }
}

pub fn statuses(driver: &TestDriverD) -> Vec<LaunchStatus> {
    launches(driver).iter().map(|l| l.status).collect()
}

pub type TestDriverD =
    callstream_runtime::TestDriver<callstream_launch_dispatcher::LaunchDispatcher>;

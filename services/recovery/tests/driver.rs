//! Recovery on the runtime's in-memory driver, with lookups completed by
//! hand: recovered, still in progress (bounded), not found, failing
//! (bounded, jittered), lost results, late completions, and the operator's
//! recover, advance and ignore.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed assertion

use std::time::Duration;

use callstream_completion_detector::ids as case_ids;
use callstream_platform::{topics, Topics};
use callstream_recovery::protocol::{CallRecord, FetchRequest, FetchResult};
use callstream_recovery::{processor, spec, Recovery, RecoveryConfig, TwilioAccess, APP_ID};
use callstream_runtime::{EffectRequest, Input, TestDriver};
use callstream_schemas::{
    Actor, ActorKind, AuditEvent, AuditResult, CallEvent, CallEventSource, CallOutcome,
    CompletionMissing, CompletionResolved, ContactCommand, ContactCommandKind, Event,
    ExceptionEvent, ExceptionStatus, ExceptionType, MissingTrigger, Resolution,
};
use uuid::Uuid;

const T0: i64 = 1_700_000_000_000;
const TENANT: &str = "t1";
const CONTACT: &str = "contact-1";

fn config() -> RecoveryConfig {
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

fn driver() -> TestDriver<Recovery> {
    TestDriver::new(processor(config()), spec(&Topics::default(), APP_ID), 4, T0)
}

fn name(logical: &str) -> String {
    Topics::default().name(logical)
}

fn launch(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn sid(n: u128) -> String {
    format!("CA{n:032x}")
}

fn missing(d: &mut TestDriver<Recovery>, n: u128) {
    let event = CompletionMissing {
        event_id: case_ids::missing_event_id(&launch(n)),
        tenant_id: TENANT.into(),
        occurred_at: chrono::DateTime::from_timestamp_millis(T0).unwrap(),
        causation_id: None,
        correlation_id: Some(Uuid::from_u128(0xc0)),
        launch_id: launch(n),
        job_id: Some(Uuid::from_u128(0x10b)),
        contact_id: CONTACT.into(),
        campaign_id: Some("campaign-1".into()),
        provider: "twilio".into(),
        provider_call_id: sid(n),
        accepted_at: chrono::DateTime::from_timestamp_millis(T0 - 1_320_000).unwrap(),
        deadline_at: chrono::DateTime::from_timestamp_millis(T0).unwrap(),
        window_ms: 1_200_000,
        grace_ms: 120_000,
        trigger: MissingTrigger::WallClock,
    };
    d.pipe(Input::new(
        name(topics::COMPLETION_MISSING),
        CONTACT,
        event.encode().unwrap(),
    ));
}

fn command(d: &mut TestDriver<Recovery>, id: u128, kind: ContactCommandKind, n: Option<u128>) {
    let cmd = ContactCommand {
        event_id: Uuid::from_u128(id),
        tenant_id: TENANT.into(),
        occurred_at: chrono::DateTime::from_timestamp_millis(T0).unwrap(),
        causation_id: None,
        correlation_id: None,
        kind,
        contact_id: CONTACT.into(),
        actor: Actor::operator("ops@example.com"),
        request_id: None,
        campaign_id: None,
        job_id: None,
        launch_id: n.map(launch),
        exception_id: None,
        origin: None,
        slot: None,
        slot_at: None,
        requested_at: None,
        contact: None,
        reason: Some("checked with the lead".into()),
    };
    d.pipe(Input::new(
        name(topics::CONTACT_COMMANDS),
        CONTACT,
        cmd.encode().unwrap(),
    ));
}

fn found(status: &str, answered_by: Option<&str>, seq: Option<&str>) -> FetchResult {
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

fn retriable() -> FetchResult {
    FetchResult::Failed {
        retriable: true,
        reason: "the provider answered 503".into(),
    }
}

/// Completes the one pending lookup with `result`, returning its request.
fn answer(d: &mut TestDriver<Recovery>, result: FetchResult) -> EffectRequest {
    let effects = d.take_effects();
    assert_eq!(effects.len(), 1, "one lookup pending: {effects:?}");
    let request = effects[0].clone();
    d.complete_effect(request.clone(), result.encode());
    request
}

fn decoded<E: Event>(d: &TestDriver<Recovery>, logical: &str) -> Vec<E> {
    d.outputs(&name(logical))
        .iter()
        .map(|p| E::decode(p.value.as_deref().unwrap()).unwrap())
        .collect()
}

fn audits(d: &TestDriver<Recovery>) -> Vec<(String, AuditResult, ActorKind)> {
    decoded::<AuditEvent>(d, topics::AUDIT)
        .into_iter()
        .map(|a| (a.action, a.result, a.actor.kind))
        .collect()
}

#[test]
fn a_final_call_record_is_replayed_with_the_gateways_event_id() {
    let mut d = driver();
    missing(&mut d, 1);
    let request = answer(&mut d, found("completed", Some("human"), Some("3")));
    let asked: FetchRequest = serde_json::from_slice(&request.payload).unwrap();
    assert_eq!(
        (asked.call_sid.as_str(), asked.tenant_id.as_str()),
        (sid(1).as_str(), TENANT)
    );

    let events: Vec<CallEvent> = decoded(&d, topics::CALL_EVENTS);
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.source, CallEventSource::Recovery);
    assert_eq!(e.outcome, CallOutcome::Answered);
    assert_eq!(e.provider_status, "completed");
    assert_eq!(e.launch_id, Some(launch(1)));
    let rule = callstream_gateway::event::derive_id(&[TENANT, "twilio", &sid(1), "completed", "3"]);
    assert_eq!(e.event_id, rule);
    assert_eq!(e.provider_event_id, format!("{}:completed:3", sid(1)));

    let resolved: Vec<CompletionResolved> = decoded(&d, topics::COMPLETION_RESOLVED);
    assert_eq!(resolved[0].resolution, Resolution::Recovered);
    assert_eq!(resolved[0].completion_event_id, Some(rule));
    let exceptions: Vec<ExceptionEvent> = decoded(&d, topics::EXCEPTIONS);
    assert_eq!(exceptions.len(), 1);
    assert_eq!(
        exceptions[0].exception_id,
        case_ids::missing_exception_id(&launch(1))
    );
    assert_eq!(exceptions[0].status, ExceptionStatus::Resolved);
    assert_eq!(
        audits(&d),
        [(
            "recovery.recovered".into(),
            AuditResult::Applied,
            ActorKind::System
        )]
    );
    // The case is closed: a repeated completion-missing does nothing.
    missing(&mut d, 1);
    assert!(d.pending_effects().is_empty());
}

#[test]
fn a_call_still_in_progress_is_looked_at_again_a_bounded_number_of_times() {
    let mut d = driver();
    missing(&mut d, 1);
    answer(&mut d, found("in-progress", None, None));
    d.advance_wall_clock_ms(29_999);
    assert!(d.pending_effects().is_empty(), "waits the poll delay");
    d.advance_wall_clock_ms(1);
    answer(&mut d, found("in-progress", None, None));
    d.advance_wall_clock_ms(30_000);
    answer(&mut d, found("in-progress", None, None));
    let exceptions: Vec<ExceptionEvent> = decoded(&d, topics::EXCEPTIONS);
    assert_eq!(exceptions.len(), 1);
    assert_eq!(exceptions[0].exception_type, ExceptionType::RecoveryFailed);
    assert_eq!(exceptions[0].status, ExceptionStatus::Open);
    d.advance_wall_clock_ms(3_600_000);
    assert!(d.pending_effects().is_empty(), "given up: no more looks");
    assert!(decoded::<CallEvent>(&d, topics::CALL_EVENTS).is_empty());
}

#[test]
fn a_call_the_platform_lost_advances_the_contact_as_no_answer() {
    let mut d = driver();
    missing(&mut d, 1);
    answer(&mut d, FetchResult::NotFound);
    let events: Vec<CallEvent> = decoded(&d, topics::CALL_EVENTS);
    assert_eq!(events[0].outcome, CallOutcome::NoAnswer);
    // The contact processor re-normalises raw statuses: it must read no-answer too.
    assert_eq!(events[0].provider_status, "no-answer");
    assert_eq!(events[0].source, CallEventSource::Recovery);
    let resolved: Vec<CompletionResolved> = decoded(&d, topics::COMPLETION_RESOLVED);
    assert_eq!(resolved[0].resolution, Resolution::AdvancedNoAnswer);
    assert_eq!(audits(&d)[0].0, "recovery.advanced_no_answer");
}

#[test]
fn failed_lookups_retry_with_growing_jittered_delays_then_raise_an_exception() {
    let mut d = driver();
    missing(&mut d, 1);
    let mut waits = Vec::new();
    for _ in 0..2 {
        answer(&mut d, retriable());
        let mut waited = 0;
        while d.pending_effects().is_empty() {
            d.advance_wall_clock_ms(10);
            waited += 10;
            assert!(waited < 10_000, "no retry");
        }
        waits.push(waited);
    }
    assert!(
        (500..=1_000).contains(&waits[0]) && (1_000..=2_000).contains(&waits[1]),
        "{waits:?}"
    );
    answer(&mut d, retriable());
    let exceptions: Vec<ExceptionEvent> = decoded(&d, topics::EXCEPTIONS);
    assert_eq!(exceptions.len(), 1);
    assert_eq!(exceptions[0].exception_type, ExceptionType::RecoveryFailed);
    assert_eq!(
        audits(&d),
        [(
            "recovery.failed".into(),
            AuditResult::Rejected,
            ActorKind::System
        )]
    );
}

#[test]
fn a_lost_lookup_result_is_asked_for_again_and_a_stale_one_ignored() {
    let mut d = driver();
    missing(&mut d, 1);
    let lost = d.take_effects();
    d.restart();
    d.advance_wall_clock_ms(60_000);
    assert_eq!(
        d.pending_effects().len(),
        1,
        "asked again after the result timeout"
    );
    // The first lookup's answer turns up after all: superseded, ignored.
    d.complete_effect(
        lost[0].clone(),
        found("completed", None, Some("3")).encode(),
    );
    assert!(decoded::<CallEvent>(&d, topics::CALL_EVENTS).is_empty());
    answer(&mut d, found("completed", None, Some("3")));
    assert_eq!(decoded::<CallEvent>(&d, topics::CALL_EVENTS).len(), 1);
}

#[test]
fn a_late_completion_stops_recovery() {
    let mut d = driver();
    missing(&mut d, 1);
    answer(&mut d, found("in-progress", None, None));
    let late = CompletionResolved {
        event_id: case_ids::resolved_event_id(&launch(1)),
        tenant_id: TENANT.into(),
        occurred_at: chrono::DateTime::from_timestamp_millis(T0).unwrap(),
        causation_id: None,
        correlation_id: None,
        launch_id: launch(1),
        contact_id: CONTACT.into(),
        provider_call_id: Some(sid(1)),
        missing_event_id: case_ids::missing_event_id(&launch(1)),
        resolution: Resolution::LateCompletion,
        completion_event_id: Some(Uuid::from_u128(77)),
        outcome: Some(CallOutcome::Answered),
        actor: Actor::system("completion-detector"),
        late_by_ms: Some(5),
    };
    d.pipe(Input::new(
        name(topics::COMPLETION_RESOLVED),
        CONTACT,
        late.encode().unwrap(),
    ));
    d.advance_wall_clock_ms(3_600_000);
    assert!(d.pending_effects().is_empty());
    assert!(decoded::<CallEvent>(&d, topics::CALL_EVENTS).is_empty());
    assert!(audits(&d).is_empty());
}

#[test]
fn operator_commands_recover_advance_and_ignore_with_the_operator_as_actor() {
    // Recover a case that gave up.
    let mut d = driver();
    missing(&mut d, 1);
    answer(
        &mut d,
        FetchResult::Failed {
            retriable: false,
            reason: "401".into(),
        },
    );
    command(&mut d, 500, ContactCommandKind::Recover, Some(1));
    answer(
        &mut d,
        found("completed", Some("machine_end_beep"), Some("3")),
    );
    let events: Vec<CallEvent> = decoded(&d, topics::CALL_EVENTS);
    assert_eq!(events[0].outcome, CallOutcome::Voicemail);
    let audit: Vec<AuditEvent> = decoded(&d, topics::AUDIT);
    assert_eq!(audit.last().unwrap().action, "recovery.recovered");
    assert_eq!(
        audit.last().unwrap().actor,
        Actor::operator("ops@example.com")
    );
    assert_eq!(audit.last().unwrap().command_id, Some(Uuid::from_u128(500)));
    // Both exceptions close: the detector's and recovery's own.
    let closed: Vec<_> = decoded::<ExceptionEvent>(&d, topics::EXCEPTIONS)
        .into_iter()
        .filter(|e| e.status == ExceptionStatus::Resolved)
        .map(|e| e.exception_type)
        .collect();
    assert_eq!(
        closed,
        [
            ExceptionType::CompletionMissing,
            ExceptionType::RecoveryFailed
        ]
    );

    // Advance as voicemail, and a repeat of the same command.
    let mut d = driver();
    missing(&mut d, 2);
    command(&mut d, 501, ContactCommandKind::AdvanceVoicemail, Some(2));
    command(&mut d, 501, ContactCommandKind::AdvanceVoicemail, Some(2));
    let events: Vec<CallEvent> = decoded(&d, topics::CALL_EVENTS);
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].outcome, events[0].provider_status.as_str()),
        (CallOutcome::Voicemail, "completed")
    );
    assert_eq!(events[0].answered_by.as_deref(), Some("machine_start"));
    assert_eq!(
        decoded::<CompletionResolved>(&d, topics::COMPLETION_RESOLVED)[0].resolution,
        Resolution::AdvancedVoicemail
    );
    // The lookup asked for before the command comes back: nothing more happens.
    answer(&mut d, found("completed", None, Some("3")));
    assert_eq!(decoded::<CallEvent>(&d, topics::CALL_EVENTS).len(), 1);

    // Ignore: the case closes without a call event; then a command finds nothing.
    let mut d = driver();
    missing(&mut d, 3);
    command(&mut d, 502, ContactCommandKind::Ignore, Some(3));
    assert!(decoded::<CallEvent>(&d, topics::CALL_EVENTS).is_empty());
    let exceptions: Vec<ExceptionEvent> = decoded(&d, topics::EXCEPTIONS);
    assert_eq!(exceptions[0].status, ExceptionStatus::Ignored);
    command(&mut d, 503, ContactCommandKind::AdvanceNoAnswer, Some(3));
    assert_eq!(
        audits(&d),
        [
            (
                "recovery.ignored".into(),
                AuditResult::Applied,
                ActorKind::Operator
            ),
            (
                "recovery.advanced_no_answer".into(),
                AuditResult::Rejected,
                ActorKind::Operator
            ),
        ]
    );
    // Other kinds belong to the contact processor.
    command(&mut d, 504, ContactCommandKind::RetryNow, None);
    assert_eq!(audits(&d).len(), 2);
}

//! Recovery on the runtime's in-memory driver, with lookups completed by
//! hand: recovered, still in progress (bounded), not found, failing
//! (bounded, jittered), lost results and late completions.

mod support;

use callstream_domain::ids::completion_case as case_ids;
use callstream_platform::topics;
use callstream_recovery::wire::{FetchRequest, FetchResult};
use callstream_runtime::Input;
use callstream_schemas::{
    Actor, ActorKind, AuditEvent, AuditResult, CallEvent, CallEventSource, CallOutcome,
    CompletionResolved, Event, ExceptionEvent, ExceptionStatus, ExceptionType, Resolution,
};
use support::*;
use uuid::Uuid;

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

    let events: Vec<CallEvent> = d.outputs(&name(topics::CALL_EVENTS));
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.source, CallEventSource::Recovery);
    assert_eq!(e.outcome, CallOutcome::Answered);
    assert_eq!(e.provider_status, "completed");
    assert_eq!(e.launch_id, Some(launch(1)));
    let rule =
        callstream_domain::ids::gateway::twilio_call_event(TENANT, &sid(1), "completed", "3");
    assert_eq!(e.event_id, rule);
    assert_eq!(e.provider_event_id, format!("{}:completed:3", sid(1)));

    let resolved: Vec<CompletionResolved> = d.outputs(&name(topics::COMPLETION_RESOLVED));
    assert_eq!(resolved[0].resolution, Resolution::Recovered);
    assert_eq!(resolved[0].completion_event_id, Some(rule));
    let exceptions: Vec<ExceptionEvent> = d.outputs(&name(topics::EXCEPTIONS));
    assert_eq!(exceptions.len(), 1);
    assert_eq!(
        exceptions[0].exception_id,
        case_ids::missing_exception(&launch(1))
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
    let exceptions: Vec<ExceptionEvent> = d.outputs(&name(topics::EXCEPTIONS));
    assert_eq!(exceptions.len(), 1);
    assert_eq!(exceptions[0].exception_type, ExceptionType::RecoveryFailed);
    assert_eq!(exceptions[0].status, ExceptionStatus::Open);
    d.advance_wall_clock_ms(3_600_000);
    assert!(d.pending_effects().is_empty(), "given up: no more looks");
    assert!(d
        .outputs::<CallEvent>(&name(topics::CALL_EVENTS))
        .is_empty());
}

#[test]
fn a_call_the_platform_lost_advances_the_contact_as_no_answer() {
    let mut d = driver();
    missing(&mut d, 1);
    answer(&mut d, FetchResult::NotFound);
    let events: Vec<CallEvent> = d.outputs(&name(topics::CALL_EVENTS));
    assert_eq!(events[0].outcome, CallOutcome::NoAnswer);
    // The contact processor re-normalises raw statuses: it must read no-answer too.
    assert_eq!(events[0].provider_status, "no-answer");
    assert_eq!(events[0].source, CallEventSource::Recovery);
    let resolved: Vec<CompletionResolved> = d.outputs(&name(topics::COMPLETION_RESOLVED));
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
    let exceptions: Vec<ExceptionEvent> = d.outputs(&name(topics::EXCEPTIONS));
    assert_eq!(exceptions.len(), 1);
    assert_eq!(exceptions[0].exception_type, ExceptionType::RecoveryFailed);
    let lookup = (
        callstream_schemas::AUDIT_RECOVERY_LOOKUP.to_string(),
        AuditResult::Applied,
        ActorKind::System,
    );
    let failed = (
        "recovery.failed".to_string(),
        AuditResult::Rejected,
        ActorKind::System,
    );
    assert_eq!(
        audits(&d),
        [lookup.clone(), lookup.clone(), lookup, failed],
        "each lookup is audited (the console counts them), then the give-up"
    );
    let lookups: Vec<AuditEvent> = d
        .outputs::<AuditEvent>(&name(topics::AUDIT))
        .into_iter()
        .filter(|a| a.action == callstream_schemas::AUDIT_RECOVERY_LOOKUP)
        .collect();
    let reasons: Vec<_> = lookups.iter().map(|a| a.reason.as_deref()).collect();
    assert_eq!(
        reasons,
        [
            Some("lookup_failed"),
            Some("lookup_failed"),
            Some("gave_up")
        ]
    );
    assert!(
        lookups[0]
            .detail
            .as_deref()
            .unwrap()
            .starts_with("lookup 1: failed: "),
        "{:?}",
        lookups[0].detail
    );
    let ids: std::collections::HashSet<_> = lookups.iter().map(|a| a.event_id).collect();
    assert_eq!(ids.len(), 3, "each lookup has its own audit id");
    assert!(lookups
        .iter()
        .all(|a| a.subject_id == launch(1).to_string() && a.subject_type == "launch"));
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
    assert!(d
        .outputs::<CallEvent>(&name(topics::CALL_EVENTS))
        .is_empty());
    answer(&mut d, found("completed", None, Some("3")));
    assert_eq!(d.outputs::<CallEvent>(&name(topics::CALL_EVENTS)).len(), 1);
}

#[test]
fn a_late_completion_stops_recovery() {
    let mut d = driver();
    missing(&mut d, 1);
    answer(&mut d, found("in-progress", None, None));
    let late = CompletionResolved {
        event_id: case_ids::resolved_event(&launch(1)),
        tenant_id: TENANT.into(),
        occurred_at: chrono::DateTime::from_timestamp_millis(T0).unwrap(),
        causation_id: None,
        correlation_id: None,
        launch_id: launch(1),
        contact_id: CONTACT.into(),
        provider_call_id: Some(sid(1)),
        missing_event_id: case_ids::missing_event(&launch(1)),
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
    assert!(d
        .outputs::<CallEvent>(&name(topics::CALL_EVENTS))
        .is_empty());
    assert_eq!(
        audits(&d),
        [(
            callstream_schemas::AUDIT_RECOVERY_LOOKUP.to_string(),
            AuditResult::Applied,
            ActorKind::System
        )],
        "only the look that found the call in progress; the late completion closes nothing here"
    );
}

/// Every permanent failure the registry (`callstream_domain::failures`) gives recovery
/// opens its exception.
#[test]
fn every_permanent_failure_of_recovery_opens_an_exception() {
    use callstream_domain::failures::{Owner, PermanentFailure};
    use callstream_e2e::failures::{assert_opened, no_scenario};
    for failure in PermanentFailure::of(Owner::Recovery) {
        let exceptions: Vec<ExceptionEvent> = match failure {
            PermanentFailure::RecoveryGaveUp => {
                let mut d = driver();
                missing(&mut d, 1);
                for _ in 0..3 {
                    answer(&mut d, found("in-progress", None, None));
                    d.advance_wall_clock_ms(30_000);
                }
                d.outputs(&name(topics::EXCEPTIONS))
            }
            other => no_scenario("recovery", other),
        };
        assert_opened(failure, &exceptions);
    }
}

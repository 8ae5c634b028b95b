//! The tally counts things, not records: repeats change nothing, and a
//! launch is open until its completion or its closed missing case.

use callstream_e2e::fixtures;
use callstream_schemas::types::*;
use callstream_schemas::Event;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Tally;

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

fn launch(id: Uuid, status: LaunchStatus, call: Option<&str>) -> Vec<u8> {
    let job = Uuid::new_v4();
    CallLaunch {
        occurred_at: at(1_000),
        provider_call_id: call.map(str::to_owned),
        ..fixtures::call_launch("acme", "c-1", "spring", id, job, status, at(900))
    }
    .encode()
    .unwrap()
}

fn completion(launch: Option<Uuid>, call: &str, status: &str, source: CallEventSource) -> Vec<u8> {
    CallEvent {
        integration_id: Some("acme-twilio".into()),
        provider_event_id: "e".into(),
        launch_id: launch,
        source,
        duration_seconds: Some(30),
        sequence_number: Some(3),
        received_at: at(5_100),
        ..fixtures::call_event("acme", "c-1", call, status, at(5_000))
    }
    .encode()
    .unwrap()
}

fn missing(id: Uuid) -> Vec<u8> {
    CompletionMissing {
        accepted_at: at(1_000),
        window_ms: 60_000,
        ..fixtures::completion_missing("acme", "c-1", id, "CA1", at(61_000))
    }
    .encode()
    .unwrap()
}

fn resolved(id: Uuid, resolution: Resolution) -> Vec<u8> {
    CompletionResolved {
        event_id: Uuid::new_v4(),
        tenant_id: "acme".into(),
        occurred_at: at(64_000),
        causation_id: None,
        correlation_id: None,
        launch_id: id,
        contact_id: "c-1".into(),
        provider_call_id: Some("CA1".into()),
        missing_event_id: Uuid::new_v4(),
        resolution,
        completion_event_id: None,
        outcome: Some(CallOutcome::Answered),
        actor: Actor::system("recovery"),
        late_by_ms: None,
    }
    .encode()
    .unwrap()
}

#[test]
fn a_completion_closes_its_launch_once_whatever_the_repeats() {
    let id = Uuid::new_v4();
    let mut t = Tally::default();
    t.add(&launch(id, LaunchStatus::Accepted, Some("CA1")), false);
    assert_eq!(t.open_launches(true), 1);
    // Ringing is not a completion.
    t.add(
        &completion(Some(id), "CA1", "ringing", CallEventSource::Live),
        false,
    );
    assert_eq!(t.open_launches(true), 1);
    for _ in 0..2 {
        t.add(
            &completion(Some(id), "CA1", "completed", CallEventSource::Live),
            false,
        );
    }
    assert_eq!(t.open_launches(true), 0);
    assert_eq!(t.delivered.len(), 1);
    assert_eq!(t.accepted(), 1);
}

#[test]
fn completions_without_a_launch_id_match_by_call_id_in_either_order() {
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    let mut t = Tally::default();
    t.add(&launch(first, LaunchStatus::Accepted, Some("CA9")), false);
    t.add(
        &completion(None, "CA9", "busy", CallEventSource::Live),
        false,
    );
    // The callback beats the dispatcher's report.
    t.add(
        &completion(None, "CA10", "no-answer", CallEventSource::Live),
        false,
    );
    assert_eq!(t.unmatched.len(), 1);
    t.add(&launch(second, LaunchStatus::Accepted, Some("CA10")), false);
    assert_eq!(t.delivered[&first].0, "busy");
    assert_eq!(t.delivered[&second].0, "no_answer");
    assert!(t.unmatched.is_empty());
    assert_eq!(t.open_launches(true), 0);
}

#[test]
fn a_completion_before_its_launch_report_still_counts() {
    let id = Uuid::new_v4();
    let mut t = Tally::default();
    t.add(
        &completion(Some(id), "CA1", "completed", CallEventSource::Live),
        false,
    );
    t.add(&launch(id, LaunchStatus::Accepted, Some("CA1")), false);
    assert_eq!(t.open_launches(true), 0);
    assert_eq!(t.delivered.len(), 1);
}

#[test]
fn a_missing_launch_stays_open_until_its_case_closes() {
    let cases = [
        (true, None, 1),
        (false, None, 0),
        (true, Some(Resolution::Recovered), 0),
        (true, Some(Resolution::AdvancedNoAnswer), 0),
    ];
    for (recovery, resolution, open) in cases {
        let id = Uuid::new_v4();
        let mut t = Tally::default();
        t.add(&launch(id, LaunchStatus::Accepted, Some("CA1")), false);
        t.add(&missing(id), false);
        if let Some(r) = resolution {
            t.add(&resolved(id, r), false);
        }
        assert_eq!(t.open_launches(recovery), open, "{recovery} {resolution:?}");
    }
}

#[test]
fn an_ambiguous_launch_takes_its_settled_status_and_then_keeps_it() {
    let id = Uuid::new_v4();
    let mut t = Tally::default();
    t.add(&launch(id, LaunchStatus::Ambiguous, None), false);
    assert_eq!(t.accepted(), 0);
    t.add(&launch(id, LaunchStatus::Accepted, Some("CA1")), false);
    t.add(&launch(id, LaunchStatus::Failed, None), false);
    assert_eq!(t.launches[&id].status, LaunchStatus::Accepted);
    assert!(t.launches[&id].accepted_at_ms.is_some());
}

#[test]
fn dead_letters_and_garbage_are_counted_not_decoded() {
    let mut t = Tally::default();
    t.add(b"not avro", false);
    t.add(b"whatever", true);
    assert_eq!((t.records, t.undecodable, t.dead_letters), (2, 1, 1));
}

#[test]
fn the_time_from_a_completion_to_the_plan_it_caused_is_kept_in_either_order() {
    let mut t = Tally::default();
    let event = CallEvent {
        received_at: at(5_100),
        ..fixtures::call_event("acme", "c-1", "CA1", "completed", at(5_000))
    };
    let plan = ScheduleRequest {
        causation_id: Some(event.event_id),
        ..fixtures::schedule_plan("acme", "c-1", "spring", Uuid::new_v4(), at(5_350))
    };
    // The plan is read first (another topic), then its cause; a repeat changes nothing.
    t.add(&plan.encode().unwrap(), false);
    t.add(&event.encode().unwrap(), false);
    t.add(&event.encode().unwrap(), false);
    // A plan caused by something else is not a completion's.
    let other = ScheduleRequest {
        causation_id: Some(Uuid::new_v4()),
        ..fixtures::schedule_plan("acme", "c-2", "spring", Uuid::new_v4(), at(9_000))
    };
    t.add(&other.encode().unwrap(), false);
    assert_eq!(t.completion_to_plan_ms(), vec![250]);
}

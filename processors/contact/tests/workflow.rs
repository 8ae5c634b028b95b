//! The workflow's promises through the processor: duplicates change
//! nothing, backward or stale transitions are counted and never applied,
//! bad input is dead-lettered, and the same input always gives the same
//! output bytes, across restarts too.

mod support;

use callstream_runtime::{header, Input, Processor};
use callstream_schemas::*;
use proptest::prelude::*;
use support::*;

#[test]
fn duplicates_by_event_id_or_by_call_and_outcome_change_nothing() {
    let mut h = harness();
    let launch = h.launched("c1");
    let voicemail = call_event(
        "c1",
        "CA1",
        Some(launch.launch_id),
        "completed",
        Some("machine_start"),
        t0() + minutes(7),
    );
    h.call(&voicemail);
    let (count, state) = (h.output_count(), h.state("c1"));
    // The same delivery again, and the same result under another delivery id.
    h.call(&voicemail);
    let mut redelivered = voicemail.clone();
    redelivered.event_id = uuid::Uuid::from_u128(1234);
    h.call(&redelivered);
    assert_eq!(h.output_count(), count, "nothing emitted");
    assert_eq!(h.state("c1"), state, "nothing changed");
    // A duplicate launch request (the CRM retried it) plans nothing either.
    h.command(&launch_request("c1", CAMPAIGN, "r1"), t0() + minutes(8));
    assert_eq!(h.output_count(), count);
}

#[test]
fn a_second_entry_into_a_campaign_with_a_call_pending_is_refused() {
    let mut h = harness();
    let launch = h.launched("c1");
    // A new request id while the first call is in flight, then after its result.
    h.command(&launch_request("c1", CAMPAIGN, "r2"), t0() + minutes(6));
    let refused = h.audits().pop().unwrap();
    assert_eq!(
        (refused.result, refused.reason.as_deref()),
        (AuditResult::Rejected, Some("already_planned"))
    );
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        CallAnalysis::default(),
        t0() + minutes(7),
    ));
    h.command(&launch_request("c1", CAMPAIGN, "r3"), t0() + minutes(8));
    let entry = h.plans().pop().unwrap();
    assert_eq!(
        (entry.origin, entry.attempt),
        (JobOrigin::CampaignEntry, Some(1)),
        "entered afresh"
    );
    let state = h.state("c1");
    assert_eq!(
        (state.workflow_state, state.workflow_step),
        (WorkflowState::Scheduled, 1)
    );
}

#[test]
fn a_late_progress_report_is_rejected_and_counted_not_applied() {
    let mut h = harness();
    let launch = h.launched("c1");
    h.call(&call_event(
        "c1",
        "CA1",
        Some(launch.launch_id),
        "ringing",
        None,
        t0() + minutes(6),
    ));
    assert_eq!(h.state("c1").workflow_state, WorkflowState::AwaitingResult);
    h.call(&call_event(
        "c1",
        "CA1",
        Some(launch.launch_id),
        "busy",
        None,
        t0() + minutes(7),
    ));
    let state = h.state("c1");
    assert_eq!(
        (state.workflow_state, state.workflow_step),
        (WorkflowState::Scheduled, 1)
    );
    let (plans, crm) = (h.plans().len(), h.crm().len());
    // "in-progress" of the finished call arrives late: its step is over.
    h.call(&call_event(
        "c1",
        "CA1",
        Some(launch.launch_id),
        "in-progress",
        None,
        t0() + minutes(6),
    ));
    let after = h.state("c1");
    assert_eq!(after.rejected_transitions, 1);
    assert_eq!(
        (after.workflow_state, after.workflow_step),
        (WorkflowState::Scheduled, 1)
    );
    assert_eq!(
        (h.plans().len(), h.crm().len()),
        (plans, crm),
        "nothing decided"
    );
}

#[test]
fn decisions_duplicates_and_rejections_are_counted() {
    let metrics = callstream_contact::ContactMetrics::default();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let mut h = harness_with(metrics);
    let launch = h.launched("c1");
    let busy = call_event(
        "c1",
        "CA1",
        Some(launch.launch_id),
        "busy",
        None,
        t0() + minutes(7),
    );
    h.call(&busy);
    h.call(&busy);
    h.call(&call_event(
        "c1",
        "CA1",
        Some(launch.launch_id),
        "ringing",
        None,
        t0() + minutes(6),
    ));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        r#"contact_decisions_total{kind="plan",reason="campaign_entry"} 1"#,
        r#"contact_decisions_total{kind="launch",reason="launched"} 1"#,
        r#"contact_decisions_total{kind="plan",reason="busy_retry"} 1"#,
        r#"contact_duplicates_total{input="call_event"} 1"#,
        r#"contact_rejected_transitions_total{reason="stale_step"} 1"#,
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
}

#[test]
fn a_second_result_for_the_same_call_is_rejected_and_opens_an_exception() {
    let mut h = harness();
    let analysis = CallAnalysis::default();
    let launch = h.launched("c1");
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        analysis,
        t0() + minutes(7),
    ));
    assert_eq!(h.state("c1").workflow_state, WorkflowState::Completed);
    let count = h.output_count();
    h.call(&call_event(
        "c1",
        "CA1",
        Some(launch.launch_id),
        "no-answer",
        None,
        t0() + minutes(8),
    ));
    let state = h.state("c1");
    assert_eq!(state.rejected_transitions, 1);
    assert_eq!(
        state.workflow_state,
        WorkflowState::Completed,
        "a finished step never reopens"
    );
    assert_eq!(h.plans().len(), 1, "no retry of an answered call");
    assert_eq!(
        h.output_count(),
        count + 2,
        "only the state with the counter, and the conflict's exception"
    );
    let conflict = h.exceptions().pop().unwrap();
    assert_eq!(
        (conflict.exception_type, conflict.reason.as_str()),
        (ExceptionType::TransitionRejected, "result_already_recorded")
    );
    assert_eq!(conflict.call_id.as_deref(), Some("CA1"));
}

#[test]
fn bad_records_go_to_the_dead_letters_with_their_reason() {
    let mut h = harness();
    let topic = h.topics.name("call-events");
    h.driver
        .pipe(Input::new(topic.clone(), "c1", b"not avro".to_vec()));
    let mut wrong_key = call_event("c1", "CA1", None, "busy", None, t0());
    wrong_key.campaign_id = Some(CAMPAIGN.into());
    h.driver
        .pipe(Input::new(topic.clone(), "c2", wrong_key.encode().unwrap()));
    let mut unknown = call_event("c1", "CA2", None, "exploded", None, t0());
    unknown.campaign_id = Some(CAMPAIGN.into());
    h.call(&unknown);
    let reasons: Vec<String> = h
        .driver
        .dead_letters()
        .iter()
        .map(|d| d.headers.get_str(header::DLQ_REASON).unwrap().to_owned())
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons[0].starts_with("cannot decode"), "{}", reasons[0]);
    assert!(reasons[1].contains("record key"), "{}", reasons[1]);
    assert!(reasons[2].contains("exploded"), "{}", reasons[2]);
    assert_eq!(h.states().len(), 0, "no trace but the dead letters");
}

#[test]
fn recovery_commands_are_left_to_the_recovery_processor() {
    let mut h = harness();
    h.launched("c1");
    let count = h.output_count();
    for kind in [
        ContactCommandKind::Recover,
        ContactCommandKind::AdvanceNoAnswer,
        ContactCommandKind::AdvanceVoicemail,
    ] {
        h.command(&command(kind, "c1", kind.as_str()), t0() + minutes(9));
    }
    // An ignore naming a launch alone is about its missing-completion case:
    // recovery audits it, not the contact processor.
    let ignore_case = ContactCommand {
        launch_id: Some(uuid::Uuid::from_u128(0x1au128)),
        exception_id: None,
        ..command(ContactCommandKind::Ignore, "c1", "ignore-case")
    };
    h.command(&ignore_case, t0() + minutes(9));
    assert_eq!(h.output_count(), count, "skipped, not dead-lettered");
}

type ScriptStep<P> = Box<dyn FnMut(&mut Harness<P>)>;
/// Topic, key and value of one output.
type Record = (String, Option<Vec<u8>>, Option<Vec<u8>>);

/// A scripted day of one contact: entry, launch, results, a callback.
fn script<P: Processor>(h: &mut Harness<P>, restart_after: Option<usize>) {
    let mut steps: Vec<ScriptStep<P>> = Vec::new();
    steps.push(Box::new(|h| {
        h.command(&launch_request("c1", CAMPAIGN, "r1"), t0())
    }));
    steps.push(Box::new(|h| {
        h.command(&launch_request("c2", CAMPAIGN, "r1"), t0())
    }));
    steps.push(Box::new(|h| {
        let plan = h.plans()[0].clone();
        h.command(
            &launch_due("c1", &plan, t0() + minutes(3)),
            t0() + minutes(3),
        );
    }));
    steps.push(Box::new(|h| {
        let l = h.launches()[0].clone();
        let analysis = CallAnalysis {
            callback_requested: true,
            callback_phrase: Some("tomorrow afternoon".into()),
            summary: Some("busy at work".into()),
            ..CallAnalysis::default()
        };
        h.call(&answered(
            "c1",
            "CA1",
            Some(l.launch_id),
            analysis,
            t0() + minutes(9),
        ));
    }));
    steps.push(Box::new(|h| {
        let plan = h.plans()[1].clone();
        h.command(
            &launch_due("c2", &plan, t0() + minutes(4)),
            t0() + minutes(4),
        );
    }));
    steps.push(Box::new(|h| {
        let l = h.launches()[1].clone();
        h.call(&call_event(
            "c2",
            "CA2",
            Some(l.launch_id),
            "no-answer",
            None,
            t0() + minutes(10),
        ));
    }));
    for (i, step) in steps.iter_mut().enumerate() {
        step(h);
        if restart_after == Some(i) {
            h.driver.restart();
        }
    }
}

fn everything<P: Processor>(h: &Harness<P>) -> Vec<Record> {
    [
        "schedule-requests",
        "launch-commands",
        "crm-commands",
        "exceptions",
        "audit",
        "contact-state",
        "dead-letters",
    ]
    .iter()
    .flat_map(|t| {
        h.driver
            .records(&h.topics.name(t))
            .into_iter()
            .map(|p| (p.topic.clone(), p.key.clone(), p.value.clone()))
    })
    .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// A restart at any point, or none, gives byte-identical outputs: the
    /// state restored from the changelog decides exactly as before.
    #[test]
    fn replays_and_restarts_produce_identical_events(restart in proptest::option::of(0usize..6)) {
        let mut reference = harness();
        script(&mut reference, None);
        let mut h = harness();
        script(&mut h, restart);
        let expected = everything(&reference);
        prop_assert!(expected.len() > 10);
        prop_assert_eq!(everything(&h), expected);
    }
}

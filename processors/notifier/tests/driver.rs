//! The notifier on the runtime's in-memory driver: routing, the outbox's sends settled by
//! hand, and the watch's own alerts, with the repartition topics piped back in as the
//! broker would deliver them.

#![allow(clippy::unwrap_used)]

use callstream_notifier::outbox::SendResult;
use callstream_notifier::watch::Thresholds;
use callstream_notifier::{
    processor, spec, Channels, Notifier, NotifierConfig, NotifierMetrics, APP_ID,
};
use callstream_platform::{topics, Topics};
use callstream_runtime::{Input, TestDriver};
use callstream_schemas::{
    Actor, Alert, AlertKind, AlertStatus, AuditEvent, ControlChange, ControlSetting, ControlValue,
    Event, ExceptionEvent, ExceptionStatus, ExceptionType, NotificationRoute, NotificationRoutes,
};
use uuid::Uuid;

const T0: i64 = 1_780_000_000_000;

fn name(logical: &str) -> String {
    Topics::default().name(logical)
}

fn driver(thresholds: Thresholds) -> TestDriver<Notifier> {
    let channels = Channels::parse(
        r#"
[channels.chat]
kind = "chat"
url = "http://127.0.0.1:9/chat"
tenants = ["acme"]
per_minute = 6000
"#,
        std::path::Path::new("."),
    )
    .unwrap();
    let mut config = NotifierConfig::new(Topics::default(), channels);
    config.thresholds = thresholds;
    let mut d = TestDriver::new(
        processor(config, NotifierMetrics::new()),
        spec(&Topics::default(), APP_ID),
        4,
        T0,
    );
    let change = ControlChange {
        event_id: Uuid::new_v4(),
        tenant_id: "acme".into(),
        occurred_at: chrono::DateTime::from_timestamp_millis(T0).unwrap(),
        causation_id: None,
        correlation_id: None,
        setting: ControlSetting::NotificationRoutes,
        campaign_id: None,
        new_value: ControlValue {
            notifications: Some(NotificationRoutes {
                routes: vec![NotificationRoute {
                    kinds: vec!["*".into()],
                    channel: "chat".into(),
                    urgent: false,
                }],
                quiet_hours: None,
                digest_seconds: 0,
            }),
            ..ControlValue::default()
        },
        old_value: None,
        actor: Actor::operator("admin"),
        reason: None,
    };
    d.set_global(
        &name(topics::CONTROL),
        change.record_key(),
        Some(change.encode().unwrap()),
    );
    d
}

/// Pipes what the notifier wrote to its own inputs (alerts, its repartition topics) back
/// in, until nothing new comes, and answers every send with `result`; each round takes
/// 10 ms of the wall clock.
fn settle(d: &mut TestDriver<Notifier>, result: &SendResult) {
    for _ in 0..100 {
        let mut moved = false;
        for topic in [
            topics::ALERTS,
            topics::NOTIFIER_SIGNALS,
            topics::NOTIFICATIONS,
        ] {
            for record in d.take_records(&name(topic)) {
                moved = true;
                let mut input = Input::new(
                    name(topic),
                    record.key.clone().unwrap_or_default(),
                    record.value.clone().unwrap_or_default(),
                );
                input.headers = record.headers.clone();
                d.pipe(input);
            }
        }
        for effect in d.take_effects() {
            moved = true;
            d.complete_effect(effect, result.encode());
        }
        if !moved {
            return;
        }
        // The channel's pace: the next send's turn comes 10 ms after the last.
        d.advance_wall_clock_ms(10);
    }
    panic!("the notifier did not settle");
}

fn alerts(d: &TestDriver<Notifier>) -> Vec<(AlertKind, AlertStatus)> {
    d.outputs::<AuditEvent>(&name(topics::AUDIT))
        .iter()
        .filter(|a| a.action == callstream_notifier::AUDIT_SENT)
        .filter_map(|a| {
            let detail = a.detail.clone().unwrap_or_default();
            let kind = [
                AlertKind::DeadLetters,
                AlertKind::MissingBacklog,
                AlertKind::ErrorRate,
            ]
            .into_iter()
            .find(|k| detail.contains(&k.as_str().replace('_', " ")))?;
            let status = if detail.contains("resolved") {
                AlertStatus::Resolved
            } else {
                AlertStatus::Raised
            };
            Some((kind, status))
        })
        .collect()
}

#[test]
fn a_dead_letter_raises_an_alert_that_resolves_when_the_window_passes() {
    let mut d = driver(Thresholds {
        window_ms: 3_000,
        ..Thresholds::default()
    });
    let parked = callstream_e2e::fixtures::exception(
        "acme",
        "c-1",
        Uuid::new_v4(),
        ExceptionStatus::Open,
        ExceptionType::NoSlot,
        Actor::system("scheduler"),
        chrono::DateTime::from_timestamp_millis(T0).unwrap(),
    );
    d.pipe(
        Input::new(name(topics::DEAD_LETTERS), "c-1", parked.encode().unwrap())
            .header("dlq-app", "scheduler")
            .header("dlq-kind", "record")
            .header("dlq-source", "schedule-requests/0/7")
            .header("dlq-reason", "a test"),
    );
    settle(&mut d, &SendResult::Sent);
    assert_eq!(alerts(&d), [(AlertKind::DeadLetters, AlertStatus::Raised)]);
    d.advance_wall_clock_ms(3_000);
    settle(&mut d, &SendResult::Sent);
    assert_eq!(
        alerts(&d),
        [
            (AlertKind::DeadLetters, AlertStatus::Raised),
            (AlertKind::DeadLetters, AlertStatus::Resolved)
        ]
    );
    let raised: Vec<Alert> = d.outputs(&name(topics::ALERTS));
    assert!(raised.is_empty(), "piped back in: {raised:?}");
    // The letter opened an exception under the id the dead-letters view gives it (the
    // first record of its partition of the dead-letter topic).
    let opened: Vec<ExceptionEvent> = d.outputs(&name(topics::EXCEPTIONS));
    assert_eq!(opened.len(), 1);
    assert_eq!(opened[0].exception_type, ExceptionType::DeadLetter);
    assert_eq!(opened[0].status, ExceptionStatus::Open);
    let letter = d.records(&name(topics::EXCEPTIONS))[0].key.clone().unwrap();
    assert_eq!(letter, b"c-1");
    let partition = callstream_runtime::partitioner::partition_for_key(b"c-1", 4);
    assert_eq!(
        opened[0].exception_id,
        callstream_domain::ids::view::dead_letter(&name(topics::DEAD_LETTERS), partition, 0)
    );
    assert!(opened[0]
        .detail
        .as_deref()
        .unwrap()
        .contains("schedule-requests/0/7"));
}

fn opened(contact: &str, t: ExceptionType, id: Uuid) -> ExceptionEvent {
    callstream_e2e::fixtures::exception(
        "acme",
        contact,
        id,
        ExceptionStatus::Open,
        t,
        Actor::system("crm-dispatcher"),
        chrono::DateTime::from_timestamp_millis(T0).unwrap(),
    )
}

#[test]
fn a_message_that_fails_for_good_opens_an_exception_that_is_not_notified_itself() {
    let mut d = driver(Thresholds::default());
    let e = opened("c-1", ExceptionType::CrmFailed, Uuid::new_v4());
    d.pipe(Input::new(
        name(topics::EXCEPTIONS),
        "c-1",
        e.encode().unwrap(),
    ));
    settle(
        &mut d,
        &SendResult::Failed {
            retriable: false,
            reason: "404 no such hook".into(),
        },
    );
    let failures: Vec<ExceptionEvent> = d.outputs(&name(topics::EXCEPTIONS));
    assert_eq!(failures.len(), 1);
    assert_eq!(
        failures[0].exception_type,
        ExceptionType::NotificationFailed
    );
    assert!(failures[0]
        .detail
        .as_deref()
        .unwrap()
        .contains("404 no such hook"));
    // Fed back in, as the broker would: it is not notified (no loop).
    let record = d.take_records(&name(topics::EXCEPTIONS)).remove(0);
    d.pipe(Input::new(
        name(topics::EXCEPTIONS),
        record.key.unwrap(),
        record.value.unwrap(),
    ));
    settle(&mut d, &SendResult::Sent);
    assert!(d.records(&name(topics::EXCEPTIONS)).is_empty());
    let audits: Vec<AuditEvent> = d.outputs(&name(topics::AUDIT));
    let actions: Vec<&str> = audits.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, [callstream_notifier::AUDIT_FAILED]);
}

#[test]
fn a_missing_completion_seen_twice_counts_once_in_the_backlog() {
    let mut d = driver(Thresholds {
        missing_backlog: 2,
        ..Thresholds::default()
    });
    let one = Uuid::new_v4();
    for _ in 0..3 {
        let e = opened("c-1", ExceptionType::CompletionMissing, one);
        d.pipe(Input::new(
            name(topics::EXCEPTIONS),
            "c-1",
            e.encode().unwrap(),
        ));
    }
    settle(&mut d, &SendResult::Sent);
    assert!(!alerts(&d).contains(&(AlertKind::MissingBacklog, AlertStatus::Raised)));
    let two = opened("c-2", ExceptionType::CompletionMissing, Uuid::new_v4());
    d.pipe(Input::new(
        name(topics::EXCEPTIONS),
        "c-2",
        two.encode().unwrap(),
    ));
    settle(&mut d, &SendResult::Sent);
    assert!(alerts(&d).contains(&(AlertKind::MissingBacklog, AlertStatus::Raised)));
}

/// Every permanent failure the registry (`callstream_domain::failures`) gives the
/// notifier opens its exception.
#[test]
fn every_permanent_failure_of_the_notifier_opens_an_exception() {
    use callstream_domain::failures::{Owner, PermanentFailure};
    use callstream_e2e::failures::{assert_opened, no_scenario};
    for failure in PermanentFailure::of(Owner::Notifier) {
        let mut d = driver(Thresholds::default());
        match failure {
            PermanentFailure::DeadLettered => {
                let parked = opened("c-1", ExceptionType::NoSlot, Uuid::new_v4());
                d.pipe(
                    Input::new(name(topics::DEAD_LETTERS), "c-1", parked.encode().unwrap())
                        .header("dlq-app", "scheduler")
                        .header("dlq-kind", "record")
                        .header("dlq-source", "schedule-requests/0/7")
                        .header("dlq-reason", "a test"),
                );
                settle(&mut d, &SendResult::Sent);
            }
            PermanentFailure::NotificationUndeliverable => {
                let e = opened("c-1", ExceptionType::CrmFailed, Uuid::new_v4());
                d.pipe(Input::new(
                    name(topics::EXCEPTIONS),
                    "c-1",
                    e.encode().unwrap(),
                ));
                let refused = SendResult::Failed {
                    retriable: false,
                    reason: "404 no such hook".into(),
                };
                settle(&mut d, &refused);
            }
            other => no_scenario("the notifier", other),
        }
        assert_opened(failure, &d.outputs(&name(topics::EXCEPTIONS)));
    }
}

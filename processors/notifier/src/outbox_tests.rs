use std::time::Duration;

use callstream_schemas::Timestamp;
use chrono::{NaiveTime, TimeZone};
use proptest::prelude::*;

use super::*;

const CHANNEL: &str = "ops";
const MIN: i64 = 60_000;

fn rules() -> Rules {
    Rules {
        interval_ms: 2_000,
        max_attempts: 3,
        backoff: Backoff {
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(8),
        },
        result_timeout_ms: 120_000,
        memory_ms: 7 * 86_400_000,
    }
}

fn note(n: u128, key: &str, urgent: bool) -> Notification {
    Notification {
        event_id: Uuid::from_u128(n),
        tenant_id: "acme".into(),
        occurred_at: Timestamp::from_timestamp_millis(0).unwrap(),
        causation_id: None,
        correlation_id: None,
        notification_id: Uuid::from_u128(n),
        channel: CHANNEL.into(),
        kind: "exception.no_slot".into(),
        digest_key: key.into(),
        severity: NotificationSeverity::Warning,
        urgent,
        title: format!("n{n}"),
        text: String::new(),
        link: None,
        subject_id: None,
    }
}

fn digest_of(ms: i64) -> Timing {
    Timing {
        digest_ms: ms,
        quiet: None,
    }
}

/// Sends what may go at `now`, settling each with `result`; returns the messages sent.
fn pump(o: &mut Outbox, now: i64, result: SendResult) -> Vec<Message> {
    o.close_windows(CHANNEL, now);
    let mut sent = Vec::new();
    while let Some(send) = o.next_send(now) {
        match o.settle(
            send.message.message_id,
            send.attempt,
            result.clone(),
            &rules(),
            now,
        ) {
            Settled::Sent(m) => sent.push(m),
            _ => break,
        }
    }
    sent
}

#[test]
fn the_first_of_a_kind_goes_at_once_and_the_rest_of_its_window_as_one_digest() {
    let mut o = Outbox::default();
    let t0 = 1_000_000;
    assert_eq!(
        o.take(CHANNEL, &note(1, "k", false), digest_of(5 * MIN), t0),
        Taken::Queued
    );
    for n in 2..=9 {
        assert_eq!(
            o.take(
                CHANNEL,
                &note(n, "k", false),
                digest_of(5 * MIN),
                t0 + 1_000
            ),
            Taken::Held
        );
    }
    let first = pump(&mut o, t0 + 1_000, SendResult::Sent);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].count, 1);
    assert_eq!(o.next_wake(&rules()), Some(t0 + 5 * MIN));
    let digest = pump(&mut o, t0 + 5 * MIN, SendResult::Sent);
    assert_eq!(digest.len(), 1);
    assert_eq!(digest[0].count, 8);
    assert!(digest[0].text.contains("and 3 more"), "{}", digest[0].text);
    // A repeat of a taken notification does nothing.
    assert_eq!(
        o.take(
            CHANNEL,
            &note(3, "k", false),
            digest_of(5 * MIN),
            t0 + 6 * MIN
        ),
        Taken::Repeat
    );
}

#[test]
fn sends_keep_the_channels_pace() {
    let mut o = Outbox::default();
    for n in 1..=3 {
        o.take(CHANNEL, &note(n, &format!("k{n}"), false), digest_of(0), 0);
    }
    assert_eq!(pump(&mut o, 0, SendResult::Sent).len(), 1);
    assert_eq!(o.next_wake(&rules()), Some(2_000));
    assert!(pump(&mut o, 1_999, SendResult::Sent).is_empty());
    assert_eq!(pump(&mut o, 2_000, SendResult::Sent).len(), 1);
}

#[test]
fn a_failing_send_backs_off_then_fails_for_good() {
    let mut o = Outbox::default();
    o.take(CHANNEL, &note(1, "k", false), digest_of(0), 0);
    let failed = || SendResult::Failed {
        retriable: true,
        reason: "503".into(),
    };
    let mut now = 0;
    let mut waits = Vec::new();
    loop {
        let send = o.next_send(now).expect("a send");
        match o.settle(
            send.message.message_id,
            send.attempt,
            failed(),
            &rules(),
            now,
        ) {
            Settled::Retry { at_ms, .. } => {
                waits.push(at_ms - now);
                now = at_ms;
            }
            Settled::Failed { message, reason } => {
                assert_eq!(message.attempts, 3);
                assert!(reason.contains("3 attempts"), "{reason}");
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        (500..=1_000).contains(&waits[0]) && (1_000..=2_000).contains(&waits[1]),
        "{waits:?}"
    );
    assert!(o.queue.is_empty());
}

#[test]
fn a_refusal_fails_at_once_and_a_stale_result_does_nothing() {
    let mut o = Outbox::default();
    o.take(CHANNEL, &note(1, "k", false), digest_of(0), 0);
    let send = o.next_send(0).unwrap();
    let refused = SendResult::Failed {
        retriable: false,
        reason: "404".into(),
    };
    assert!(matches!(
        o.settle(
            send.message.message_id,
            send.attempt,
            refused.clone(),
            &rules(),
            0
        ),
        Settled::Failed { .. }
    ));
    assert_eq!(
        o.settle(
            send.message.message_id,
            send.attempt,
            SendResult::Sent,
            &rules(),
            0
        ),
        Settled::Stale
    );
}

#[test]
fn a_lost_result_sends_again_with_the_same_id() {
    let mut o = Outbox::default();
    o.take(CHANNEL, &note(1, "k", false), digest_of(0), 0);
    let first = o.next_send(0).unwrap();
    assert_eq!(o.expire(&rules(), 119_999), None);
    assert!(matches!(
        o.expire(&rules(), 120_000),
        Some(Settled::Retry { .. })
    ));
    let wake = o.next_wake(&rules()).unwrap();
    let again = o.next_send(wake).unwrap();
    assert_eq!(again.message.message_id, first.message.message_id);
    assert_eq!(again.attempt, 2);
    // The first attempt's answer, arriving late, settles nothing.
    assert_eq!(
        o.settle(
            first.message.message_id,
            1,
            SendResult::Sent,
            &rules(),
            wake
        ),
        Settled::Stale
    );
}

#[test]
fn quiet_hours_hold_all_but_urgent_until_they_end() {
    let zone = chrono_tz::America::Chicago;
    let q = QuietHours::new(
        zone,
        NaiveTime::from_hms_opt(21, 0, 0).unwrap(),
        NaiveTime::from_hms_opt(7, 0, 0).unwrap(),
    )
    .unwrap();
    let at = |h| {
        zone.with_ymd_and_hms(2026, 6, 1, h, 0, 0)
            .unwrap()
            .timestamp_millis()
    };
    let timing = Timing {
        digest_ms: 5 * MIN,
        quiet: Some(q),
    };
    let mut o = Outbox::default();
    assert_eq!(
        o.take(CHANNEL, &note(1, "k", false), timing, at(22)),
        Taken::Held
    );
    assert_eq!(
        o.take(CHANNEL, &note(2, "k", false), timing, at(23)),
        Taken::Held
    );
    assert_eq!(
        o.take(CHANNEL, &note(3, "u", true), timing, at(23)),
        Taken::Queued
    );
    assert_eq!(
        pump(&mut o, at(23), SendResult::Sent).len(),
        1,
        "the urgent one"
    );
    let morning = zone
        .with_ymd_and_hms(2026, 6, 2, 7, 0, 0)
        .unwrap()
        .timestamp_millis();
    assert_eq!(o.windows["k"].until_ms, morning);
    let held = pump(&mut o, morning, SendResult::Sent);
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].count, 2);
}

proptest! {
    /// Whatever arrives and however sends fail, every notification taken ends in exactly
    /// one message (sent, or failed for good), counted once; nothing is lost or doubled.
    #[test]
    fn every_notification_ends_in_one_message(
        arrivals in prop::collection::vec((0u8..4, 0i64..20 * MIN, any::<bool>(), 0u128..40), 1..60),
        failures in prop::collection::vec(0u8..10, 0..200),
    ) {
        let mut o = Outbox::default();
        let mut arrivals = arrivals;
        arrivals.sort_by_key(|a| a.1);
        let mut taken = std::collections::BTreeSet::new();
        let mut counted = 0u32;
        let mut failures = failures.into_iter();
        let mut now = 0;
        let mut settle = |o: &mut Outbox, now: i64, counted: &mut u32| {
            o.close_windows(CHANNEL, now);
            if let Some(Settled::Failed { message, .. }) = o.expire(&rules(), now) {
                *counted += message.count;
            }
            while let Some(send) = o.next_send(now) {
                let result = match failures.next() {
                    Some(0) => SendResult::Failed { retriable: false, reason: "no".into() },
                    Some(1..=3) => SendResult::Failed { retriable: true, reason: "503".into() },
                    Some(4) => break, // lost: the result never comes
                    _ => SendResult::Sent,
                };
                match o.settle(send.message.message_id, send.attempt, result, &rules(), now) {
                    Settled::Sent(m) | Settled::Failed { message: m, .. } => *counted += m.count,
                    _ => break,
                }
            }
        };
        for (key, at, urgent, id) in arrivals {
            now = now.max(at);
            if o.take(CHANNEL, &note(id, &format!("k{key}"), urgent), digest_of(5 * MIN), now) != Taken::Repeat {
                taken.insert(id);
            }
            settle(&mut o, now, &mut counted);
        }
        for _ in 0..10_000 {
            match o.next_wake(&rules()) {
                Some(wake) => {
                    now = now.max(wake);
                    settle(&mut o, now, &mut counted);
                }
                None => break,
            }
        }
        prop_assert!(o.queue.is_empty() && o.windows.is_empty() && o.in_flight.is_none());
        prop_assert_eq!(counted as usize, taken.len());
    }
}

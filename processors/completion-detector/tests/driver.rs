//! The detector on the runtime's in-memory driver: every matching case,
//! deadlines by stream time and by the wall clock, restore mid-window, the
//! backlog guard, windows from `control`, and the delivery monitor.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed assertion

mod support;

use callstream_completion_detector::CONTACTS_STORE;
use callstream_domain::ids::completion_case as ids;
use callstream_platform::topics;
use callstream_runtime::{Clock as _, Input};
use callstream_schemas::{
    Alert, AlertStatus, CompletionResolved, Event, ExceptionEvent, ExceptionStatus, MissingTrigger,
    Resolution,
};
use support::*;

const DEADLINE: i64 = T0 + W + GRACE;

#[test]
fn each_matching_case_reports_exactly_the_launches_left_without_a_completion() {
    type Story = fn(&mut callstream_runtime::TestDriver<callstream_completion_detector::Detector>);
    let cases: Vec<(&str, Story, Vec<u128>)> = vec![
        (
            "completion matched by call id",
            |d| {
                launch(d, "c", 1, T0);
                complete(d, "c", 1, None, "completed", T0 + 1_000);
            },
            vec![],
        ),
        (
            "completion first, launch recorded after it",
            |d| {
                complete(d, "c", 1, Some(1), "completed", T0);
                launch(d, "c", 1, T0 + 500);
            },
            vec![],
        ),
        (
            "duplicate completion matches nothing twice",
            |d| {
                launch(d, "c", 1, T0);
                launch(d, "c", 2, T0 + 10);
                complete(d, "c", 1, Some(1), "completed", T0 + 1_000);
                complete(d, "c", 1, Some(1), "completed", T0 + 1_000);
            },
            vec![2],
        ),
        (
            "two launches for one contact tracked apart",
            |d| {
                launch(d, "c", 1, T0);
                launch(d, "c", 2, T0 + 10);
                complete(d, "c", 2, Some(2), "no-answer", T0 + 2_000);
            },
            vec![1],
        ),
        (
            "completion outside the window matches nothing",
            |d| {
                launch(d, "c", 1, T0);
                complete(d, "c", 99, None, "completed", T0 - 30_000);
            },
            vec![1],
        ),
        (
            "a call still ringing is no completion",
            |d| {
                launch(d, "c", 1, T0);
                complete(d, "c", 1, Some(1), "ringing", T0 + 100);
            },
            vec![1],
        ),
        (
            "a completion of another contact closes nothing here",
            |d| {
                launch(d, "c", 1, T0);
                complete(d, "someone-else", 1, Some(1), "completed", T0 + 100);
            },
            vec![1],
        ),
    ];
    for (name, story, expected) in cases {
        let mut d = driver();
        story(&mut d);
        d.advance_wall_clock_ms(W + GRACE + 10_000);
        assert_eq!(missing_launches(&d), expected, "{name}");
    }
}

#[test]
fn a_late_completion_resolves_the_case_and_closes_its_exception() {
    let mut d = driver();
    launch(&mut d, "c", 1, T0);
    d.advance_wall_clock_ms(W + GRACE);
    assert_eq!(missing_launches(&d), [1]);
    complete(&mut d, "c", 1, Some(1), "completed", DEADLINE + 3_000);

    let resolved: Vec<CompletionResolved> = d.outputs(&name(topics::COMPLETION_RESOLVED));
    assert_eq!(resolved.len(), 1);
    let r = &resolved[0];
    assert_eq!(r.resolution, Resolution::LateCompletion);
    assert_eq!(r.missing_event_id, missing(&d)[0].event_id);
    assert_eq!(r.late_by_ms, Some(3_000));

    let exceptions: Vec<ExceptionEvent> = d.outputs(&name(topics::EXCEPTIONS));
    let statuses: Vec<_> = exceptions.iter().map(|e| e.status).collect();
    assert_eq!(statuses, [ExceptionStatus::Open, ExceptionStatus::Resolved]);
    assert_eq!(exceptions[0].exception_id, exceptions[1].exception_id);
    assert_eq!(
        exceptions[0].exception_id,
        ids::missing_exception(&launch_id(1))
    );
    // Nothing is left to wait for.
    d.advance_wall_clock_ms(48 * 3_600_000);
    assert!(d.get(CONTACTS_STORE, b"c").is_none());
}

#[test]
fn recovery_replays_close_the_case_without_a_second_resolution() {
    let mut d = driver();
    launch(&mut d, "c", 1, T0);
    d.advance_wall_clock_ms(W + GRACE);
    recovered(&mut d, "c", 1, DEADLINE + 100);
    // The original callback, finally arriving, is a duplicate now.
    complete(&mut d, "c", 1, Some(1), "completed", DEADLINE + 200);
    assert_eq!(missing_launches(&d), [1]);
    assert!(d.records(&name(topics::COMPLETION_RESOLVED)).is_empty());
}

#[test]
fn the_deadline_fires_by_stream_time_with_the_wall_clock_standing_still() {
    let mut d = driver();
    launch(&mut d, "c", 1, T0);
    // Traffic on another partition moves nothing here.
    launch(&mut d, &stranger_to("c"), 2, DEADLINE + 1);
    assert_eq!(missing_launches(&d), Vec::<u128>::new());
    // A record on the same partition moves its stream time past the deadline.
    launch(&mut d, &neighbour_of("c"), 3, DEADLINE);
    let m = missing(&d);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].trigger, MissingTrigger::StreamTime);
    assert_eq!(m[0].deadline_at.timestamp_millis(), DEADLINE);
}

#[test]
fn the_deadline_fires_by_the_wall_clock_on_a_quiet_partition() {
    let mut d = driver();
    launch(&mut d, "c", 1, T0);
    d.advance_wall_clock_ms(W + GRACE - 1);
    assert!(missing(&d).is_empty());
    d.advance_wall_clock_ms(1);
    let m = missing(&d);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].trigger, MissingTrigger::WallClock);
    // Neither clock reports it again.
    launch(&mut d, &neighbour_of("c"), 3, DEADLINE + 10);
    d.advance_wall_clock_ms(60_000);
    assert_eq!(missing(&d).len(), 1);
}

#[test]
fn a_restart_mid_window_keeps_the_window_and_its_deadline() {
    let mut d = driver();
    let contact = "contact-000123";
    launch(&mut d, contact, 1, T0);
    launch(&mut d, contact, 2, T0 + 20_000);
    complete(&mut d, contact, 2, Some(2), "completed", T0 + 25_000);
    d.advance_wall_clock_ms(W / 2);
    d.restart();
    d.advance_wall_clock_ms(W / 2 + GRACE - 1);
    assert!(missing(&d).is_empty(), "nothing is due before the deadline");
    d.advance_wall_clock_ms(1);
    assert_eq!(missing_launches(&d), [1]);
    d.restart();
    d.advance_wall_clock_ms(3_600_000);
    assert_eq!(missing_launches(&d), [1], "reported once across restarts");
}

#[test]
fn one_open_launch_costs_at_most_256_changelog_bytes() {
    let mut d = driver();
    let contact = "contact-000123";
    launch(&mut d, contact, 1, T0);
    // The key names the tenant too: contact ids collide across tenants.
    let key = callstream_kit::keys::contact_key(TENANT, contact);
    let value = d.get(CONTACTS_STORE, &key).unwrap().len();
    // One timer of either clock: key = domain, name length (u16), name
    // "w", the contact's key; value = the due time.
    let timers = (1 + 2 + 1 + key.len()) + 8;
    let total = key.len() + value + timers;
    println!(
        "state bytes per open launch: {total} (entry {value}, key {}, timers {timers})",
        key.len()
    );
    assert!(total <= 256, "{total} bytes");
}

#[test]
fn the_window_comes_from_control_campaign_first() {
    let mut d = driver();
    let control = name(topics::CONTROL);
    let (key, change) =
        callstream_completion_detector::testkit::window_setting(TENANT, None, 10_000, 0);
    d.set_global(&control, key, Some(change.encode().unwrap()));
    let (key, change) = callstream_completion_detector::testkit::window_setting(
        TENANT,
        Some("campaign-1"),
        20_000,
        1_000,
    );
    d.set_global(&control, key, Some(change.encode().unwrap()));
    launch(&mut d, "c", 1, T0);
    d.advance_wall_clock_ms(20_999);
    assert!(missing(&d).is_empty());
    d.advance_wall_clock_ms(1);
    let m = missing(&d);
    assert_eq!((m[0].window_ms, m[0].grace_ms), (20_000, 1_000));
}

#[test]
fn a_backlog_after_downtime_reports_only_what_is_really_missing() {
    let mut d = driver();
    // The detector was down for ten minutes: its wall clock is far ahead
    // of the records it now consumes.
    d.advance_wall_clock_ms(600_000);
    launch(&mut d, "c", 1, T0);
    launch(&mut d, "c", 2, T0 + 1);
    complete(&mut d, "c", 1, Some(1), "completed", T0 + 30_000);
    assert!(missing(&d).is_empty(), "the backlog is still being read");
    // Caught up, the partition goes quiet: the wall clock takes over.
    d.advance_wall_clock_ms(2_000);
    assert_eq!(missing_launches(&d), [2]);
}

fn feed_partials(d: &mut callstream_runtime::TestDriver<callstream_completion_detector::Detector>) {
    let topic = name(callstream_completion_detector::DELIVERY_PARTIALS);
    for p in d.take_records(&topic) {
        let input = Input::new(&topic, p.key.unwrap(), p.value.unwrap()).at(p.timestamp_ms);
        d.pipe(input);
    }
}

fn alerts(
    d: &callstream_runtime::TestDriver<callstream_completion_detector::Detector>,
) -> Vec<Alert> {
    d.outputs(&name(topics::ALERTS))
}

#[test]
fn a_bucket_under_80_percent_alerts_once_and_a_good_one_resolves_it() {
    let mut d = driver();
    let bucket = 600_000;
    let start = T0 - T0.rem_euclid(bucket);
    let close = start + bucket + W + GRACE;
    // Bucket 1: 10 launches over 10 contacts; 6 delivered live, 2 only
    // recovered (they do not count), 2 never.
    for i in 0..10u128 {
        let contact = format!("c{i}");
        launch(&mut d, &contact, i, T0 + i as i64);
        match i {
            0..=5 => complete(&mut d, &contact, i, Some(i), "completed", T0 + 1_000),
            6 | 7 => recovered(&mut d, &contact, i, T0 + 2_000),
            _ => {}
        }
    }
    d.advance_wall_clock_ms(close - T0);
    feed_partials(&mut d);
    assert!(
        alerts(&d).is_empty(),
        "the tenant's partition waits to settle"
    );
    d.advance_wall_clock_ms(5_000);
    let raised = alerts(&d);
    assert_eq!(raised.len(), 1);
    assert_eq!(raised[0].status, AlertStatus::Raised);
    assert_eq!((raised[0].launches, raised[0].completions), (10, 6));
    assert!((raised[0].rate - 0.6).abs() < 1e-9);

    // Bucket 2: everything delivered: the alert resolves.
    let next = start + bucket;
    let now = d.clock().now_ms();
    for i in 10..15u128 {
        let contact = format!("c{i}");
        launch(&mut d, &contact, i, next + 1_000);
        complete(&mut d, &contact, i, Some(i), "completed", next + 2_000);
    }
    d.advance_wall_clock_ms(close + bucket + 1 - now);
    feed_partials(&mut d);
    d.advance_wall_clock_ms(5_000);
    let all = alerts(&d);
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].status, AlertStatus::Resolved);
    assert_eq!(all[1].alert_id, all[0].alert_id);
}

/// Every permanent failure the registry (`callstream_domain::failures`) gives the
/// detector opens its exception.
#[test]
fn every_permanent_failure_of_the_detector_opens_an_exception() {
    use callstream_domain::failures::{Owner, PermanentFailure};
    use callstream_e2e::failures::{assert_opened, no_scenario};
    for failure in PermanentFailure::of(Owner::CompletionDetector) {
        let exceptions: Vec<ExceptionEvent> = match failure {
            PermanentFailure::CompletionMissing => {
                let mut d = driver();
                launch(&mut d, "c", 1, T0);
                d.advance_wall_clock_ms(W + GRACE);
                d.outputs(&name(topics::EXCEPTIONS))
            }
            other => no_scenario("the completion detector", other),
        };
        assert_opened(failure, &exceptions);
    }
}

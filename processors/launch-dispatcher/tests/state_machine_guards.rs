//! The dispatcher's guards on the in-memory driver: duplicate commands and
//! replies, launches that cannot be dialed, shadow mode read per command,
//! the ledger's retention and undecodable input.

mod support;

use callstream_launch_dispatcher::provider::CreateOutcome;
use callstream_schemas::{ExceptionType, LaunchStatus};
use support::*;

#[test]
fn a_repeated_command_for_the_same_launch_never_dials_twice() {
    let mut driver = driver();
    let cmd = command(14);
    pipe(&mut driver, &cmd);
    pipe(&mut driver, &cmd);
    assert_eq!(driver.pending_effects().len(), 1);
    let (request, call) = take_one(&mut driver);
    reply(&mut driver, request, &created(&call, accepted("CA14")));
    pipe(&mut driver, &cmd);
    assert!(driver.pending_effects().is_empty());
    assert_eq!(launches(&driver).len(), 1);
}

#[test]
fn launches_that_cannot_be_dialed_fail_with_their_reason_and_call_no_one() {
    let mut expired = command(20);
    expired.expires_at = Some(chrono::DateTime::from_timestamp_millis(START - 1).unwrap());
    let mut bad_number = command(21);
    bad_number.to_number = "555-1234".into();
    let mut other_provider = command(22);
    other_provider.provider = Some("vapi".into());
    let cases = [
        (expired, "expired"),
        (bad_number, "invalid_number"),
        (other_provider, "unknown_provider"),
    ];
    for (cmd, reason) in cases {
        let mut driver = driver();
        pipe(&mut driver, &cmd);
        assert!(driver.pending_effects().is_empty(), "{reason}");
        let out = launches(&driver);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].status, out[0].reason.as_deref(), out[0].attempts),
            (LaunchStatus::Failed, Some(reason), 0)
        );
        assert_eq!(
            exceptions(&driver)[0].exception_type,
            ExceptionType::LaunchFailed,
            "{reason}"
        );
    }
    // No caller id anywhere.
    let mut config = config();
    config.twilio.default_from = None;
    let mut driver = driver_with(&config);
    pipe(&mut driver, &command(23));
    assert_eq!(launches(&driver)[0].reason.as_deref(), Some("no_caller_id"));
}

#[test]
fn shadow_mode_intercepts_per_command_and_switching_it_off_applies_to_the_next() {
    let mut driver = driver();
    set_shadow(&mut driver, true);
    pipe(&mut driver, &command(30));
    assert!(driver.pending_effects().is_empty());
    assert_eq!(statuses(&driver), [LaunchStatus::Shadow]);
    set_shadow(&mut driver, false);
    pipe(&mut driver, &command(31));
    assert_eq!(driver.pending_effects().len(), 1);
    let _ = driver.take_effects();
    set_shadow(&mut driver, true);
    pipe(&mut driver, &command(32));
    assert!(driver.pending_effects().is_empty());
    // Unset (a tombstone) is off.
    driver.set_global("control", format!("{TENANT}/shadow_mode"), None);
    pipe(&mut driver, &command(33));
    assert_eq!(driver.pending_effects().len(), 1);
    assert_eq!(
        statuses(&driver),
        [LaunchStatus::Shadow, LaunchStatus::Shadow]
    );
}

#[test]
fn shadow_mode_switched_on_during_a_retry_wait_intercepts_the_retry() {
    let mut driver = driver();
    pipe(&mut driver, &command(35));
    let (request, call) = take_one(&mut driver);
    let busy = CreateOutcome::Transient {
        reason: "http_503".into(),
        detail: None,
    };
    reply(&mut driver, request, &created(&call, busy));
    set_shadow(&mut driver, true);
    driver.advance_wall_clock_ms(60_000);
    assert!(driver.pending_effects().is_empty());
    assert_eq!(statuses(&driver), [LaunchStatus::Shadow]);
}

#[test]
fn an_unreadable_control_value_counts_as_shadow_mode_on() {
    let mut driver = driver();
    driver.set_global(
        "control",
        format!("{TENANT}/shadow_mode"),
        Some(b"garbage".to_vec()),
    );
    pipe(&mut driver, &command(34));
    assert!(driver.pending_effects().is_empty());
    assert_eq!(statuses(&driver), [LaunchStatus::Shadow]);
}

#[test]
fn a_finished_launch_is_forgotten_after_the_retention() {
    let mut driver = driver();
    let cmd = command(40);
    pipe(&mut driver, &cmd);
    let (request, call) = take_one(&mut driver);
    reply(&mut driver, request, &created(&call, accepted("CA40")));
    let retention = config().policy.ledger_retention.as_millis() as i64;
    driver.advance_wall_clock_ms(retention - 1);
    assert!(entry(&driver, &cmd.launch_id).is_some());
    driver.advance_wall_clock_ms(1);
    assert!(entry(&driver, &cmd.launch_id).is_none());
    assert_eq!(driver.open_timers(), 0);
}

#[test]
fn an_undecodable_command_is_dead_lettered() {
    let mut driver = driver();
    driver.pipe(callstream_runtime::Input::new(
        "launch-commands",
        "c-x",
        b"not avro".to_vec(),
    ));
    assert_eq!(driver.dead_letters().len(), 1);
    assert!(driver.pending_effects().is_empty());
}

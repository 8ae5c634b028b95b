//! The dispatcher's guards on the in-memory driver: duplicate commands and
//! replies, launches that cannot be dialed, shadow mode read per command,
//! the ledger's retention and undecodable input.

mod support;

use callstream_launch_dispatcher::provider::CreateOutcome;
use callstream_schemas::{
    ContactCommand, ContactCommandKind, ControlChange, ControlSetting, ControlValue, Event,
    ExceptionType, LaunchCommand, LaunchStatus,
};
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
    let mut bad_number = command(21);
    bad_number.to_number = "555-1234".into();
    let mut other_provider = command(22);
    other_provider.provider = Some("vapi".into());
    let cases = [
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

/// The last hop (issue 14, holes 4 and 5): a pause covering the launch, a
/// calling window that has closed (or has less than a minute left), or a slot that has passed holds the
/// launch, with its reason, no exception and no call; the workflow plans it
/// again. A pause set after the command's first attempt holds its retry.
#[test]
fn the_last_hop_holds_launches_a_pause_a_closed_window_or_a_passed_slot_covers() {
    let at = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap();
    let mut window_closed = command(40);
    window_closed.expires_at = Some(at(START - 1));
    let mut slot_passed = command(41);
    slot_passed.slot_ends_at = Some(at(START - 1));
    let mut in_slot = command(42);
    in_slot.slot_ends_at = Some(at(START + 1_000));
    // A create must leave a minute of the window: the phone must not ring after it closes.
    let mut window_closing = command(45);
    window_closing.expires_at = Some(at(START + 30_000));
    let mut window_open = command(46);
    window_open.expires_at = Some(at(START + 120_000));
    let cases: [Case; 7] = [
        (window_closed, None, Some("window_closed")),
        (window_closing, None, Some("window_closed")),
        (window_open, None, None),
        (slot_passed, None, Some("slot_passed")),
        (
            command(43),
            Some((ControlSetting::SystemPause, None)),
            Some("system_paused"),
        ),
        (
            command(44),
            Some((ControlSetting::CampaignPause, Some(CAMPAIGN))),
            Some("campaign_paused"),
        ),
        (in_slot, None, None),
    ];
    for (cmd, pause, held) in cases {
        let mut driver = driver();
        if let Some((setting, campaign)) = pause {
            set_switch(&mut driver, setting, campaign, true);
        }
        pipe(&mut driver, &cmd);
        let out = launches(&driver);
        match held {
            Some(reason) => {
                assert!(driver.pending_effects().is_empty(), "{reason}: no create");
                assert_eq!(out.len(), 1, "{reason}");
                assert_eq!(
                    (out[0].status, out[0].reason.as_deref(), out[0].attempts),
                    (LaunchStatus::Held, Some(reason), 0)
                );
                assert!(exceptions(&driver).is_empty(), "{reason}: no exception");
            }
            None => assert_eq!(driver.pending_effects().len(), 1, "dialed in its slot"),
        }
    }

    // Paused between the first attempt and its retry: the retry is held.
    let mut driver = driver();
    let cmd = command(45);
    pipe(&mut driver, &cmd);
    let (request, call) = take_one(&mut driver);
    reply(
        &mut driver,
        request,
        &created(
            &call,
            CreateOutcome::Transient {
                reason: "http_429".into(),
                detail: None,
            },
        ),
    );
    set_switch(&mut driver, ControlSetting::SystemPause, None, true);
    driver.advance_wall_clock_ms(60_000);
    assert!(driver.pending_effects().is_empty(), "no second create");
    assert_eq!(statuses(&driver), [LaunchStatus::Held]);
    assert_eq!(launches(&driver)[0].attempts, 1);
}

/// A restriction that came after the launch (the contact processor's stop,
/// on the launch's key): a launch waiting to retry is held with it and
/// never dialed again; one whose create is out ends as that create's answer
/// says, and is not dialed again either.
#[test]
fn a_stop_from_the_contact_processor_ends_dialing() {
    let stop = |cmd: &LaunchCommand| ContactCommand {
        kind: ContactCommandKind::CancelFutureJobs,
        launch_id: Some(cmd.launch_id),
        job_id: Some(cmd.job_id),
        reason: Some("do_not_call".into()),
        ..callstream_e2e::fixtures::contact_command(
            TENANT,
            &cmd.contact_id,
            ContactCommandKind::CancelFutureJobs,
            callstream_schemas::Actor::system("contact-processor"),
            cmd.occurred_at,
        )
    };
    let send_stop = |driver: &mut callstream_runtime::TestDriver<_>, cmd: &LaunchCommand| {
        let stop = stop(cmd);
        driver.pipe(
            callstream_runtime::Input::new(
                "launch-commands",
                cmd.contact_id.clone(),
                stop.encode().unwrap(),
            )
            .at(START),
        );
    };
    let transient = || CreateOutcome::Transient {
        reason: "http_429".into(),
        detail: None,
    };

    // Waiting to retry: held at once.
    let mut d = driver();
    let cmd = command(50);
    pipe(&mut d, &cmd);
    let (request, call) = take_one(&mut d);
    reply(&mut d, request, &created(&call, transient()));
    send_stop(&mut d, &cmd);
    assert_eq!(statuses(&d), [LaunchStatus::Held]);
    assert_eq!(launches(&d)[0].reason.as_deref(), Some("do_not_call"));
    d.advance_wall_clock_ms(60_000);
    assert!(d.pending_effects().is_empty(), "never dialed again");

    // A create out: its refusal ends it held, with no second create.
    let mut d = driver();
    let cmd = command(51);
    pipe(&mut d, &cmd);
    send_stop(&mut d, &cmd);
    let (request, call) = take_one(&mut d);
    reply(&mut d, request, &created(&call, transient()));
    d.advance_wall_clock_ms(60_000);
    assert!(d.pending_effects().is_empty(), "never dialed again");
    assert_eq!(statuses(&d), [LaunchStatus::Held]);
    assert!(d.dead_letters().is_empty());
}

/// A launch command, the pause set before it (setting and campaign), and the
/// reason it is held for (`None`: it is dialed).
type Case = (
    LaunchCommand,
    Option<(ControlSetting, Option<&'static str>)>,
    Option<&'static str>,
);

/// Sets an on/off switch of `TENANT` in the driver's `control` table.
fn set_switch(
    driver: &mut callstream_runtime::TestDriver<callstream_launch_dispatcher::LaunchDispatcher>,
    setting: ControlSetting,
    campaign: Option<&str>,
    on: bool,
) {
    let change = ControlChange {
        setting,
        campaign_id: campaign.map(str::to_owned),
        new_value: ControlValue {
            enabled: Some(on),
            ..ControlValue::default()
        },
        ..shadow_change(on)
    };
    let value = change.encode().expect("a control change encodes");
    driver.set_global("control", change.record_key(), Some(value));
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
    // What is left is the number's: its call counts against caps for 31 days.
    assert_eq!(driver.open_timers(), 1);
    driver.advance_wall_clock_ms(31 * 86_400_000);
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

/// The last hop checks the lead's state calling rules again immediately before the
/// create: a cap reached or an hour a state forbids since the job was planned holds the
/// launch, with the rule as its reason, and nothing is dialed.
#[test]
fn the_last_hop_holds_a_launch_a_state_rule_refuses_with_the_rule_as_reason() {
    let at = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap();
    let hour = 3_600_000;
    let florida = |n: u128, zone: &str, placed: Vec<i64>| LaunchCommand {
        time_zone: Some(zone.into()),
        jurisdictions: vec!["FL".into()],
        jurisdiction_source: Some("area_code".into()),
        placed_calls: placed.into_iter().map(at).collect(),
        ..command(n)
    };
    // START is 17:13 in New York: Florida allows it, unless three calls were placed in
    // the last 24 hours; in Tokyo it is 07:13, before Florida's 08:00.
    let cases = [
        (florida(50, "America/New_York", vec![]), None),
        (
            florida(
                51,
                "America/New_York",
                vec![START - 20 * hour, START - 10 * hour, START - hour],
            ),
            Some("frequency_cap:FL:3_per_24h"),
        ),
        (
            florida(
                52,
                "America/New_York",
                vec![START - 25 * hour, START - 10 * hour, START - hour],
            ),
            None,
        ),
        (florida(53, "Asia/Tokyo", vec![]), Some("state_hours:FL")),
    ];
    for (cmd, held) in cases {
        let mut driver = driver();
        pipe(&mut driver, &cmd);
        match held {
            Some(rule) => {
                assert!(driver.pending_effects().is_empty(), "{rule}: no create");
                let out = launches(&driver);
                assert_eq!(
                    (out[0].status, out[0].reason.as_deref()),
                    (LaunchStatus::Held, Some(rule))
                );
                assert!(out[0].reason_detail.as_deref().unwrap_or("").contains(rule));
            }
            None => assert_eq!(driver.pending_effects().len(), 1, "dialed"),
        }
    }
}

/// The tenant's own calling rules and overrides, read from `control` at the last hop: a
/// cap of its own holds a create (naming it), and an override lets Florida's hours go.
#[test]
fn the_last_hop_applies_the_tenants_own_rules_and_overrides_from_control() {
    let at = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap();
    let set_rules = |driver: &mut callstream_runtime::TestDriver<
        callstream_launch_dispatcher::LaunchDispatcher,
    >,
                     rules: callstream_schemas::CallingRules| {
        let change = ControlChange {
            setting: ControlSetting::CallingRules,
            campaign_id: None,
            new_value: ControlValue {
                calling_rules: Some(Box::new(rules)),
                ..ControlValue::default()
            },
            ..shadow_change(false)
        };
        let value = change.encode().expect("a control change encodes");
        driver.set_global("control", change.record_key(), Some(value));
    };
    // A lead in no state with rules, called an hour ago; the tenant allows one a day.
    let mut capped = driver();
    set_rules(
        &mut capped,
        callstream_schemas::CallingRules {
            rules: vec![callstream_schemas::TenantCallingRule {
                id: "tenant:one_a_day".into(),
                kind: "frequency_cap".into(),
                params: "max=1; window=24h".into(),
                states: vec![],
            }],
            overrides: vec![],
            cap_subject: "campaign".into(),
            default_state: None,
        },
    );
    pipe(
        &mut capped,
        &LaunchCommand {
            time_zone: Some("America/Chicago".into()),
            placed_calls: vec![at(START - 3_600_000)],
            ..command(60)
        },
    );
    assert!(capped.pending_effects().is_empty(), "no create");
    assert_eq!(
        launches(&capped)[0].reason.as_deref(),
        Some("tenant:one_a_day")
    );

    // Florida's hours, overridden with a reason: 07:13 in Tokyo goes.
    let mut overridden = driver();
    set_rules(
        &mut overridden,
        callstream_schemas::CallingRules {
            rules: vec![],
            overrides: vec![callstream_schemas::RuleOverride {
                rule: "state_hours:FL".into(),
                reason: "test".into(),
            }],
            cap_subject: "campaign".into(),
            default_state: None,
        },
    );
    pipe(
        &mut overridden,
        &LaunchCommand {
            time_zone: Some("Asia/Tokyo".into()),
            jurisdictions: vec!["FL".into()],
            ..command(61)
        },
    );
    assert_eq!(overridden.pending_effects().len(), 1, "dialed");
}

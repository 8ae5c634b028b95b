//! Frequency caps per phone number at the last hop: calls placed to one number count
//! whichever contact of the tenant they were for, within the tenant's cap subject, and
//! across a restart (the per-number store is changelogged). A launch held by a cap says
//! when the rules allow a call again.

mod support;

use callstream_launch_dispatcher::numbers::NUMBERS_STORE;
use callstream_runtime::Clock;
use callstream_schemas::{CallLaunch, LaunchStatus};
use callstream_schemas::{ControlChange, ControlSetting, ControlValue, Event, LaunchCommand};
use support::*;

const MINUTE: i64 = 60_000;
const DAY: i64 = 86_400_000;
/// A Miami number: Florida's rules apply from its area code.
const MIAMI: &str = "+13055550100";

/// A launch to `to` for contact `c-{n}`, a Florida lead in New York time (START is 17:13
/// there) whose own contact has no calls placed.
fn florida(n: u128, to: &str) -> LaunchCommand {
    LaunchCommand {
        to_number: to.into(),
        time_zone: Some("America/New_York".into()),
        jurisdictions: vec!["FL".into()],
        jurisdiction_source: Some("area_code".into()),
        placed_calls: vec![],
        ..command(n)
    }
}

/// Pipes `cmd` and has the provider accept its create.
fn placed(driver: &mut TestDriverD, cmd: &LaunchCommand) {
    pipe(driver, cmd);
    let (request, call) = take_one(driver);
    let sid = format!("CA{}", cmd.contact_id);
    reply(driver, request, &created(&call, accepted(&sid)));
}

fn last_launch(driver: &TestDriverD) -> CallLaunch {
    launches(driver).pop().expect("a call-launch")
}

#[test]
fn a_fourth_call_to_a_florida_number_in_24_hours_is_held_whichever_contact_it_is_for() {
    let mut driver = driver();
    // Three contacts share one Miami number (a household, a lead entered twice): each
    // contact has one call placed, the number three.
    for n in 1..=3u128 {
        placed(&mut driver, &florida(n, MIAMI));
        assert_eq!(last_launch(&driver).status, LaunchStatus::Accepted);
        driver.advance_wall_clock_ms(10 * MINUTE);
    }
    assert!(driver.get(NUMBERS_STORE, b"acme/13055550100").is_some());

    // A fourth contact's launch to the same number.
    pipe(&mut driver, &florida(4, MIAMI));
    assert!(driver.pending_effects().is_empty(), "no create");
    let held = last_launch(&driver);
    assert_eq!(
        (held.status, held.reason.as_deref()),
        (LaunchStatus::Held, Some("frequency_cap:FL:3_per_24h"))
    );
    // The first call ages out 24 hours after it was placed (17:13 in New York, inside
    // Florida's hours): the rules allow a call again then.
    assert_eq!(
        held.not_before.map(|t| t.timestamp_millis()),
        Some(START + DAY)
    );

    // Across a restart the count is the same.
    driver.restart();
    pipe(&mut driver, &florida(5, MIAMI));
    assert!(
        driver.pending_effects().is_empty(),
        "no create after a restart"
    );
    assert_eq!(
        last_launch(&driver).reason.as_deref(),
        Some("frequency_cap:FL:3_per_24h")
    );

    // Another number, another campaign (caps count per campaign by default) and
    // another tenant calling the same number are not held.
    placed(&mut driver, &florida(6, "+13055550199"));
    let other_campaign = LaunchCommand {
        campaign_id: "renewals".into(),
        ..florida(7, MIAMI)
    };
    placed(&mut driver, &other_campaign);
    let other_tenant = LaunchCommand {
        tenant_id: "globex".into(),
        ..florida(8, MIAMI)
    };
    placed(&mut driver, &other_tenant);

    // Once the first call has aged out, the number takes a call again.
    driver.advance_wall_clock_ms(START + DAY - driver.clock().now_ms());
    placed(&mut driver, &florida(9, MIAMI));
    assert_eq!(last_launch(&driver).status, LaunchStatus::Accepted);
}

/// A tenant whose caps count every campaign's calls holds a call of another campaign too.
#[test]
fn a_tenant_wide_cap_subject_counts_every_campaigns_calls_to_the_number() {
    let mut driver = driver();
    let change = ControlChange {
        setting: ControlSetting::CallingRules,
        campaign_id: None,
        new_value: ControlValue {
            calling_rules: Some(Box::new(callstream_schemas::CallingRules {
                rules: vec![],
                overrides: vec![],
                cap_subject: "tenant".into(),
                default_state: None,
            })),
            ..ControlValue::default()
        },
        ..shadow_change(false)
    };
    driver.set_global(
        "control",
        change.record_key(),
        Some(change.encode().unwrap()),
    );
    for (n, campaign) in [(1u128, "a"), (2, "b"), (3, "c")] {
        let cmd = LaunchCommand {
            campaign_id: campaign.into(),
            ..florida(n, MIAMI)
        };
        // All in the same millisecond: each still counts.
        placed(&mut driver, &cmd);
    }
    let fourth = LaunchCommand {
        campaign_id: "d".into(),
        ..florida(4, MIAMI)
    };
    pipe(&mut driver, &fourth);
    assert!(driver.pending_effects().is_empty(), "no create");
    assert_eq!(
        last_launch(&driver).reason.as_deref(),
        Some("frequency_cap:FL:3_per_24h")
    );
}

/// A number's calls are forgotten once no cap can count them.
#[test]
fn a_number_is_forgotten_after_the_longest_cap_window() {
    let mut driver = driver();
    placed(&mut driver, &florida(1, MIAMI));
    assert!(driver.get(NUMBERS_STORE, b"acme/13055550100").is_some());
    driver.advance_wall_clock_ms(32 * DAY);
    assert!(driver.get(NUMBERS_STORE, b"acme/13055550100").is_none());
}

/// One launch of the property test: for contact `contact`, to number `number`, after the
/// clock moved `advance_min` minutes, maybe after a restart.
#[derive(Debug, Clone)]
struct Op {
    contact: u8,
    number: u8,
    advance_min: i64,
    restart: bool,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    (0u8..6, 0u8..2, 0i64..600, proptest::bool::weighted(0.1)).prop_map(
        |(contact, number, advance_min, restart)| Op {
            contact,
            number,
            advance_min,
            restart,
        },
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    /// Whatever contacts launch to two shared Florida numbers, whenever, across restarts,
    /// with no contact knowing of the others' calls: no number gets a fourth create in any
    /// 24 hours, no create leaves outside Florida's 08:00-20:00 at the lead, and every launch
    /// not dialed is held by a Florida rule, naming it.
    #[test]
    fn no_number_gets_a_fourth_create_in_any_24_hours_whoever_the_contact(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let numbers = [MIAMI, "+13055550199"];
        let mut driver = driver();
        let mut creates: Vec<Vec<i64>> = vec![Vec::new(); numbers.len()];
        for (i, op) in ops.iter().enumerate() {
            driver.advance_wall_clock_ms(op.advance_min * MINUTE);
            if op.restart {
                driver.restart();
            }
            let n = 100 + i as u128;
            let cmd = LaunchCommand {
                contact_id: format!("c-{}", op.contact),
                ..florida(n, numbers[usize::from(op.number)])
            };
            pipe(&mut driver, &cmd);
            let pending = pending(&driver);
            if pending.is_empty() {
                let out = last_launch(&driver);
                proptest::prop_assert_eq!(out.launch_id, cmd.launch_id);
                proptest::prop_assert_eq!(out.status, LaunchStatus::Held);
                let reason = out.reason.unwrap_or_default();
                proptest::prop_assert!(
                    reason == "state_hours:FL" || reason == "frequency_cap:FL:3_per_24h",
                    "{reason}"
                );
            } else {
                let now = driver.clock().now_ms();
                creates[usize::from(op.number)].push(now);
                let (request, call) = take_one(&mut driver);
                let sid = format!("CA{n}");
                reply(&mut driver, request, &created(&call, accepted(&sid)));
            }
        }
        for (number, times) in numbers.iter().zip(&creates) {
            for four in times.windows(4) {
                proptest::prop_assert!(four[3] - four[0] >= DAY, "{number}: {four:?}");
            }
            for at in times {
                let local = chrono::DateTime::from_timestamp_millis(*at)
                    .unwrap()
                    .with_timezone(&chrono_tz::America::New_York);
                let rings = local + chrono::TimeDelta::minutes(1);
                let eight = local.date_naive().and_hms_opt(8, 0, 0).unwrap();
                let twenty = local.date_naive().and_hms_opt(20, 0, 0).unwrap();
                proptest::prop_assert!(
                    local.naive_local() >= eight && rings.naive_local() <= twenty,
                    "{number}: created at {local}"
                );
            }
        }
    }
}

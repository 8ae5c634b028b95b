//! The state calling rules through the contact processor: a lead's states are
//! resolved (record, else area code) and carried on every plan and launch with
//! the calls placed to it, and a due call a rule refuses now is re-planned with
//! the rule as its reason.

mod support;

use callstream_schemas::*;
use chrono::TimeDelta;
use support::*;

/// A Miami number (area code 305): Florida, America/New_York.
const FLORIDA: &str = "+13055550100";

fn florida_request(contact: &str, request: &str) -> ContactCommand {
    let mut cmd = launch_request(contact, CAMPAIGN, request);
    if let Some(details) = cmd.contact.as_mut() {
        details.phone_number = Some(FLORIDA.into());
    }
    cmd
}

fn every_day(retry_minutes: i32) -> CampaignSettings {
    CampaignSettings {
        windows: vec![CallingWindow {
            days_of_week: (1..=7).collect(),
            start_minute: 8 * 60,
            end_minute: 21 * 60,
        }],
        retry_delays_minutes: vec![retry_minutes],
        max_attempts: 10,
        next_campaign_id: None,
        move_buffer_minutes: 10,
    }
}

#[test]
fn a_florida_lead_called_three_times_waits_for_the_cap_with_the_cap_as_reason() {
    let mut h = harness();
    h.campaign_settings(CAMPAIGN, every_day(60));
    h.command(&florida_request("fl", "r1"), t0());
    let mut plan = h.plans().pop().expect("planned");
    assert_eq!(plan.jurisdictions, ["FL"]);
    assert_eq!(plan.jurisdiction_source.as_deref(), Some("area_code"));
    assert!(plan.placed_calls.is_empty());

    // Three calls today, each placed (accepted) and not answered.
    let mut placed = Vec::new();
    for n in 1..=3 {
        let at = plan.earliest_at.expect("earliest").max(t0() + minutes(5));
        let launch = h.due("fl", &plan, at).expect("launched");
        assert_eq!(launch.jurisdictions, ["FL"]);
        assert_eq!(launch.time_zone.as_deref(), Some("America/New_York"));
        assert_eq!(launch.placed_calls, placed, "call {n}");
        h.launch_outcome(&callstream_e2e::fixtures::call_launch(
            TENANT,
            "fl",
            CAMPAIGN,
            launch.launch_id,
            launch.job_id,
            LaunchStatus::Accepted,
            at,
        ));
        placed.push(at);
        h.call(&call_event(
            "fl",
            &format!("CA{n}"),
            Some(launch.launch_id),
            "no-answer",
            None,
            at + minutes(1),
        ));
        plan = h.plans().pop().expect("a retry");
        assert_eq!(plan.placed_calls, placed, "after call {n}");
    }

    // The fourth is due an hour after the third: Florida allows 3 in any 24 hours.
    let due = plan.earliest_at.expect("earliest");
    assert!(h.due("fl", &plan, due).is_none(), "no fourth call");
    let replan = h.plans().pop().expect("re-planned");
    assert_eq!(replan.reason, "frequency_cap:FL:3_per_24h");
    assert_eq!(replan.replaces_job_id, Some(plan.job_id));
    assert_eq!(
        replan.earliest_at,
        Some(placed[0] + TimeDelta::days(1)),
        "when the first call ages out"
    );
    let state = h.state("fl");
    assert_eq!(
        job(&state, replan.job_id).reason,
        "frequency_cap:FL:3_per_24h"
    );
    // Once the first call has aged out, it goes.
    let launch = h.due("fl", &replan, placed[0] + TimeDelta::days(1));
    assert!(launch.is_some(), "the fourth call goes when the cap allows");
}

/// Calls from other contacts to the same number count at the last hop, which this
/// contact cannot see: a launch held there by a cap is planned again no earlier than the
/// dispatcher's `not_before`, with the cap as its reason. Launches (and their stops) are
/// keyed by tenant and number, so the dispatcher sees every call to the number.
#[test]
fn a_launch_held_by_a_cap_at_the_last_hop_is_planned_no_earlier_than_it_allows() {
    let mut h = harness();
    h.campaign_settings(CAMPAIGN, every_day(60));
    h.command(&florida_request("fl", "r1"), t0());
    let plan = h.plans().pop().expect("planned");
    let due = plan.earliest_at.expect("earliest").max(t0() + minutes(5));
    let launch = h.due("fl", &plan, due).expect("launched");
    let keys: Vec<_> = h.launch_keys();
    assert_eq!(keys, ["acme/13055550100"], "keyed by tenant and number");

    let not_before = due + TimeDelta::hours(20);
    h.launch_outcome(&CallLaunch {
        reason: Some("frequency_cap:FL:3_per_24h".into()),
        reason_detail: Some("3 calls in any 24 hours (at the last hop)".into()),
        not_before: Some(not_before),
        ..callstream_e2e::fixtures::call_launch(
            TENANT,
            "fl",
            CAMPAIGN,
            launch.launch_id,
            launch.job_id,
            LaunchStatus::Held,
            due,
        )
    });
    let replan = h.plans().pop().expect("re-planned");
    assert_eq!(replan.reason, "frequency_cap:FL:3_per_24h");
    assert_eq!(replan.replaces_job_id, Some(plan.job_id));
    assert_eq!(replan.earliest_at, Some(not_before));
}

#[test]
fn the_records_state_and_a_differing_area_code_both_apply() {
    let mut h = harness();
    let mut cmd = florida_request("ky", "r1");
    if let Some(details) = cmd.contact.as_mut() {
        details.state = Some("KY".into());
    }
    h.command(&cmd, t0());
    let plan = h.plans().pop().expect("planned");
    assert_eq!(plan.jurisdictions, ["KY", "FL"]);
    assert_eq!(plan.jurisdiction_source.as_deref(), Some("contact_record"));
}

#[test]
fn a_due_call_outside_florida_hours_is_moved_with_the_rule_as_reason() {
    let mut h = harness();
    h.campaign_settings(CAMPAIGN, every_day(60));
    h.command(&florida_request("fl", "r1"), t0());
    let plan = h.plans().pop().expect("planned");
    // 20:30 in New York (01:30 UTC the next day): federal hours allow it, Florida's do not.
    let late = at(2024, 3, 6, 1, 30);
    assert!(h.due("fl", &plan, late).is_none());
    let replan = h.plans().pop().expect("re-planned");
    assert_eq!(replan.reason, "state_hours:FL");
    // 08:00 the next morning in New York.
    assert_eq!(replan.earliest_at, Some(at(2024, 3, 6, 13, 0)));
}

fn tenant_rules(rules: Vec<TenantCallingRule>, overrides: Vec<RuleOverride>) -> ControlChange {
    control_change(
        ControlSetting::CallingRules,
        None,
        ControlValue {
            calling_rules: Some(Box::new(CallingRules {
                rules,
                overrides,
                cap_subject: "tenant".into(),
                default_state: None,
            })),
            ..ControlValue::default()
        },
    )
}

/// A tenant's own rule applies to every lead (here a Chicago one, whose state has no
/// rules), counted across the tenant's campaigns; an override of a statutory rule, with
/// its reason, lets a call the rule would move go.
#[test]
fn a_tenants_own_cap_and_its_override_apply_from_control() {
    let mut h = harness();
    h.campaign_settings(CAMPAIGN, every_day(60));
    h.campaign_settings("nurture", every_day(60));
    h.set_control(&tenant_rules(
        vec![TenantCallingRule {
            id: "tenant:one_a_day".into(),
            kind: "frequency_cap".into(),
            params: "max=1; window=24h".into(),
            states: vec![],
        }],
        vec![],
    ));
    let launch = h.launched("c1");
    h.launch_outcome(&callstream_e2e::fixtures::call_launch(
        TENANT,
        "c1",
        CAMPAIGN,
        launch.launch_id,
        launch.job_id,
        LaunchStatus::Accepted,
        t0() + minutes(5),
    ));
    h.call(&answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        CallAnalysis::default(),
        t0() + minutes(6),
    ));
    // Another campaign of the tenant, due an hour later: the tenant counts every call.
    h.command(&launch_request("c1", "nurture", "r2"), t0() + minutes(6));
    let other = h.plans().pop().expect("planned");
    assert_eq!(other.placed_calls, [t0() + minutes(5)]);
    assert!(h.due("c1", &other, t0() + minutes(66)).is_none());
    let replan = h.plans().pop().expect("re-planned");
    assert_eq!(replan.reason, "tenant:one_a_day");
    assert_eq!(
        replan.earliest_at,
        Some(t0() + minutes(5) + TimeDelta::days(1))
    );

    // Florida's hours, overridden with a reason: a call at 20:30 New York time goes.
    let mut h = harness();
    h.campaign_settings(CAMPAIGN, every_day(60));
    h.set_control(&tenant_rules(
        vec![],
        vec![RuleOverride {
            rule: "state_hours:FL".into(),
            reason: "test: counsel's exemption".into(),
        }],
    ));
    h.command(&florida_request("fl", "r1"), t0());
    let plan = h.plans().pop().expect("planned");
    assert!(
        h.due("fl", &plan, at(2024, 3, 6, 1, 30)).is_some(),
        "overridden"
    );
}

/// Where neither the contact record nor the phone's area code says where the lead is (a
/// toll-free number), the tenant's default state applies, and the plan says so; a
/// campaign's own calling rules replace the tenant's for its calls.
#[test]
fn the_tenants_default_state_applies_when_nothing_else_says_and_a_campaign_may_have_its_own() {
    let mut h = harness();
    h.campaign_settings(CAMPAIGN, every_day(60));
    h.campaign_settings("collections", every_day(60));
    let rules = |default_state: Option<&str>, campaign: Option<&str>| {
        control_change(
            ControlSetting::CallingRules,
            campaign,
            ControlValue {
                calling_rules: Some(Box::new(CallingRules {
                    rules: vec![],
                    overrides: vec![],
                    cap_subject: "campaign".into(),
                    default_state: default_state.map(str::to_owned),
                })),
                ..ControlValue::default()
            },
        )
    };
    h.set_control(&rules(Some("FL"), None));
    h.set_control(&rules(Some("OK"), Some("collections")));
    let toll_free = |contact: &str, campaign: &str| {
        let mut cmd = launch_request(contact, campaign, "r1");
        if let Some(details) = cmd.contact.as_mut() {
            details.phone_number = Some("+18005550100".into());
        }
        cmd
    };
    h.command(&toll_free("tf", CAMPAIGN), t0());
    let plan = h.plans().pop().expect("planned");
    assert_eq!(plan.jurisdictions, ["FL"]);
    assert_eq!(plan.jurisdiction_source.as_deref(), Some("tenant_default"));

    h.command(&toll_free("tf2", "collections"), t0());
    let plan = h.plans().pop().expect("planned");
    assert_eq!(plan.jurisdictions, ["OK"]);
}

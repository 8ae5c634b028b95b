//! Leads: which states apply (and why), tenant rules and overrides.

use super::*;

#[test]
fn jurisdictions_follow_contact_then_area_code_then_tenant_default() {
    let resolve = |contact, phone, default| {
        resolve_jurisdictions(&JurisdictionInputs {
            contact_state: contact,
            phone,
            tenant_default: default,
        })
    };
    let entry = |code: &str, source| JurisdictionEntry {
        state: state(code),
        source,
    };
    use JurisdictionSource::*;
    // Contact state only (the phone agrees).
    let j = resolve(Some("Florida"), Some("+1 305 555 0100"), Some("GA")).unwrap();
    assert_eq!(j.entries, vec![entry("FL", Contact)]);
    assert_eq!(j.source(), Contact);
    // Contact and area code disagree: both apply, contact first.
    let j = resolve(Some("US-GA"), Some("(305) 555-0100"), None).unwrap();
    assert_eq!(j.entries, vec![entry("GA", Contact), entry("FL", AreaCode)]);
    // No contact state: the area code.
    let j = resolve(None, Some("13125550100"), Some("FL")).unwrap();
    assert_eq!(j.entries, vec![entry("IL", AreaCode)]);
    assert_eq!(j.skipped[0].reason, JurisdictionSkipReason::Missing);
    // A bad contact state and a Canadian number: the tenant default.
    let j = resolve(Some("Narnia"), Some("+1 416 555 0100"), Some("fl")).unwrap();
    assert_eq!(j.entries, vec![entry("FL", TenantDefault)]);
    assert!(matches!(
        j.skipped[0].reason,
        JurisdictionSkipReason::UnknownState { .. }
    ));
    assert!(matches!(
        j.skipped[1].reason,
        JurisdictionSkipReason::OutsideUs { area_code: 416, .. }
    ));
    // Toll-free and nothing else: no state.
    let err = resolve(None, Some("800-555-0100"), None).unwrap_err();
    assert_eq!(err.skipped.len(), 3);
    // Serialised as ISO codes.
    assert_eq!(serde_json::to_string(&state("fl")).unwrap(), "\"US-FL\"");
}

#[test]
fn a_lead_whose_area_code_and_recorded_state_differ_gets_both_rule_sets() {
    // Recorded in Georgia (no state rules), phone in Miami (Florida).
    let lead = resolve_jurisdictions(&JurisdictionInputs {
        contact_state: Some("GA"),
        phone: Some("+13055550100"),
        tenant_default: None,
    })
    .unwrap();
    let set = RuleSet::for_lead(&lead, &TenantRules::none());
    let ids: Vec<&str> = set.rules().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["state_hours:FL", "frequency_cap:FL:3_per_24h"]);
    let w = set.in_zones(vec![New_York]).unwrap();
    let late = local(New_York, 2026, 9, 14, 20, 30);
    assert_eq!(
        w.check(late).unwrap_err().rule_id.as_str(),
        "state_hours:FL"
    );
    // Recorded in Alabama, phone in Florida: Sunday (AL) and 20:00 (FL) both bind.
    let both = Jurisdictions {
        entries: vec![
            JurisdictionEntry {
                state: state("AL"),
                source: JurisdictionSource::Contact,
            },
            JurisdictionEntry {
                state: state("FL"),
                source: JurisdictionSource::AreaCode,
            },
        ],
        skipped: Vec::new(),
    };
    let w = RuleSet::for_lead(&both, &TenantRules::none())
        .in_zones(vec![Chicago])
        .unwrap();
    assert_eq!(
        w.check(local(Chicago, 2026, 9, 20, 12, 0))
            .unwrap_err()
            .rule_id
            .as_str(),
        "state_hours:AL"
    );
    // Saturday 20:10: both refuse; the first in table order is named.
    assert_eq!(
        w.check(local(Chicago, 2026, 9, 19, 20, 10))
            .unwrap_err()
            .rule_id
            .as_str(),
        "state_hours:FL"
    );
    assert_eq!(w.check(local(Chicago, 2026, 9, 14, 19, 0)), Ok(()));
}

#[test]
fn tenant_rules_add_and_overrides_remove_with_a_reason() {
    let specs = [
        TenantRuleSpec {
            id: "tenant:7_per_7d".into(),
            kind: "frequency_cap".into(),
            params: "max=7; window=7d".into(),
            states: vec![],
        },
        TenantRuleSpec {
            id: "tenant:fl_weekdays".into(),
            kind: "hours".into(),
            params: "mon-fri 09:00-17:00; sat,sun closed".into(),
            states: vec!["US-FL".into()],
        },
    ];
    let overrides = [Override {
        rule: RuleId::parse("state_holiday:MS").unwrap(),
        reason: "counsel memo 2026-11: commission rule repealed".into(),
    }];
    let tenant = TenantRules::new(&specs, &overrides).unwrap();
    let ms = RuleSet::for_lead(
        &Jurisdictions::single(state("MS"), JurisdictionSource::Contact),
        &tenant,
    );
    let ids: Vec<&str> = ms.rules().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["state_hours:MS", "tenant:7_per_7d"]);
    assert_eq!(ms.overridden().len(), 10);
    let fl = RuleSet::for_lead(
        &Jurisdictions::single(state("FL"), JurisdictionSource::Contact),
        &tenant,
    );
    assert_eq!(fl.rules().len(), 4);
    let w = fl.in_zones(vec![New_York]).unwrap();
    assert_eq!(
        w.check(local(New_York, 2026, 9, 14, 17, 30))
            .unwrap_err()
            .rule_id
            .as_str(),
        "tenant:fl_weekdays"
    );

    // What is refused, and why.
    let bad = |specs: &[TenantRuleSpec], overrides: &[Override]| {
        TenantRules::new(specs, overrides).unwrap_err()
    };
    let named = |id: &str| TenantRuleSpec {
        id: id.into(),
        ..specs[0].clone()
    };
    assert!(matches!(
        bad(&[named("frequency_cap:FL:9")], &[]),
        RulesError::TenantRuleName(_)
    ));
    assert!(matches!(
        bad(&[named("tenant:a"), named("tenant:a")], &[]),
        RulesError::Duplicate(_)
    ));
    let o = |rule: &str, reason: &str| Override {
        rule: RuleId::parse(rule).unwrap(),
        reason: reason.into(),
    };
    assert!(matches!(
        bad(&[], &[o("state_hours:FL", "  ")]),
        RulesError::OverrideWithoutReason(_)
    ));
    assert!(matches!(
        bad(&[], &[o("state_hours:GA", "x")]),
        RulesError::UnknownOverride(_)
    ));
    // A family is whole segments: `state_hours:F` names nothing.
    assert!(matches!(
        bad(&[], &[o("state_hours:F", "x")]),
        RulesError::UnknownOverride(_)
    ));
}

//! The restriction rule as a specification: the CRM adds and lifts only its
//! own flags; the lead's and operators' stick until an operator lifts them.

use proptest::prelude::*;

use super::*;

use Restriction::*;

#[test]
fn a_crm_false_never_lifts_the_leads_opt_out() {
    let mut r = Restrictions::default();
    assert_eq!(r.from_lead(DoNotCall), Change::Added);
    assert_eq!(r.from_crm(DoNotCall, false), Change::Unchanged);
    assert!(r.is_set(DoNotCall));
    assert_eq!(r.barred_reason(), Some("do_not_call"));
    // The CRM agreeing and then changing its mind changes nothing either.
    r.from_crm(DoNotCall, true);
    assert_eq!(r.from_crm(DoNotCall, false), Change::Unchanged);
    assert!(r.is_set(DoNotCall));
}

#[test]
fn the_crm_lifts_what_only_it_set() {
    let mut r = Restrictions::default();
    assert_eq!(r.from_crm(Blocked, true), Change::Added);
    assert_eq!(r.from_crm(Blocked, true), Change::Unchanged);
    assert_eq!(r.from_crm(Blocked, false), Change::Lifted);
    assert_eq!(r.barred_reason(), None);
}

#[test]
fn only_an_operator_lifts_a_sticky_restriction() {
    let mut r = Restrictions::default();
    r.from_lead(DoNotCall);
    assert_eq!(r.sticky(DoNotCall), Some(StickySource::Lead));
    assert_eq!(r.lift_by_operator(DoNotCall), Change::Lifted);
    assert!(!r.is_set(DoNotCall));
    // An operator's lift leaves the CRM's own flag to the CRM.
    r.from_crm(Spam, true);
    r.set_by_operator(Spam);
    assert_eq!(r.lift_by_operator(Spam), Change::Unchanged);
    assert!(r.is_set(Spam));
    assert_eq!(r.from_crm(Spam, false), Change::Lifted);
}

#[test]
fn the_lead_agreeing_keeps_an_operators_mark() {
    let mut r = Restrictions::default();
    r.set_by_operator(DoNotCall);
    assert_eq!(r.from_lead(DoNotCall), Change::Unchanged);
    assert_eq!(r.sticky(DoNotCall), Some(StickySource::Operator));
}

#[test]
fn barred_reasons_keep_their_order() {
    let mut r = Restrictions::default();
    r.from_crm(Spam, true);
    assert_eq!(r.barred_reason(), Some("spam"));
    r.from_crm(Enrolled, true);
    assert_eq!(r.barred_reason(), Some("enrolled_student"));
    r.from_lead(DoNotCall);
    assert_eq!(r.barred_reason(), Some("do_not_call"));
    r.from_crm(Blocked, true);
    assert_eq!(r.barred_reason(), Some("blocked_number"));
}

#[test]
fn state_stored_as_plain_flags_reads_as_sticky() {
    let old = r#"{"do_not_call":true,"blocked":false,"enrolled":false,"spam":true}"#;
    let mut r: Restrictions = serde_json::from_str(old).unwrap();
    assert_eq!(r.sticky(DoNotCall), Some(StickySource::Unknown));
    assert!(!r.is_set(Blocked));
    // The CRM cannot lift it: it might have been the lead's.
    r.from_crm(DoNotCall, false);
    assert!(r.is_set(DoNotCall));
    // Written back and read again, nothing changes.
    let again: Restrictions = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(again, r);
    // Missing fields read as unset.
    let empty: Restrictions = serde_json::from_str("{}").unwrap();
    assert_eq!(empty, Restrictions::default());
}

#[derive(Debug, Clone)]
enum Step {
    Crm(Restriction, bool),
    Lead(Restriction),
    OperatorSet(Restriction),
    OperatorLift(Restriction),
}

fn restriction() -> impl Strategy<Value = Restriction> {
    proptest::sample::select(Restriction::ALL.to_vec())
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (restriction(), any::<bool>()).prop_map(|(r, v)| Step::Crm(r, v)),
        1 => restriction().prop_map(Step::Lead),
        1 => restriction().prop_map(Step::OperatorSet),
        1 => restriction().prop_map(Step::OperatorLift),
    ]
}

proptest! {
    /// Whatever the CRM says, and in whatever order, a restriction the lead
    /// or an operator set is in force until an operator lifts it; and a
    /// restriction is in force exactly when the CRM's last word or a sticky
    /// mark says so.
    #[test]
    fn sticky_restrictions_hold_until_an_operator_lifts_them(
        steps in proptest::collection::vec(step(), 0..60),
    ) {
        let mut r = Restrictions::default();
        let mut sticky = std::collections::BTreeSet::new();
        let mut crm = std::collections::BTreeMap::new();
        for s in steps {
            match s {
                Step::Crm(k, v) => { r.from_crm(k, v); crm.insert(k, v); }
                Step::Lead(k) | Step::OperatorSet(k) => {
                    let change = match s { Step::Lead(_) => r.from_lead(k), _ => r.set_by_operator(k) };
                    prop_assert_ne!(change, Change::Lifted);
                    sticky.insert(k);
                }
                Step::OperatorLift(k) => { r.lift_by_operator(k); sticky.remove(&k); }
            }
            for k in Restriction::ALL {
                let expected = sticky.contains(&k) || crm.get(&k).copied().unwrap_or(false);
                prop_assert_eq!(r.is_set(k), expected, "{:?}", k);
            }
        }
    }
}

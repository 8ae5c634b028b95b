//! Frequency caps: table-driven histories against the rolling window.

use super::*;

fn fl_caps(placed: &[DateTime<Utc>]) -> CapWindow {
    let lead = Jurisdictions::single(state("FL"), JurisdictionSource::Contact);
    RuleSet::for_lead(&lead, &TenantRules::none()).caps(placed)
}

/// Hours after 2026-09-14 00:00 UTC.
fn h(hours: f64) -> DateTime<Utc> {
    utc(2026, 9, 14, 0, 0) + TimeDelta::seconds((hours * 3600.0) as i64)
}

#[test]
fn three_calls_in_24_hours_then_the_oldest_must_age_out() {
    // (calls already placed, candidate, Ok or the instant it frees up)
    let cases: &[(&[f64], f64, Option<f64>)] = &[
        (&[], 0.0, None),
        (&[1.0, 2.0], 3.0, None),
        // A 4th call within 24 h of the oldest waits until it ages out.
        (&[1.0, 2.0, 3.0], 4.0, Some(25.0)),
        (&[1.0, 2.0, 3.0], 24.99, Some(25.0)),
        // Exactly 24 h after the oldest is allowed.
        (&[1.0, 2.0, 3.0], 25.0, None),
        // Order does not matter.
        (&[3.0, 1.0, 2.0], 10.0, Some(25.0)),
        // After the oldest ages out, the next one bounds the 5th.
        (&[1.0, 2.0, 3.0, 25.0], 25.5, Some(26.0)),
        // Calls after the candidate count too: a call slipped in before
        // three later ones would make four in 24 h.
        (&[10.0, 11.0, 12.0], 0.0, Some(34.0)),
        (&[30.0, 31.0, 32.0], 7.0, None),
        (&[30.0, 31.0, 32.0], 8.0, None),
        (&[30.0, 31.0, 32.0], 8.5, Some(54.0)),
    ];
    for &(placed, at, frees) in cases {
        let placed: Vec<_> = placed.iter().map(|x| h(*x)).collect();
        let got = fl_caps(&placed).check(h(at));
        match frees {
            None => assert_eq!(got, Ok(()), "{placed:?} at {at}"),
            Some(f) => {
                let hit = got.unwrap_err();
                assert_eq!(hit.violation.rule_id.as_str(), "frequency_cap:FL:3_per_24h");
                assert_eq!(hit.frees_at, h(f), "{placed:?} at {at}");
                assert_eq!(fl_caps(&placed).next_allowed(h(at), h(1000.0)), Some(h(f)));
            }
        }
    }
}

#[test]
fn the_window_is_absolute_time_across_dst() {
    // Three calls on the Saturday before spring forward (09:00-11:00 EST):
    // the 4th may go 24 hours after the first, 10:00 EDT on Sunday.
    let placed = [9, 10, 11].map(|hour| local(New_York, 2026, 3, 7, hour, 0));
    let caps = fl_caps(&placed);
    let sunday_9 = local(New_York, 2026, 3, 8, 9, 30);
    assert_eq!(
        caps.check(sunday_9).unwrap_err().frees_at,
        local(New_York, 2026, 3, 8, 10, 0)
    );
}

#[test]
fn a_tenant_cap_uses_the_same_type() {
    let tenant = TenantRules::new(
        &[TenantRuleSpec {
            id: "tenant:7_per_7d".into(),
            kind: "frequency_cap".into(),
            params: "max=7; window=7d".into(),
            states: vec![],
        }],
        &[],
    )
    .unwrap();
    // Georgia has no statutory cap; the tenant's applies.
    let set = RuleSet::for_lead(
        &Jurisdictions::single(state("GA"), JurisdictionSource::Contact),
        &tenant,
    );
    let day = |d: i64| h(10.0) + TimeDelta::days(d);
    let placed: Vec<_> = (0..7).map(day).collect();
    let hit = set
        .caps(&placed)
        .check(day(7) - TimeDelta::minutes(1))
        .unwrap_err();
    assert_eq!(hit.violation.rule_id.as_str(), "tenant:7_per_7d");
    assert_eq!(hit.frees_at, day(7));
    assert_eq!(set.caps(&placed).check(day(7)), Ok(()));
    // In Florida both caps apply; the earliest instant satisfies both.
    let set = RuleSet::for_lead(
        &Jurisdictions::single(state("FL"), JurisdictionSource::Contact),
        &tenant,
    );
    let placed = [h(0.0), h(1.0), h(2.0), h(30.0), h(31.0), h(32.0), h(60.0)];
    let hit = set.caps(&placed).check(h(61.0)).unwrap_err();
    // Florida allows 61 (one call in the last 24 h); the 8th call in 7
    // days waits until the first ages out, 168 h after it.
    assert_eq!(hit.violation.rule_id.as_str(), "tenant:7_per_7d");
    assert_eq!(hit.frees_at, h(168.0));
}

#[test]
fn caps_not_yet_in_force_allow_earlier_calls() {
    // Maryland's cap starts on 1 January 2024 (00:00 UTC here).
    let lead = Jurisdictions::single(state("MD"), JurisdictionSource::Contact);
    let set = RuleSet::for_lead(&lead, &TenantRules::none());
    let placed = [
        utc(2023, 12, 31, 10, 0),
        utc(2023, 12, 31, 11, 0),
        utc(2023, 12, 31, 12, 0),
    ];
    assert_eq!(set.caps(&placed).check(utc(2023, 12, 31, 13, 0)), Ok(()));
    let hit = set.caps(&placed).check(utc(2024, 1, 1, 1, 0)).unwrap_err();
    assert_eq!(hit.frees_at, utc(2024, 1, 1, 10, 0));
}

#[test]
fn cap_parameters_are_checked() {
    for bad in [
        "max=3",
        "window=24h",
        "max=0; window=24h",
        "max=3; window=0h",
        "max=3; window=400d",
        "max=x; window=1d",
        "max=3; window=5w",
        "max=3; window=1d; per=x",
    ] {
        assert!(FrequencyCap::parse(bad).is_err(), "{bad}");
    }
    let cap = FrequencyCap::parse("max=7; window=7d").unwrap();
    assert_eq!((cap.max(), cap.window()), (7, TimeDelta::days(7)));
    assert_eq!(cap.describe(), "at most 7 calls in any 7 days");
}

use super::*;
use chrono::{NaiveDate, NaiveDateTime};
use chrono_tz::America::{Chicago, Phoenix};

fn inputs<'a>(
    contact: Option<&'a str>,
    platform: Option<&'a str>,
    phone: Option<&'a str>,
    tenant: Option<&'a str>,
) -> ZoneInputs<'a> {
    ZoneInputs {
        contact_zone: contact,
        platform_zone: platform,
        phone,
        tenant_default: tenant,
    }
}

#[test]
fn resolution_order_is_contact_platform_area_code_tenant() {
    use ZoneSource::*;
    let cases: &[(ZoneInputs, ZoneSource, &[&str])] = &[
        (
            inputs(
                Some("America/Denver"),
                Some("America/Chicago"),
                Some("+12125550100"),
                Some("UTC"),
            ),
            Contact,
            &["America/Denver"],
        ),
        (
            inputs(
                None,
                Some("America/Chicago"),
                Some("+12125550100"),
                Some("UTC"),
            ),
            VoicePlatform,
            &["America/Chicago"],
        ),
        (
            inputs(None, None, Some("+12125550100"), Some("UTC")),
            AreaCode,
            &["America/New_York"],
        ),
        (
            inputs(None, None, Some("(915) 555-0100"), Some("UTC")),
            AreaCode,
            &["America/Denver", "America/Chicago"],
        ),
        (
            inputs(None, None, None, Some("America/Phoenix")),
            TenantDefault,
            &["America/Phoenix"],
        ),
        // Invalid values are skipped, not fatal.
        (
            inputs(
                Some("Mars/Olympus_Mons"),
                Some(""),
                Some("+18005550100"),
                Some("Europe/Berlin"),
            ),
            TenantDefault,
            &["Europe/Berlin"],
        ),
        (
            inputs(Some("  America/Chicago  "), None, None, None),
            Contact,
            &["America/Chicago"],
        ),
    ];
    for (i, (input, source, zones)) in cases.iter().enumerate() {
        let r = resolve_zone(input).unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert_eq!(r.source, *source, "case {i}");
        let names: Vec<_> = r.zones.iter().map(|z| z.name()).collect();
        assert_eq!(names, zones.to_vec(), "case {i}");
        // Every source before the used one is recorded as skipped, in order.
        let skipped: Vec<_> = r.skipped.iter().map(|s| s.source).collect();
        let expected: Vec<_> = ZoneSource::ORDER
            .iter()
            .copied()
            .take_while(|s| s != source)
            .collect();
        assert_eq!(skipped, expected, "case {i}");
    }
}

#[test]
fn skipped_sources_carry_their_reason() {
    let r = resolve_zone(&inputs(
        Some("Not/AZone"),
        None,
        Some("+1 800 555 0100"),
        Some("America/Chicago"),
    ))
    .unwrap();
    assert_eq!(
        r.skipped,
        vec![
            SkippedSource {
                source: ZoneSource::Contact,
                reason: SkipReason::InvalidZoneName {
                    name: "Not/AZone".into()
                },
            },
            SkippedSource {
                source: ZoneSource::VoicePlatform,
                reason: SkipReason::Missing
            },
            SkippedSource {
                source: ZoneSource::AreaCode,
                reason: SkipReason::NonGeographicAreaCode { area_code: 800 },
            },
        ]
    );
    let r = resolve_zone(&inputs(None, None, Some("+44 20 7946 0958"), Some("UTC"))).unwrap();
    assert_eq!(
        r.skipped[2].reason,
        SkipReason::PhoneUnparseable {
            error: PhoneParseError::NotNanp
        }
    );
    let r = resolve_zone(&inputs(None, None, Some("(290) 555-0100"), Some("UTC"))).unwrap();
    assert_eq!(
        r.skipped[2].reason,
        SkipReason::UnknownAreaCode { area_code: 290 }
    );
}

#[test]
fn no_usable_zone_is_an_error_not_a_panic() {
    let err = resolve_zone(&inputs(None, Some("bogus"), None, Some("also bogus"))).unwrap_err();
    assert_eq!(err.skipped.len(), 4);
    assert!(resolve_zone(&ZoneInputs::default()).is_err());
}

#[test]
fn resolved_zone_serialises_with_zone_names_and_source() {
    let r = resolve_zone(&inputs(None, None, Some("+19155550100"), Some("UTC"))).unwrap();
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["source"], "area_code");
    assert_eq!(json["zones"][0], "America/Denver");
    assert_eq!(json["skipped"][0]["reason"]["kind"], "missing");
    let back: ResolvedZone = serde_json::from_value(json).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.primary(), chrono_tz::America::Denver);
    let empty = serde_json::json!({"zones": [], "source": "contact"});
    assert!(serde_json::from_value::<ResolvedZone>(empty).is_err());
    let bad = serde_json::json!({"zones": ["Nowhere/Land"], "source": "contact"});
    assert!(serde_json::from_value::<ResolvedZone>(bad).is_err());
}

fn local(y: i32, m: u32, d: u32, h: u32, min: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(y, m, d)
        .unwrap()
        .and_hms_opt(h, min, 0)
        .unwrap()
}

fn utc(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
    local(y, m, d, h, min).and_utc()
}

#[test]
fn resolve_local_handles_gaps_and_overlaps() {
    let cases: &[(Tz, NaiveDateTime, DateTime<Utc>, &str)] = &[
        (
            Chicago,
            local(2026, 3, 7, 15, 0),
            utc(2026, 3, 7, 21, 0),
            "CST, ordinary",
        ),
        (
            Chicago,
            local(2026, 3, 8, 15, 0),
            utc(2026, 3, 8, 20, 0),
            "CDT after the jump",
        ),
        (
            Chicago,
            local(2026, 3, 8, 2, 0),
            utc(2026, 3, 8, 8, 0),
            "gap start -> 03:00 CDT",
        ),
        (
            Chicago,
            local(2026, 3, 8, 2, 30),
            utc(2026, 3, 8, 8, 0),
            "in gap -> 03:00 CDT",
        ),
        (
            Chicago,
            local(2026, 3, 8, 3, 0),
            utc(2026, 3, 8, 8, 0),
            "first valid time",
        ),
        (
            Chicago,
            local(2026, 11, 1, 1, 30),
            utc(2026, 11, 1, 6, 30),
            "overlap -> CDT (earlier)",
        ),
        (
            Chicago,
            local(2026, 11, 1, 2, 0),
            utc(2026, 11, 1, 8, 0),
            "after overlap, CST",
        ),
        (
            Phoenix,
            local(2026, 3, 8, 2, 30),
            utc(2026, 3, 8, 9, 30),
            "Phoenix: no gap",
        ),
        (
            Phoenix,
            local(2026, 11, 1, 1, 30),
            utc(2026, 11, 1, 8, 30),
            "Phoenix: no overlap",
        ),
        (
            Phoenix,
            local(2026, 7, 1, 12, 0),
            utc(2026, 7, 1, 19, 0),
            "Phoenix: MST in July",
        ),
    ];
    for (tz, l, expected, why) in cases {
        assert_eq!(resolve_local(*tz, *l), *expected, "{why}");
    }
}

#[test]
fn resolve_local_is_exact_to_the_second_in_a_gap() {
    let t = resolve_local(Chicago, local(2026, 3, 8, 2, 59) + TimeDelta::seconds(59));
    assert_eq!(t, utc(2026, 3, 8, 8, 0));
}

proptest::proptest! {
    /// Every local time maps to an instant whose wall clock is the time asked
    /// for, or (in a gap) the first wall-clock time after it.
    #[test]
    fn resolve_local_lands_on_or_just_after(secs in 0i64..(3 * 366 * 86_400), zone in 0usize..4) {
        let tz = [Chicago, Phoenix, chrono_tz::America::New_York, chrono_tz::Australia::Lord_Howe][zone];
        let l = local(2025, 1, 1, 0, 0) + TimeDelta::seconds(secs);
        let t = resolve_local(tz, l);
        let back = t.with_timezone(&tz).naive_local();
        proptest::prop_assert!(back >= l);
        proptest::prop_assert!(back - l <= TimeDelta::hours(1));
        // Nothing earlier reads as `l` or later.
        let before = (t - TimeDelta::seconds(1)).with_timezone(&tz).naive_local();
        proptest::prop_assert!(before < l || back == l);
    }
}

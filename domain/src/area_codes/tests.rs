use super::*;
use proptest::prelude::*;

#[test]
fn every_table_line_parses_and_every_zone_is_known() {
    let t = table();
    assert!(t.rejected.is_empty(), "rejected lines: {:?}", t.rejected);
    assert_eq!(entries().len(), 442);
}

#[test]
fn table_covers_the_us_and_canada() {
    let us = entries()
        .iter()
        .filter(|e| e.region.starts_with("US-"))
        .count();
    let ca = entries()
        .iter()
        .filter(|e| e.region.starts_with("CA-"))
        .count();
    assert!(us >= 360, "only {us} US codes");
    assert!(ca >= 55, "only {ca} Canadian codes");
    // Every state and DC has at least one code.
    let states = [
        "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN",
        "IA", "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH",
        "NJ", "NM", "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT",
        "VT", "VA", "WA", "WV", "WI", "WY",
    ];
    for s in states {
        let region = format!("US-{s}");
        assert!(
            entries().iter().any(|e| e.region == region),
            "no code for {region}"
        );
    }
}

#[test]
fn no_code_is_both_geographic_and_non_geographic() {
    for e in entries() {
        assert!(
            !NON_GEOGRAPHIC.contains(&e.area_code.get()),
            "{}",
            e.area_code
        );
    }
}

fn zones_of(code: u16) -> Vec<&'static str> {
    let code = AreaCode::new(code).unwrap();
    match lookup(code) {
        AreaCodeLookup::Geographic(e) => e.zones.iter().map(|z| z.name()).collect(),
        other => panic!("{code}: {other:?}"),
    }
}

#[test]
fn single_zone_codes() {
    let cases: &[(u16, &str)] = &[
        (212, "America/New_York"),
        (312, "America/Chicago"),
        (303, "America/Denver"),
        (602, "America/Phoenix"),
        (415, "America/Los_Angeles"),
        (808, "Pacific/Honolulu"),
        (317, "America/Indiana/Indianapolis"),
        (502, "America/Kentucky/Louisville"),
        (313, "America/Detroit"),
        (416, "America/Toronto"),
        (306, "America/Regina"),
        (902, "America/Halifax"),
        (787, "America/Puerto_Rico"),
        (671, "Pacific/Guam"),
        (876, "America/Jamaica"),
    ];
    for (code, zone) in cases {
        assert_eq!(zones_of(*code), vec![*zone], "{code}");
    }
}

#[test]
fn codes_that_span_zones_list_every_zone() {
    let cases: &[(u16, &[&str])] = &[
        (219, &["America/Chicago", "America/Indiana/Indianapolis"]),
        (574, &["America/Indiana/Indianapolis", "America/Chicago"]),
        (812, &["America/Indiana/Indianapolis", "America/Chicago"]),
        (930, &["America/Indiana/Indianapolis", "America/Chicago"]),
        (423, &["America/New_York", "America/Chicago"]),
        (931, &["America/Chicago", "America/New_York"]),
        (270, &["America/Chicago", "America/New_York"]),
        (606, &["America/New_York", "America/Chicago"]),
        (850, &["America/Chicago", "America/New_York"]),
        (915, &["America/Denver", "America/Chicago"]),
        (208, &["America/Boise", "America/Los_Angeles"]),
        (541, &["America/Los_Angeles", "America/Boise"]),
        (308, &["America/Chicago", "America/Denver"]),
        (620, &["America/Chicago", "America/Denver"]),
        (785, &["America/Chicago", "America/Denver"]),
        (605, &["America/Chicago", "America/Denver"]),
        (701, &["America/Chicago", "America/Denver"]),
        (928, &["America/Phoenix", "America/Denver"]),
        (906, &["America/Detroit", "America/Menominee"]),
        (907, &["America/Anchorage", "America/Adak"]),
        (807, &["America/Toronto", "America/Winnipeg"]),
    ];
    for (code, zones) in cases {
        assert_eq!(zones_of(*code), zones.to_vec(), "{code}");
    }
}

#[test]
fn lookup_classifies_non_geographic_and_unknown() {
    for code in [800, 833, 844, 855, 866, 877, 888, 900, 500, 600, 700] {
        assert_eq!(
            lookup(AreaCode::new(code).unwrap()),
            AreaCodeLookup::NonGeographic,
            "{code}"
        );
    }
    // 999 is reserved, 290 unassigned.
    for code in [999, 290] {
        assert_eq!(
            lookup(AreaCode::new(code).unwrap()),
            AreaCodeLookup::Unknown
        );
    }
}

#[test]
fn parses_common_formats() {
    let cases: &[(&str, u16, u16, u16)] = &[
        ("+13125550100", 312, 555, 100),
        ("+1 312 555 0100", 312, 555, 100),
        ("+1 (312) 555-0100", 312, 555, 100),
        ("13125550100", 312, 555, 100),
        ("1-312-555-0100", 312, 555, 100),
        ("(312) 555-0100", 312, 555, 100),
        ("312-555-0100", 312, 555, 100),
        ("312.555.0100", 312, 555, 100),
        ("312 555 0100", 312, 555, 100),
        ("3125550100", 312, 555, 100),
        ("  312/555-0100  ", 312, 555, 100),
        ("tel:+1-312-555-0100", 312, 555, 100),
        ("312-555-0100 x204", 312, 555, 100),
        ("312-555-0100 ext. 9", 312, 555, 100),
        ("+1 312 555 0100;ext=7", 312, 555, 100),
        ("+1 907 555 9999", 907, 555, 9999),
    ];
    for (input, npa, nxx, line) in cases {
        let n = parse_nanp(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(
            (n.area_code.get(), n.exchange, n.line),
            (*npa, *nxx, *line),
            "{input}"
        );
    }
}

#[test]
fn rejects_what_is_not_a_nanp_number() {
    use PhoneParseError::*;
    let cases: &[(&str, PhoneParseError)] = &[
        ("", Empty),
        ("  -() ", Empty),
        ("+44 20 7946 0958", NotNanp),
        ("011 44 20 7946 0958", NotNanp),
        ("555-0100", WrongLength { digits: 7 }),
        ("23125550100", WrongLength { digits: 11 }),
        ("+1 312 555 010", WrongLength { digits: 10 }),
        ("1-800-FLOWERS", InvalidCharacter),
        ("(112) 555-0100", InvalidAreaCode),
        ("(411) 555-0100", InvalidAreaCode),
        ("(312) 155-0100", InvalidExchange),
    ];
    for (input, err) in cases {
        assert_eq!(parse_nanp(input), Err(*err), "{input:?}");
    }
}

#[test]
fn parse_errors_never_echo_the_number() {
    let err = parse_nanp("+44 20 7946 0958").unwrap_err();
    assert!(!err.to_string().contains("7946"));
}

proptest! {
    /// Any valid NANP number written in any of the accepted formats parses back to itself.
    #[test]
    fn formats_round_trip(npa in 200u16..1000, nxx in 200u16..1000, line in 0u16..10000, style in 0usize..6) {
        prop_assume!(npa % 100 != 11);
        let text = match style {
            0 => format!("+1{npa:03}{nxx:03}{line:04}"),
            1 => format!("({npa:03}) {nxx:03}-{line:04}"),
            2 => format!("{npa:03}.{nxx:03}.{line:04}"),
            3 => format!("1-{npa:03}-{nxx:03}-{line:04}"),
            4 => format!("+1 {npa:03} {nxx:03} {line:04} ext 12"),
            _ => format!("{npa:03}{nxx:03}{line:04}"),
        };
        let n = parse_nanp(&text).unwrap();
        prop_assert_eq!(n.area_code.get(), npa);
        prop_assert_eq!(n.e164(), format!("+1{npa:03}{nxx:03}{line:04}"));
    }

    /// Arbitrary text never panics the parser.
    #[test]
    fn parser_never_panics(s in "\\PC{0,40}") {
        let _ = parse_nanp(&s);
    }
}

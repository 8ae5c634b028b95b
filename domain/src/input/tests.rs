//! The input rules as tables of accepted and refused values, and properties: an accepted
//! id is safe in a URL path and a header, accepted text holds no byte Postgres refuses.

use proptest::prelude::*;

use super::*;

#[test]
fn ids_are_letters_digits_and_a_few_marks() {
    let accepted = [
        "c-1",
        "CA0123456789abcdef0123456789abcdef",
        "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
        "crm:42@acme+eu=1~x",
        "a.b",
        &"x".repeat(MAX_ID_BYTES),
    ];
    for id in accepted {
        assert_eq!(check_id(id), Ok(()), "{id:?}");
    }
    let refused = [
        ("", Refusal::Empty),
        ("123/../456", Refusal::IdCharacter),
        ("a/b", Refusal::IdCharacter),
        ("a?b", Refusal::IdCharacter),
        ("a#b", Refusal::IdCharacter),
        ("a%2Fb", Refusal::IdCharacter),
        ("a b", Refusal::IdCharacter),
        ("a\tb", Refusal::IdCharacter),
        ("a\0b", Refusal::IdCharacter),
        ("caf\u{e9}", Refusal::IdCharacter),
        ("..", Refusal::DotDot),
        ("a..b", Refusal::DotDot),
        (".a", Refusal::DotDot),
        ("a.", Refusal::DotDot),
    ];
    for (id, why) in refused {
        assert_eq!(check_id(id), Err(why), "{id:?}");
    }
    assert!(matches!(
        check_id(&"x".repeat(MAX_ID_BYTES + 1)),
        Err(Refusal::TooLong { .. })
    ));
}

#[test]
fn text_keeps_tabs_and_line_breaks_and_refuses_other_controls() {
    for text in [
        "",
        "call me\ttomorrow\r\nafter 3",
        "日本語 ✓ émoji 🎉",
        "a\u{7f}b",
    ] {
        assert_eq!(check_text(text, 100), Ok(()), "{text:?}");
    }
    for text in ["a\0b", "\u{1}", "bell\u{7}", "esc\u{1b}[31m", "\u{1f}"] {
        assert_eq!(
            check_text(text, 100),
            Err(Refusal::ControlCharacter),
            "{text:?}"
        );
    }
}

#[test]
fn text_length_counts_characters_not_bytes() {
    assert_eq!(check_text(&"é".repeat(500), 500), Ok(()));
    assert_eq!(
        check_text(&"é".repeat(501), 500),
        Err(Refusal::TooLong {
            max: 500,
            unit: "characters"
        })
    );
}

#[test]
fn phone_numbers_are_e164_only() {
    for number in [
        "+15551234567",
        "+4930123456",
        "+12345678",
        "+123456789012345",
    ] {
        assert_eq!(check_e164(number), Ok(()), "{number:?}");
    }
    for number in [
        "sip:attacker@host",
        "client:bob",
        "911",
        "+911",
        "112",
        "+1 555 123 4567",
        "(555) 123-4567",
        "15551234567",
        "+1234567",
        "+1234567890123456",
        "+05551234567",
        "+1555123456a",
        "",
        "+",
        "+١٢٣٤٥٦٧٨٩",
    ] {
        assert_eq!(check_e164(number), Err(Refusal::NotE164), "{number:?}");
    }
}

#[test]
fn time_zones_are_iana_names() {
    for zone in [
        "America/New_York",
        "America/Indiana/Indianapolis",
        "UTC",
        "Etc/GMT+5",
    ] {
        assert_eq!(check_time_zone(zone), Ok(()), "{zone:?}");
    }
    assert_eq!(check_time_zone(""), Err(Refusal::Empty));
    for zone in [
        "America/Nowhere",
        "EST5EDT/x",
        "../../etc/passwd",
        "America/New_York\0",
    ] {
        assert_eq!(
            check_time_zone(zone),
            Err(Refusal::UnknownTimeZone),
            "{zone:?}"
        );
    }
}

proptest! {
    #[test]
    fn an_accepted_id_is_one_url_segment_and_a_header_value(id in "\\PC{0,40}|[-_.:@+=~a-zA-Z0-9/?#% ]{0,40}") {
        prop_assert_eq!(check_id(&id).is_ok(), id.len() <= MAX_ID_BYTES && matches_id_pattern(&id));
        if check_id(&id).is_ok() {
            prop_assert!(!id.is_empty() && id.len() <= MAX_ID_BYTES);
            prop_assert!(!id.contains(['/', '?', '#', '%', ' ']) && !id.contains(".."));
            prop_assert!(is_header_value(&id));
        }
    }

    #[test]
    fn accepted_text_holds_nothing_postgres_refuses(text in "\\PC{0,60}|[\\x00-\\x20a]{0,20}") {
        if check_text(&text, 100).is_ok() {
            prop_assert!(!text.contains('\0'));
            prop_assert!(text.chars().all(|c| c >= ' ' || matches!(c, '\t' | '\n' | '\r')));
        }
    }
}

/// A header value may hold visible ASCII, space and tab (RFC 9110 field-value).
fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

/// [`ID_PATTERN`] by hand: runs of id characters joined by single dots.
fn matches_id_pattern(id: &str) -> bool {
    let run = |r: &str| {
        !r.is_empty()
            && r.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_:@+=~-".contains(&b))
    };
    id.split('.').all(run)
}

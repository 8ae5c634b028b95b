//! The adapter's pure parts: the form it posts, the callback URL and how
//! answers are classified. That the gateway accepts a callback to this URL
//! and reads our ids from it is checked in the end-to-end crate
//! (`tests/tests/gateway_contracts.rs`).

use super::*;
use std::collections::BTreeMap;
use uuid::Uuid;

fn callbacks() -> CallbackConfig {
    CallbackConfig {
        base_url: "https://hooks.example.com".into(),
        default_integration: "tw-default".into(),
        integrations: BTreeMap::from([("acme".to_owned(), "tw-acme".to_owned())]),
    }
}

fn config() -> TwilioConfig {
    TwilioConfig {
        base_url: "http://127.0.0.1:1".into(),
        account_sid: "AC1".into(),
        auth_token: "token".into(),
        default_from: Some("+15550009999".into()),
        instructions: Instructions::Twiml("<Response/>".into()),
        machine_detection: Some("Enable".into()),
    }
}

fn call() -> CreateCall {
    CreateCall {
        launch_id: Uuid::from_u128(0xabc),
        tenant_id: "acme".into(),
        contact_id: "c 1&2".into(),
        campaign_id: "enrol".into(),
        to: "+15551230000".into(),
        from: None,
    }
}

#[test]
fn the_form_carries_everything_twilio_needs() {
    let body = create_form(&config(), &callbacks(), &call());
    let pairs: Vec<(String, String)> = form_urlencoded::parse(body.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let get = |name: &str| -> Vec<&str> {
        pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(get("To"), ["+15551230000"]);
    assert_eq!(get("From"), ["+15550009999"], "the default caller id");
    assert_eq!(get("Twiml"), ["<Response/>"]);
    assert_eq!(get("MachineDetection"), ["Enable"]);
    assert_eq!(get("StatusCallbackEvent"), STATUS_CALLBACK_EVENTS);
    assert_eq!(
        get("StatusCallback"),
        [status_callback_url(&callbacks(), &call()).as_str()]
    );
}

#[test]
fn the_callback_url_is_the_gateways_twilio_endpoint_for_the_tenant() {
    let url = status_callback_url(&callbacks(), &call());
    assert!(
        url.starts_with("https://hooks.example.com/v1/webhooks/twilio/tw-acme?"),
        "{url}"
    );
    assert_eq!(launch_id_of(&url), Some(Uuid::from_u128(0xabc).to_string()));
    let other = CreateCall {
        tenant_id: "globex".into(),
        ..call()
    };
    assert!(status_callback_url(&callbacks(), &other).contains("/twilio/tw-default?"));
}

#[test]
fn answers_are_classified_by_what_they_say_about_the_call() {
    let transient = |code: &str| CreateOutcome::Transient {
        reason: code.into(),
        detail: Some("20503: Service Unavailable".into()),
    };
    let ambiguous = |code: &str| CreateOutcome::Ambiguous {
        reason: code.into(),
        detail: Some("20503: Service Unavailable".into()),
    };
    let ambiguous_without_detail = |code: &str| CreateOutcome::Ambiguous {
        reason: code.into(),
        detail: None,
    };
    let error_body = br#"{"code":20503,"message":"Service Unavailable","status":503}"#;
    let cases: Vec<(u16, &[u8], CreateOutcome)> = vec![
        (
            201,
            br#"{"sid":"CA1","status":"queued"}"#,
            CreateOutcome::Accepted {
                call_id: "CA1".into(),
            },
        ),
        (
            200,
            br#"{"sid":"CA2"}"#,
            CreateOutcome::Accepted {
                call_id: "CA2".into(),
            },
        ),
        (
            201,
            b"not json",
            CreateOutcome::Ambiguous {
                reason: "bad_response".into(),
                detail: Some("HTTP 201 without a call sid".into()),
            },
        ),
        // A 5xx or 408 may come after the call was created (an edge in
        // front of the platform): looked up, never created again.
        (503, error_body, ambiguous("http_503")),
        (500, error_body, ambiguous("http_500")),
        (
            502,
            b"<html>Bad Gateway</html>",
            ambiguous_without_detail("http_502"),
        ),
        (504, b"", ambiguous_without_detail("http_504")),
        (408, b"", ambiguous_without_detail("http_408")),
        // Twilio documents 429 as a refusal: nothing was created.
        (429, error_body, transient("http_429")),
        (
            400,
            br#"{"code":21211,"message":"Invalid 'To' Phone Number","status":400}"#,
            CreateOutcome::Permanent {
                reason: "http_400".into(),
                detail: Some("21211: Invalid 'To' Phone Number".into()),
            },
        ),
        (
            401,
            b"",
            CreateOutcome::Permanent {
                reason: "http_401".into(),
                detail: None,
            },
        ),
    ];
    for (status, body, expected) in cases {
        let status = StatusCode::from_u16(status).unwrap();
        assert_eq!(classify_create(status, body), expected, "{status}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_transient_because_nothing_was_sent() {
    // Port 1 on loopback: nothing listens there.
    let twilio = Twilio::new(config(), callbacks(), &DispatchPolicy::default(), 4).unwrap();
    let outcome = twilio.create_call(call()).await;
    assert!(
        matches!(&outcome, CreateOutcome::Transient { reason, .. } if reason == "connect"),
        "{outcome:?}"
    );
    let lookup = twilio
        .find_call(FindCall {
            launch_id: Uuid::from_u128(1),
            to: "+15551230000".into(),
            since_ms: 0,
        })
        .await;
    assert!(matches!(lookup, LookupOutcome::Failed { .. }), "{lookup:?}");
}

#[test]
fn dates_in_twilios_and_iso_formats_parse() {
    assert_eq!(
        parse_date("Tue, 14 Nov 2023 22:13:20 +0000"),
        Some(1_700_000_000_000)
    );
    assert_eq!(parse_date("2023-11-14T22:13:20Z"), Some(1_700_000_000_000));
    assert_eq!(parse_date("yesterday"), None);
}

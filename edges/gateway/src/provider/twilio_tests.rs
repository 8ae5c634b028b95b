//! Twilio callbacks: what is read from where, and what is refused.

use axum::http::{HeaderMap, HeaderValue};
use chrono::TimeZone;

use super::*;
use crate::config::{IntegrationConfig, RateLimit};
use crate::secret::Secret;
use crate::testkit;

const BASE: &str = "https://gw.example.com";
const TOKEN: &str = "auth-token";

fn integration() -> IntegrationConfig {
    IntegrationConfig {
        id: "acme-voice".into(),
        tenant_id: "acme".into(),
        provider: ProviderKind::Twilio,
        secrets: vec![Secret::new(TOKEN.as_bytes().to_vec())],
        rate_limit: RateLimit::default(),
    }
}

fn callback(pairs: &[(&str, &str)]) -> Vec<u8> {
    testkit::form(pairs)
}

const COMPLETED: &[(&str, &str)] = &[
    ("CallSid", "CA42"),
    ("CallStatus", "completed"),
    ("CallDuration", "37"),
    ("AnsweredBy", "human"),
    ("SequenceNumber", "3"),
    ("Timestamp", "Tue, 10 Jan 2023 18:59:47 +0000"),
    ("To", "+15551230000"),
    ("From", "+15559870000"),
];

fn accept(path: &str, body: &[u8], sign_as: Option<&str>) -> Result<CallEventDraft, ApiError> {
    let integration = integration();
    let mut headers = HeaderMap::new();
    if let Some(token) = sign_as {
        let sig = testkit::twilio_signature(token, &format!("{BASE}{path}"), body);
        headers.insert(SIGNATURE_HEADER, HeaderValue::from_str(&sig).unwrap());
    }
    let request = Inbound {
        integration: &integration,
        path_and_query: path,
        headers: &headers,
        body,
        received_at: Utc.with_ymd_and_hms(2023, 1, 10, 19, 0, 0).unwrap(),
    };
    let provider = Twilio {
        public_base_url: BASE.into(),
    };
    let verified = provider.verify(&request)?;
    provider.parse(&request, verified)
}

const LAUNCH: &str = "6f1c2a4e-8b9d-4c3e-a1f2-0b1c2d3e4f50";
const PATH: &str = "/v1/webhooks/twilio/acme-voice?contact_id=c-7&launch_id=6f1c2a4e-8b9d-4c3e-a1f2-0b1c2d3e4f50&campaign_id=spring&tenant=acme";

#[test]
fn a_signed_callback_becomes_an_event() {
    let event = accept(PATH, &callback(COMPLETED), Some(TOKEN)).unwrap();
    assert_eq!(event.tenant_id, "acme");
    assert_eq!(event.contact_id, "c-7");
    assert_eq!(
        event.launch_id.map(|l| l.to_string()).as_deref(),
        Some(LAUNCH)
    );
    assert_eq!(event.campaign_id.as_deref(), Some("spring"));
    assert_eq!(event.call_id, "CA42");
    assert_eq!(event.provider_status, "completed");
    assert_eq!(event.duration_seconds, Some(37));
    assert_eq!(event.sequence_number, Some(3));
    assert_eq!(event.answered_by.as_deref(), Some("human"));
    assert_eq!(
        event.occurred_at,
        Utc.with_ymd_and_hms(2023, 1, 10, 18, 59, 47).unwrap()
    );
    assert_eq!(event.provider_event_id, "CA42:completed:3");
    assert_eq!(event.correlation_id, None);
    let shown = format!("{event:?}");
    assert!(
        !shown.contains("5551230000") && !shown.contains("5559870000"),
        "{shown}"
    );
}

#[test]
fn the_event_id_is_the_providers_identity() {
    let first = accept(PATH, &callback(COMPLETED), Some(TOKEN)).unwrap();
    let mut reordered = COMPLETED.to_vec();
    reordered.reverse();
    let again = accept(PATH, &callback(&reordered), Some(TOKEN)).unwrap();
    assert_eq!(first.event_id, again.event_id);
    let mut next = COMPLETED.to_vec();
    next[4] = ("SequenceNumber", "4");
    assert_ne!(
        first.event_id,
        accept(PATH, &callback(&next), Some(TOKEN))
            .unwrap()
            .event_id
    );
}

#[test]
fn refusals() {
    let without = |name: &str| -> Vec<u8> {
        callback(
            &COMPLETED
                .iter()
                .copied()
                .filter(|(k, _)| *k != name)
                .collect::<Vec<_>>(),
        )
    };
    let with = |name: &'static str, value: &'static str| -> Vec<u8> {
        let mut pairs = COMPLETED.to_vec();
        pairs.retain(|(k, _)| *k != name);
        pairs.push((name, value));
        callback(&pairs)
    };
    let good = callback(COMPLETED);
    type Case<'a> = (&'a str, &'a str, Vec<u8>, Option<&'a str>, &'a str);
    let cases: Vec<Case<'_>> = vec![
        ("unsigned", PATH, good.clone(), None, "missing_signature"),
        (
            "wrong token",
            PATH,
            good.clone(),
            Some("other"),
            "bad_signature",
        ),
        (
            "no contact in the url",
            "/v1/webhooks/twilio/acme-voice?launch_id=l-9",
            good.clone(),
            Some(TOKEN),
            "invalid_event",
        ),
        (
            "other tenant in the url",
            "/v1/webhooks/twilio/acme-voice?contact_id=c&tenant=globex",
            good.clone(),
            Some(TOKEN),
            "invalid_event",
        ),
        (
            "no CallSid",
            PATH,
            without("CallSid"),
            Some(TOKEN),
            "invalid_event",
        ),
        (
            "no CallStatus",
            PATH,
            without("CallStatus"),
            Some(TOKEN),
            "invalid_event",
        ),
        (
            "bad duration",
            PATH,
            with("CallDuration", "long"),
            Some(TOKEN),
            "invalid_event",
        ),
        (
            "bad sequence",
            PATH,
            with("SequenceNumber", "-1"),
            Some(TOKEN),
            "invalid_event",
        ),
    ];
    for (name, path, body, sign_as, code) in cases {
        let err = accept(path, &body, sign_as).expect_err(name);
        assert_eq!(err.code(), code, "{name}: {err}");
    }
}

#[test]
fn a_contact_in_the_form_is_not_trusted() {
    // Form fields are Twilio's; the contact comes only from the launch's URL.
    let mut pairs = COMPLETED.to_vec();
    pairs.push(("contact_id", "c-evil"));
    let err = accept(
        "/v1/webhooks/twilio/acme-voice",
        &callback(&pairs),
        Some(TOKEN),
    )
    .unwrap_err();
    assert_eq!(err, ApiError::missing("contact_id"));
}

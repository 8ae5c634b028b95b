//! JSON call events: the documented example parses, refusals are classed.

use axum::http::{HeaderMap, HeaderValue};
use chrono::TimeZone;

use super::*;
use crate::config::{IntegrationConfig, RateLimit};
use crate::testkit;
use crate::verify::ManualClock;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const NOW: i64 = 1_700_000_000;

/// The example of the README, kept in step with it by this test.
pub const EXAMPLE: &str = r#"{
  "call_id": "call_8c1f",
  "contact_id": "c-1042",
  "launch_id": "0b6e3f2a-5c4d-4e8f-9a1b-2c3d4e5f6a7b",
  "campaign_id": "spring-intake",
  "status": "completed",
  "occurred_at": "2023-11-14T22:13:20Z",
  "duration_seconds": 74,
  "answered_by": "human",
  "time_zone": "America/Chicago",
  "analysis": {
    "summary": "Asked to be called back tomorrow afternoon.",
    "interested": true,
    "callback_requested": true,
    "callback_phrase": "tomorrow after three",
    "do_not_call": false,
    "wants_person": false,
    "request_phrase": null
  }
}"#;

fn integration() -> IntegrationConfig {
    IntegrationConfig {
        id: "acme-ai".into(),
        tenant_id: "acme".into(),
        provider: ProviderKind::Json,
        secrets: vec![standard_webhooks::decode_secret(SECRET).unwrap()],
        rate_limit: RateLimit::default(),
    }
}

fn accept(body: &str, id: &str, signed_at: i64, sign: bool) -> Result<CallEventDraft, ApiError> {
    let integration = integration();
    let mut headers = HeaderMap::new();
    headers.insert("webhook-id", HeaderValue::from_str(id).unwrap());
    headers.insert("webhook-timestamp", HeaderValue::from(signed_at));
    if sign {
        let sig = testkit::standard_signature(SECRET, id, signed_at, body.as_bytes());
        headers.insert("webhook-signature", HeaderValue::from_str(&sig).unwrap());
    }
    let request = Inbound {
        integration: &integration,
        path_and_query: "/v1/webhooks/json/acme-ai",
        headers: &headers,
        body: body.as_bytes(),
        received_at: Utc.timestamp_opt(NOW, 0).unwrap(),
    };
    let provider = Json {
        clock: Arc::new(ManualClock::new(NOW * 1_000)),
        tolerance: standard_webhooks::DEFAULT_TOLERANCE,
    };
    let verified = provider.verify(&request)?;
    provider.parse(&request, verified)
}

#[test]
fn the_documented_example_parses() {
    let event = accept(EXAMPLE, "msg_1", NOW, true).unwrap();
    assert_eq!(
        (
            event.call_id.as_str(),
            event.contact_id.as_str(),
            event.provider_status.as_str()
        ),
        ("call_8c1f", "c-1042", "completed")
    );
    assert_eq!(
        event.launch_id.map(|l| l.to_string()).as_deref(),
        Some("0b6e3f2a-5c4d-4e8f-9a1b-2c3d4e5f6a7b")
    );
    assert_eq!(event.campaign_id.as_deref(), Some("spring-intake"));
    assert_eq!(event.reported_time_zone.as_deref(), Some("America/Chicago"));
    assert_eq!(event.duration_seconds, Some(74));
    let analysis = event.analysis.unwrap();
    assert!(analysis.callback_requested && !analysis.do_not_call && !analysis.wants_person);
    assert_eq!(analysis.interested, Some(true));
    assert_eq!(
        analysis.callback_phrase.as_deref(),
        Some("tomorrow after three")
    );
    assert_eq!(
        event.occurred_at,
        Utc.with_ymd_and_hms(2023, 11, 14, 22, 13, 20).unwrap()
    );
    assert_eq!(event.provider_event_id, "msg_1");
    assert_eq!(event.correlation_id, None);
}

#[test]
fn the_event_id_follows_the_webhook_id() {
    let a = accept(EXAMPLE, "msg_1", NOW, true).unwrap().event_id;
    // A redelivery is re-signed with a new timestamp but keeps its id.
    assert_eq!(
        a,
        accept(EXAMPLE, "msg_1", NOW - 60, true).unwrap().event_id
    );
    assert_ne!(a, accept(EXAMPLE, "msg_2", NOW, true).unwrap().event_id);
}

#[test]
fn occurred_at_defaults_to_the_signed_timestamp() {
    let body = r#"{"call_id":"c","contact_id":"k","status":"no-answer"}"#;
    let event = accept(body, "msg_3", NOW - 10, true).unwrap();
    assert_eq!(event.occurred_at.timestamp(), NOW - 10);
    assert!(event.analysis.is_none());
}

#[test]
fn refusals() {
    let cases = [
        ("unsigned", EXAMPLE, NOW, false, "missing_signature"),
        ("stale", EXAMPLE, NOW - 301, true, "stale_timestamp"),
        ("future", EXAMPLE, NOW + 301, true, "stale_timestamp"),
        ("not json", "{nope", NOW, true, "malformed_body"),
        (
            "wrong type",
            r#"{"call_id": 5}"#,
            NOW,
            true,
            "malformed_body",
        ),
        (
            "no call id",
            r#"{"contact_id":"k","status":"s"}"#,
            NOW,
            true,
            "invalid_event",
        ),
        (
            "no contact",
            r#"{"call_id":"c","status":"s"}"#,
            NOW,
            true,
            "invalid_event",
        ),
        (
            "empty status",
            r#"{"call_id":"c","contact_id":"k","status":""}"#,
            NOW,
            true,
            "invalid_event",
        ),
        (
            "other tenant",
            r#"{"tenant_id":"globex","call_id":"c","contact_id":"k","status":"s"}"#,
            NOW,
            true,
            "invalid_event",
        ),
    ];
    for (name, body, signed_at, sign, code) in cases {
        let err = accept(body, "msg_9", signed_at, sign).expect_err(name);
        assert_eq!(err.code(), code, "{name}: {err}");
    }
}

#[test]
fn json_errors_do_not_echo_the_body() {
    let err =
        serde_json::from_slice::<JsonCallEvent>(br#"{"call_id": "+15551234567"x}"#).unwrap_err();
    let shown = describe_json_error(&err);
    assert!(!shown.contains("555"), "{shown}");
    let err = serde_json::from_slice::<JsonCallEvent>(br#"{"duration_seconds": "+15551234567"}"#)
        .unwrap_err();
    assert!(!describe_json_error(&err).contains("555"));
}

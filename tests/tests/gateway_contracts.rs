//! What other parts write must read back through the gateway's own code, so a change on
//! either side that breaks the pair fails here:
//! - the launch dispatcher's status callback URL: a callback Twilio signs for it verifies
//!   with the gateway's Twilio verifier and parses to exactly the dispatcher's ids;
//! - recovery's replayed call event: it carries the event id the gateway gives the live
//!   callback of the same call and status, so downstream dedupe drops the replay.
//!
//! Pure code, no broker. (The voice simulator's side of the same contract is
//! `sim_voice_signatures.rs`.)

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use callstream_gateway::config::{IntegrationConfig, RateLimit};
use callstream_gateway::event::ProviderKind;
use callstream_gateway::provider::twilio::{Twilio, SIGNATURE_HEADER};
use callstream_gateway::provider::{Inbound, Provider};
use callstream_gateway::secret::Secret;
use callstream_gateway::testkit;
use callstream_launch_dispatcher::provider::twilio::status_callback_url;
use callstream_launch_dispatcher::provider::CreateCall;
use callstream_launch_dispatcher::CallbackConfig;
use callstream_recovery::ids::recovered_event;
use uuid::Uuid;

/// The dispatcher's callback settings of its own unit tests (`provider/twilio_tests.rs`).
fn callbacks() -> CallbackConfig {
    CallbackConfig {
        base_url: "https://hooks.example.com".into(),
        default_integration: "tw-default".into(),
        integrations: BTreeMap::from([("acme".to_owned(), "tw-acme".to_owned())]),
    }
}

fn call() -> CreateCall {
    CreateCall {
        launch_id: Uuid::from_u128(0xabc),
        tenant_id: "acme".into(),
        contact_id: "c+1=2:x~y@z".into(),
        campaign_id: "enrol".into(),
        to: "+15551230000".into(),
        from: None,
    }
}

/// The gateway verifies the signature over the URL it rebuilds and takes
/// contact, launch, campaign and tenant from its query: a callback Twilio
/// signs for our URL must parse to exactly our ids.
#[test]
fn the_gateway_accepts_a_signed_callback_to_our_url_and_reads_our_ids() {
    let url = status_callback_url(&callbacks(), &call());
    let path_and_query = url.trim_start_matches("https://hooks.example.com");
    let body = testkit::form(&[
        ("CallSid", "CA123"),
        ("CallStatus", "ringing"),
        ("SequenceNumber", "1"),
    ]);
    let signature = testkit::twilio_signature("token", &url, &body);
    let mut headers = HeaderMap::new();
    headers.insert("x-twilio-signature", signature.parse().unwrap());
    let integration = IntegrationConfig {
        id: "tw-acme".into(),
        tenant_id: "acme".into(),
        provider: ProviderKind::Twilio,
        secrets: vec![Secret::new(b"token".to_vec())],
        rate_limit: RateLimit::default(),
    };
    let inbound = Inbound {
        integration: &integration,
        path_and_query,
        headers: &headers,
        body: &body,
        received_at: chrono::Utc::now(),
    };
    let provider = Twilio {
        public_base_url: "https://hooks.example.com".into(),
    };
    let verified = provider.verify(&inbound).expect("signature verifies");
    let draft = provider.parse(&inbound, verified).expect("callback parses");
    assert_eq!(draft.contact_id, "c+1=2:x~y@z");
    assert_eq!(draft.launch_id, Some(Uuid::from_u128(0xabc)));
    assert_eq!(draft.campaign_id.as_deref(), Some("enrol"));
    assert_eq!(draft.call_id, "CA123");
}

/// The event id the gateway gives a signed Twilio callback.
fn gateway_event_id(pairs: &[(&str, &str)]) -> (Uuid, String) {
    let integration = IntegrationConfig {
        id: "tw".into(),
        tenant_id: "acme".into(),
        provider: ProviderKind::Twilio,
        secrets: vec![Secret::new(b"token".to_vec())],
        rate_limit: RateLimit::default(),
    };
    let path = "/v1/webhooks/twilio/tw?contact_id=c-1&tenant=acme";
    let base = "https://gw.example.com";
    let body = testkit::form(pairs);
    let mut headers = HeaderMap::new();
    let signature = testkit::twilio_signature("token", &format!("{base}{path}"), &body);
    headers.insert(SIGNATURE_HEADER, signature.parse().expect("a header value"));
    let request = Inbound {
        integration: &integration,
        path_and_query: path,
        headers: &headers,
        body: &body,
        received_at: chrono::Utc::now(),
    };
    let twilio = Twilio {
        public_base_url: base.into(),
    };
    let verified = twilio.verify(&request).expect("signature verifies");
    let draft = twilio.parse(&request, verified).expect("callback parses");
    (draft.event_id, draft.provider_event_id)
}

#[test]
fn a_replayed_twilio_completion_has_the_gateways_event_id() {
    let cases = [
        ("CA42", "completed", "3"),
        ("CA42", "no-answer", "2"),
        ("CAffff", "busy", "0"),
    ];
    for (sid, status, seq) in cases {
        let live = gateway_event_id(&[
            ("CallSid", sid),
            ("CallStatus", status),
            ("SequenceNumber", seq),
            ("CallDuration", "12"),
        ]);
        assert_eq!(
            recovered_event("acme", "twilio", sid, status, seq),
            live,
            "{sid} {status} {seq}"
        );
    }
}

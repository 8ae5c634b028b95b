//! What the simulator posts is exactly what the gateway accepts: status
//! callbacks verify with the gateway's `X-Twilio-Signature` verifier and
//! parse with its Twilio provider; analyses verify with its Standard
//! Webhooks verifier and parse with its JSON provider.

mod support;

use std::sync::Arc;

use callstream_gateway::config::{IntegrationConfig, RateLimit};
use callstream_gateway::event::ProviderKind;
use callstream_gateway::provider::json::{Json, JsonCallEvent};
use callstream_gateway::provider::twilio::{Twilio, SIGNATURE_HEADER};
use callstream_gateway::provider::{Inbound, Provider};
use callstream_gateway::secret::Secret;
use callstream_gateway::verify::standard_webhooks::{self, SignedHeaders, DEFAULT_TOLERANCE};
use callstream_gateway::verify::{twilio, SystemClock, VerifyError};
use callstream_sim_voice::Behaviour;
use support::voice::*;

fn integration(id: &str, provider: ProviderKind, secret: Secret) -> IntegrationConfig {
    IntegrationConfig {
        id: id.into(),
        tenant_id: "t1".into(),
        provider,
        secrets: vec![secret],
        rate_limit: RateLimit::default(),
    }
}

#[tokio::test]
async fn callbacks_and_analyses_verify_and_parse_with_the_gateway() {
    let rx = Receiver::start().await;
    let human = Behaviour {
        weight_voicemail: 0.0,
        weight_no_answer: 0.0,
        weight_busy: 0.0,
        weight_failed: 0.0,
        ..fast()
    };
    let sim = Sim::start(config(human, Some(rx.analysis_url()))).await;
    let launch = uuid::Uuid::new_v4().to_string();
    let created = sim
        .place("+15551230001", &rx.callback_url("c-1", &launch))
        .await;
    let sid = created["sid"].as_str().unwrap().to_string();
    let stats = sim.settle().await;
    assert_eq!(stats["callbacks_sent"], 4);
    assert_eq!(stats["analysis_sent"], 1);

    // Status callbacks: the gateway's verifier over the URL the simulator
    // posted to, then its provider end to end.
    let token = Secret::new(TOKEN.as_bytes().to_vec());
    let twilio_provider = Twilio {
        public_base_url: rx.base.clone(),
    };
    let tw = integration("int-tw", ProviderKind::Twilio, token.clone());
    let mut statuses = Vec::new();
    for r in rx.twilio() {
        let url = format!("{}{}", rx.base, r.path_and_query);
        let params = twilio::sorted_params(&r.body);
        let header = r.headers.get(SIGNATURE_HEADER).map(|v| v.as_bytes());
        assert_eq!(
            twilio::verify(std::slice::from_ref(&token), &url, &params, header),
            Ok(())
        );
        let wrong = Secret::new(b"not-the-token".to_vec());
        assert_eq!(
            twilio::verify(&[wrong], &url, &params, header),
            Err(VerifyError::Mismatch)
        );
        let inbound = Inbound {
            integration: &tw,
            path_and_query: &r.path_and_query,
            headers: &r.headers,
            body: &r.body,
            received_at: chrono::Utc::now(),
        };
        let verified = twilio_provider.verify(&inbound).unwrap();
        let draft = twilio_provider.parse(&inbound, verified).unwrap();
        assert_eq!(draft.call_id, sid);
        assert_eq!(draft.contact_id, "c-1");
        assert_eq!(draft.launch_id.map(|l| l.to_string()), Some(launch.clone()));
        statuses.push((
            draft.sequence_number.unwrap(),
            draft.provider_status,
            draft.answered_by,
            draft.duration_seconds,
        ));
    }
    statuses.sort();
    let names: Vec<&str> = statuses.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(names, ["initiated", "ringing", "in-progress", "completed"]);
    let seqs: Vec<i64> = statuses.iter().map(|s| s.0).collect();
    assert_eq!(seqs, [0, 1, 2, 3]);
    let done = &statuses[3];
    assert_eq!(done.2.as_deref(), Some("human"));
    assert!(done.3.unwrap() >= 20, "talk time from the configured range");

    // The analysis: Standard Webhooks verifier, then the JSON provider.
    let analyses = rx.json();
    assert_eq!(analyses.len(), 1);
    let a = &analyses[0];
    let key = standard_webhooks::decode_secret(WHSEC).unwrap();
    let header = |n: &str| a.headers.get(n).map(|v| v.as_bytes());
    let signed = SignedHeaders {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
    };
    assert!(standard_webhooks::verify(
        std::slice::from_ref(&key),
        signed,
        &a.body,
        &SystemClock,
        DEFAULT_TOLERANCE
    )
    .is_ok());
    let tampered = [a.body.as_ref(), b" "].concat();
    assert_eq!(
        standard_webhooks::verify(
            std::slice::from_ref(&key),
            signed,
            &tampered,
            &SystemClock,
            DEFAULT_TOLERANCE
        ),
        Err(VerifyError::Mismatch)
    );
    let event: JsonCallEvent = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(event.call_id.as_deref(), Some(sid.as_str()));
    assert_eq!(event.status.as_deref(), Some("answered"));
    let analysis = event.analysis.unwrap();
    let flags = [
        analysis.callback_requested,
        analysis.do_not_call,
        analysis.wants_person,
        analysis.interested.is_some(),
    ];
    assert!(
        flags.iter().any(|f| *f),
        "the analysis says what the lead wanted"
    );
    let json_provider = Json {
        clock: Arc::new(SystemClock),
        tolerance: DEFAULT_TOLERANCE,
    };
    let js = integration("int-js", ProviderKind::Json, key);
    let inbound = Inbound {
        integration: &js,
        path_and_query: &a.path_and_query,
        headers: &a.headers,
        body: &a.body,
        received_at: chrono::Utc::now(),
    };
    let verified = json_provider.verify(&inbound).unwrap();
    let draft = json_provider.parse(&inbound, verified).unwrap();
    assert_eq!(draft.contact_id, "c-1");
    assert_eq!(draft.launch_id.map(|l| l.to_string()), Some(launch));
    assert_eq!(draft.answered_by.as_deref(), Some("human"));
    assert_eq!(draft.provider_event_id, format!("msg_{sid}_analysis"));
}

#[tokio::test]
async fn without_subscriptions_only_the_completion_is_posted() {
    let rx = Receiver::start().await;
    let sim = Sim::start(config(fast(), None)).await;
    let cb = rx.callback_url("c-2", "L-2");
    let r = sim
        .create(&[("To", "+15551230002"), ("StatusCallback", cb.as_str())])
        .await;
    assert_eq!(r.status(), 201);
    sim.settle().await;
    let got = rx.twilio();
    assert_eq!(got.len(), 1);
    let status = form_field(&got[0].body, "CallStatus").unwrap();
    assert!(["completed", "busy", "no-answer", "failed"].contains(&status.as_str()));
    assert_eq!(
        form_field(&got[0].body, "SequenceNumber").as_deref(),
        Some("0")
    );
    assert_eq!(
        form_field(&got[0].body, "AnsweredBy"),
        None,
        "no machine detection asked"
    );
    assert!(rx.json().is_empty(), "no analysis URL configured");
}

//! Fuzz-style property tests: every parser and verifier over arbitrary
//! bytes. Nothing panics, nothing unsigned or malformed is accepted, and
//! nothing malformed reaches Kafka (the gateway here has no broker, so a
//! request that got that far would answer 503, not 4xx).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::LazyLock;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use callstream_gateway::launch;
use callstream_gateway::secret::Secret;
use callstream_gateway::testkit;
use callstream_gateway::trace;
use callstream_gateway::verify::standard_webhooks::{self, SignedHeaders};
use callstream_gateway::verify::{twilio, Clock, ManualClock, VerifyError};
use proptest::prelude::*;
use support::*;

/// One runtime and one broker-less gateway for every case: building a
/// producer per case would dominate the run.
static SHARED: LazyLock<(tokio::runtime::Runtime, Gateway)> = LazyLock::new(|| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (rt, offline_gateway())
});

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn twilio_verifier_takes_any_bytes(
        body in proptest::collection::vec(any::<u8>(), 0..512),
        url in ".{0,80}",
        header in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
    ) {
        let params = twilio::sorted_params(&body);
        let tokens = [Secret::new(b"token".to_vec())];
        let result = twilio::verify(&tokens, &url, &params, header.as_deref());
        prop_assert!(result.is_err(), "a random header never matches");
        let _ = twilio::with_port_toggled(&url);
    }

    #[test]
    fn twilio_signatures_verify_and_bind_every_value(
        pairs in proptest::collection::vec(("[A-Za-z]{1,8}", ".{0,12}"), 1..8),
        token in "[ -~]{1,32}",
        extra in "[a-z]{1,4}",
    ) {
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let body = testkit::form(&pairs);
        let url = "https://gw.example.com/v1/webhooks/twilio/i?contact_id=c";
        let header = testkit::twilio_signature(&token, url, &body);
        let tokens = [Secret::new(token.as_bytes().to_vec())];
        let params = twilio::sorted_params(&body);
        prop_assert_eq!(twilio::verify(&tokens, url, &params, Some(header.as_bytes())), Ok(()));
        let mut changed = pairs.clone();
        let value = format!("{}{extra}", changed[0].1);
        changed[0].1 = &value;
        let tampered_body = testkit::form(&changed);
        let tampered = twilio::sorted_params(&tampered_body);
        prop_assert_eq!(
            twilio::verify(&tokens, url, &tampered, Some(header.as_bytes())),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn default_ports_toggle_back(
        https in any::<bool>(),
        host in "[a-z]{1,10}\\.[a-z]{2,5}",
        with_port in any::<bool>(),
        path in "(/[a-z0-9]{0,6}){0,3}(\\?[a-z]=[0-9]{1,3})?",
    ) {
        let scheme = if https { "https" } else { "http" };
        let port = match (with_port, https) { (false, _) => "", (true, true) => ":443", (true, false) => ":80" };
        let url = format!("{scheme}://{host}{port}{path}");
        let toggled = twilio::with_port_toggled(&url).unwrap();
        prop_assert_ne!(&toggled, &url);
        prop_assert_eq!(twilio::with_port_toggled(&toggled).unwrap(), url);
    }

    #[test]
    fn standard_webhooks_verifier_takes_any_bytes(
        id in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
        timestamp in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..24)),
        signature in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..200)),
        body in proptest::collection::vec(any::<u8>(), 0..512),
        secret in ".{0,60}",
    ) {
        let keys = [standard_webhooks::decode_secret(WHSEC).unwrap()];
        let headers = SignedHeaders { id: id.as_deref(), timestamp: timestamp.as_deref(), signature: signature.as_deref() };
        let result = standard_webhooks::verify(&keys, headers, &body, &ManualClock::new(1_700_000_000_000), Duration::from_secs(300));
        prop_assert!(result.is_err());
        let _ = standard_webhooks::decode_secret(&secret);
        if let Some(ts) = &timestamp {
            let _ = standard_webhooks::parse_timestamp(ts);
        }
    }

    #[test]
    fn any_flipped_body_byte_breaks_a_standard_signature(
        body in proptest::collection::vec(any::<u8>(), 1..256),
        at in any::<proptest::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let now = 1_700_000_000;
        let keys = [standard_webhooks::decode_secret(WHSEC).unwrap()];
        let signature = testkit::standard_signature(WHSEC, "msg_1", now, &body);
        let ts = now.to_string();
        let headers = SignedHeaders { id: Some(b"msg_1"), timestamp: Some(ts.as_bytes()), signature: Some(signature.as_bytes()) };
        let clock = ManualClock::new(now * 1_000);
        prop_assert_eq!(standard_webhooks::verify(&keys, headers, &body, &clock, Duration::from_secs(300)), Ok(now));
        let mut tampered = body.clone();
        tampered[at.index(body.len())] ^= flip;
        prop_assert_eq!(
            standard_webhooks::verify(&keys, headers, &tampered, &clock, Duration::from_secs(300)),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn traceparents_are_always_valid(raw in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..80))) {
        let _ = raw.as_deref().map(trace::parse);
        let out = trace::child_of(raw.as_deref());
        prop_assert!(trace::parse(out.as_bytes()).is_some(), "{}", out);
    }

    #[test]
    fn launch_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let result = launch::parse("acme", &body, &axum::http::HeaderMap::new(), chrono::Utc::now());
        prop_assert!(result.is_err(), "random bytes are not a launch request");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Correctly signed garbage reaches the parsers, which refuse it.
    #[test]
    fn signed_garbage_is_refused_before_kafka(
        json_body in proptest::collection::vec(any::<u8>(), 0..1024),
        form_body in proptest::collection::vec(any::<u8>(), 0..1024),
        query in "[a-z_=&%0-9]{0,40}",
    ) {
        let (rt, gw) = &*SHARED;
        let now = gw.clock.now_unix();
        let signature = testkit::standard_signature(WHSEC, "msg_f", now, &json_body);
        let json = Request::post(format!("/v1/webhooks/json/{JSON_ID}"))
            .header("content-type", "application/json")
            .header("webhook-id", "msg_f")
            .header("webhook-timestamp", now.to_string())
            .header("webhook-signature", signature)
            .body(Body::from(json_body))
            .unwrap();
        let reply = rt.block_on(gw.send(json));
        prop_assert!(matches!(reply.status, StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY), "{:?}", reply);
        let twilio = signed_twilio(&format!("/v1/webhooks/twilio/{TWILIO_ID}?{query}"), &form_body, TWILIO_TOKEN);
        let reply = rt.block_on(gw.send(twilio));
        prop_assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", reply);
    }

    /// Unsigned bytes on any endpoint are refused, whatever they hold.
    #[test]
    fn unsigned_bytes_are_refused(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        endpoint in 0usize..3,
        content_type in prop_oneof![Just("application/json"), Just("application/x-www-form-urlencoded"), Just("text/plain")],
    ) {
        let (rt, gw) = &*SHARED;
        let uri = [
            format!("/v1/webhooks/twilio/{TWILIO_ID}?contact_id=c"),
            format!("/v1/webhooks/json/{JSON_ID}"),
            "/v1/launch-requests".to_string(),
        ][endpoint].clone();
        let request = Request::post(uri).header("content-type", content_type).body(Body::from(body)).unwrap();
        let reply = rt.block_on(gw.send(request));
        prop_assert!(matches!(reply.status, StatusCode::UNAUTHORIZED | StatusCode::BAD_REQUEST), "{:?}", reply);
    }
}

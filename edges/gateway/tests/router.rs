//! Every refusal class, through the router without a socket. The gateway's
//! producer points at a broker that does not exist, so a request that got
//! as far as Kafka would answer 503: every 4xx here was decided before it.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use std::num::NonZeroU32;

use callstream_gateway::config::RateLimit;
use callstream_gateway::verify::Clock;
use support::*;

const EVENT: &str = r#"{"call_id":"call_1","contact_id":"c-1","status":"completed"}"#;

#[tokio::test]
async fn each_error_class_has_its_status_and_code() {
    let gw = offline_gateway();
    let now = gw.clock.now_unix();
    let good_twilio = || twilio_request("c-1", &pairs(&completed("CA1", "1")), TWILIO_TOKEN);
    let mut unsigned_twilio = good_twilio();
    unsigned_twilio.headers_mut().remove("x-twilio-signature");
    let mut wrong_type = json_request("msg_1", now, EVENT, WHSEC);
    wrong_type
        .headers_mut()
        .insert("content-type", "text/plain".parse().unwrap());
    let big = format!(r#"{{"call_id":"{}"}}"#, "x".repeat(70 * 1024));
    let mut big_chunked = json_request("msg_big", now, &big, WHSEC);
    big_chunked.headers_mut().remove("content-length");

    let cases: Vec<(&str, Request<Body>, StatusCode, &str)> = vec![
        (
            "twilio unsigned",
            unsigned_twilio,
            StatusCode::UNAUTHORIZED,
            "missing_signature",
        ),
        (
            "twilio wrong token",
            twilio_request("c-1", &pairs(&completed("CA1", "1")), "nope"),
            StatusCode::UNAUTHORIZED,
            "bad_signature",
        ),
        (
            "json wrong secret",
            json_request("msg_1", now, EVENT, "whsec_c2VjcmV0LW90aGVy"),
            StatusCode::UNAUTHORIZED,
            "bad_signature",
        ),
        (
            "json stale",
            json_request("msg_1", now - 301, EVENT, WHSEC),
            StatusCode::UNAUTHORIZED,
            "stale_timestamp",
        ),
        (
            "json future",
            json_request("msg_1", now + 301, EVENT, WHSEC),
            StatusCode::UNAUTHORIZED,
            "stale_timestamp",
        ),
        (
            "unknown integration",
            signed_twilio(
                "/v1/webhooks/twilio/nobody?contact_id=c",
                b"CallSid=CA1",
                TWILIO_TOKEN,
            ),
            StatusCode::NOT_FOUND,
            "unknown_integration",
        ),
        (
            "integration of another provider",
            signed_twilio(
                &format!("/v1/webhooks/twilio/{JSON_ID}?contact_id=c"),
                b"CallSid=CA1",
                TWILIO_TOKEN,
            ),
            StatusCode::NOT_FOUND,
            "unknown_integration",
        ),
        (
            "unknown provider",
            signed_twilio(
                &format!("/v1/webhooks/vonage/{TWILIO_ID}"),
                b"",
                TWILIO_TOKEN,
            ),
            StatusCode::NOT_FOUND,
            "unknown_integration",
        ),
        (
            "unknown route",
            Request::get("/v2/nothing").body(Body::empty()).unwrap(),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            "wrong content type",
            wrong_type,
            StatusCode::BAD_REQUEST,
            "wrong_content_type",
        ),
        (
            "malformed json",
            json_request("msg_2", now, "{not json", WHSEC),
            StatusCode::BAD_REQUEST,
            "malformed_body",
        ),
        (
            "no call id",
            json_request("msg_3", now, r#"{"contact_id":"c","status":"s"}"#, WHSEC),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_event",
        ),
        (
            "no contact",
            twilio_request("", &pairs(&completed("CA1", "1")), TWILIO_TOKEN),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_event",
        ),
        (
            "no status",
            twilio_request("c-1", &[("CallSid", "CA1")], TWILIO_TOKEN),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_event",
        ),
        (
            "too large, declared",
            json_request("msg_4", now, &big, WHSEC),
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
        ),
        (
            "too large, streamed",
            big_chunked,
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
        ),
        (
            "launch without token",
            launch_request(None, "{}"),
            StatusCode::UNAUTHORIZED,
            "missing_token",
        ),
        (
            "launch with a wrong token",
            launch_request(Some("guess"), "{}"),
            StatusCode::UNAUTHORIZED,
            "bad_token",
        ),
        (
            "launch missing fields",
            launch_request(Some(LAUNCH_TOKEN), r#"{"contact_id":"c"}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_event",
        ),
        (
            "launch not json",
            launch_request(Some(LAUNCH_TOKEN), "contact=c"),
            StatusCode::BAD_REQUEST,
            "malformed_body",
        ),
        (
            "webhook accepted but broker away",
            good_twilio(),
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
        ),
        (
            "launch accepted but broker away",
            launch_request(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"r1","contact_id":"c","campaign_id":"x"}"#,
            ),
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
        ),
    ];
    for (name, request, status, code) in cases {
        let reply = gw.send(request).await;
        assert_eq!(
            (reply.status, reply.code()),
            (status, code),
            "{name}: {:?}",
            reply.json
        );
        assert!(
            reply.json["detail"].as_str().is_some_and(|m| !m.is_empty()),
            "{name}"
        );
        let retry = reply.headers.get("retry-after").is_some();
        assert_eq!(
            retry,
            status == StatusCode::SERVICE_UNAVAILABLE,
            "{name}: Retry-After"
        );
    }
    let metrics = gw.state.metrics_text();
    assert!(
        metrics.contains(
            r#"callstream_gateway_requests_total{route="json",outcome="stale_timestamp"} 2"#
        ),
        "{metrics}"
    );
    assert!(metrics.contains(r#"callstream_gateway_produce_latency_seconds_count{topic="call-events",result="failed"} 1"#), "{metrics}");
}

#[tokio::test]
async fn over_the_rate_limit_is_429_with_retry_after() {
    let mut config = offline_gateway().config;
    let one = NonZeroU32::new(1).unwrap();
    config.integrations[0].rate_limit = RateLimit {
        per_second: one,
        burst: one,
    };
    let gw = Gateway::new(config);
    // The first spends the budget (then fails at the absent broker), the
    // second is refused before reaching it.
    let first = gw
        .send(twilio_request(
            "c-1",
            &pairs(&completed("CA1", "1")),
            TWILIO_TOKEN,
        ))
        .await;
    assert_eq!(first.status, StatusCode::SERVICE_UNAVAILABLE);
    let second = gw
        .send(twilio_request(
            "c-1",
            &pairs(&completed("CA1", "2")),
            TWILIO_TOKEN,
        ))
        .await;
    assert_eq!(
        (second.status, second.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    assert_eq!(second.headers["retry-after"], "1");
    // Unsigned floods do not spend the budget of the real sender.
    let mut forged = twilio_request("c-1", &pairs(&completed("CA1", "3")), "forged");
    forged
        .headers_mut()
        .insert("x-twilio-signature", "AAAA".parse().unwrap());
    assert_eq!(gw.send(forged).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn health_is_up_and_readiness_follows_the_broker() {
    let gw = offline_gateway();
    let health = gw
        .send(Request::get("/healthz").body(Body::empty()).unwrap())
        .await;
    assert_eq!(health.status, StatusCode::OK);
    let ready = gw
        .send(Request::get("/readyz").body(Body::empty()).unwrap())
        .await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.json["status"], "not_ready");
    // The metrics are on the admin listener only, never on the public port.
    let public = gw
        .send(Request::get("/metrics").body(Body::empty()).unwrap())
        .await;
    assert_eq!(public.status, StatusCode::NOT_FOUND);
    let metrics = gw
        .send_admin(Request::get("/metrics").body(Body::empty()).unwrap())
        .await;
    assert_eq!(metrics.status, StatusCode::OK);
    assert_eq!(
        metrics.headers["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let admin_health = gw
        .send_admin(Request::get("/healthz").body(Body::empty()).unwrap())
        .await;
    assert_eq!(admin_health.status, StatusCode::OK);
    let again = gw
        .send(Request::get("/readyz").body(Body::empty()).unwrap())
        .await;
    assert_eq!(again.status, StatusCode::SERVICE_UNAVAILABLE);
}

//! What the gateway refuses, field by field, through the router without a socket: every
//! id, text, phone number and time zone the views or the voice platform could not take
//! whole is 422 `invalid_event` naming the field, as an RFC 9457 problem; an unknown
//! method is 405. The producer points at a broker that does not exist and the produce
//! counter stays at zero, so none of it reached Kafka.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use callstream_gateway::verify::Clock;
use support::*;

/// A launch request with `contact` fields and `reason` spliced in (JSON fragments).
fn launch(contact: &str, extra: &str) -> String {
    format!(
        r#"{{"request_id":"r-1","contact_id":"c-1","campaign_id":"spring"{extra},"contact":{{{contact}}}}}"#
    )
}

fn json_event(extra: &str) -> String {
    format!(r#"{{"call_id":"call_1","contact_id":"c-1","status":"completed"{extra}}}"#)
}

#[tokio::test]
async fn every_input_the_views_cannot_store_is_422_naming_the_field_and_never_reaches_kafka() {
    let gw = offline_gateway();
    let now = gw.clock.now_unix();
    let phone = |number: &str| launch(&format!(r#""phone_number":"{number}""#), "");
    let cases: Vec<(&str, Request<Body>, &str)> = vec![
        // Launch requests: ids, reason, phone number, time zone.
        (
            "NUL in a launch reason",
            launch_request(Some(LAUNCH_TOKEN), &launch("", r#","reason":"a\u0000b""#)),
            "reason",
        ),
        (
            "escape in a launch reason",
            launch_request(Some(LAUNCH_TOKEN), &launch("", r#","reason":"\u001b[2J""#)),
            "reason",
        ),
        (
            "reason of 501 characters",
            launch_request(
                Some(LAUNCH_TOKEN),
                &launch("", &format!(r#","reason":"{}""#, "é".repeat(501))),
            ),
            "reason",
        ),
        (
            "slash in a contact id",
            launch_request(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"r","contact_id":"123/../456","campaign_id":"x"}"#,
            ),
            "contact_id",
        ),
        (
            "dots in a contact id",
            launch_request(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"r","contact_id":"..","campaign_id":"x"}"#,
            ),
            "contact_id",
        ),
        (
            "space in a campaign id",
            launch_request(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"r","contact_id":"c","campaign_id":"spring 2027"}"#,
            ),
            "campaign_id",
        ),
        (
            "question mark in a request id",
            launch_request(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"r?x=1","contact_id":"c","campaign_id":"x"}"#,
            ),
            "request_id",
        ),
        (
            "hash in a campaign id",
            launch_request(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"r","contact_id":"c","campaign_id":"x#y"}"#,
            ),
            "campaign_id",
        ),
        (
            "NUL in a campaign id",
            launch_request(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"r","contact_id":"c","campaign_id":"x\u0000"}"#,
            ),
            "campaign_id",
        ),
        (
            "id of 257 bytes",
            launch_request(
                Some(LAUNCH_TOKEN),
                &format!(
                    r#"{{"request_id":"{}","contact_id":"c","campaign_id":"x"}}"#,
                    "r".repeat(257)
                ),
            ),
            "request_id",
        ),
        (
            "a SIP address as the number",
            launch_request(Some(LAUNCH_TOKEN), &phone("sip:attacker@host")),
            "contact.phone_number",
        ),
        (
            "a client address as the number",
            launch_request(Some(LAUNCH_TOKEN), &phone("client:bob")),
            "contact.phone_number",
        ),
        (
            "an emergency code as the number",
            launch_request(Some(LAUNCH_TOKEN), &phone("911")),
            "contact.phone_number",
        ),
        (
            "a formatted number",
            launch_request(Some(LAUNCH_TOKEN), &phone("(555) 123-4567")),
            "contact.phone_number",
        ),
        (
            "a number without its +",
            launch_request(Some(LAUNCH_TOKEN), &phone("15551234567")),
            "contact.phone_number",
        ),
        (
            "a zone nobody knows",
            launch_request(
                Some(LAUNCH_TOKEN),
                &launch(r#""time_zone":"America/Nowhere""#, ""),
            ),
            "contact.time_zone",
        ),
        // Contact updates: the same rules.
        (
            "NUL in a contact update's reason",
            contact_update(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"u","contact_id":"c","reason":"\u0000","contact":{"do_not_call":true}}"#,
            ),
            "reason",
        ),
        (
            "a SIP address in a contact update",
            contact_update(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"u","contact_id":"c","contact":{"phone_number":"sip:x@y"}}"#,
            ),
            "contact.phone_number",
        ),
        (
            "a slash in a contact update's contact",
            contact_update(
                Some(LAUNCH_TOKEN),
                r#"{"request_id":"u","contact_id":"a/b","contact":{"do_not_call":true}}"#,
            ),
            "contact_id",
        ),
        // Call events: the analysis in the lead's words, ids, zone.
        (
            "NUL in a summary",
            json_request(
                "msg_1",
                now,
                &json_event(r#","analysis":{"summary":"ok\u0000"}"#),
                WHSEC,
            ),
            "analysis.summary",
        ),
        (
            "bell in a callback phrase",
            json_request(
                "msg_2",
                now,
                &json_event(
                    r#","analysis":{"callback_requested":true,"callback_phrase":"at 3\u0007"}"#,
                ),
                WHSEC,
            ),
            "analysis.callback_phrase",
        ),
        (
            "NUL in a request phrase",
            json_request(
                "msg_3",
                now,
                &json_event(r#","analysis":{"do_not_call":true,"request_phrase":"\u0000stop"}"#),
                WHSEC,
            ),
            "analysis.request_phrase",
        ),
        (
            "a summary of 16,001 characters",
            json_request(
                "msg_4",
                now,
                &json_event(&format!(
                    r#","analysis":{{"summary":"{}"}}"#,
                    "s".repeat(16_001)
                )),
                WHSEC,
            ),
            "analysis.summary",
        ),
        (
            "slash in a call id",
            json_request(
                "msg_5",
                now,
                r#"{"call_id":"a/b","contact_id":"c-1","status":"completed"}"#,
                WHSEC,
            ),
            "call_id",
        ),
        (
            "space in a webhook id",
            json_request("msg 6", now, &json_event(""), WHSEC),
            "webhook-id",
        ),
        (
            "a zone nobody knows in a call event",
            json_request(
                "msg_7",
                now,
                &json_event(r#","time_zone":"Mars/Olympus""#),
                WHSEC,
            ),
            "time_zone",
        ),
        (
            "a control character in a provider error",
            json_request("msg_8", now, &json_event(r#","error":"busy\u0001""#), WHSEC),
            "error",
        ),
        (
            "slash in a Twilio contact id",
            twilio_request("a%2Fb", &pairs(&completed("CA1", "1")), TWILIO_TOKEN),
            "contact_id",
        ),
        (
            "dots in a CallSid",
            twilio_request("c-1", &pairs(&completed("CA..1", "1")), TWILIO_TOKEN),
            "CallSid",
        ),
    ];
    for (name, request, field) in cases {
        let reply = gw.send(request).await;
        assert_eq!(
            (reply.status, reply.code(), reply.json["field"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_event",
                Some(field)
            ),
            "{name}: {}",
            reply.json
        );
        assert_eq!(
            reply.headers["content-type"], "application/problem+json",
            "{name}"
        );
        let detail = reply.json["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains(field),
            "{name}: the detail names the field: {detail}"
        );
        assert!(
            !detail.contains('\0') && !detail.contains("attacker"),
            "{name}: nothing echoed"
        );
    }
    let metrics = gw.state.metrics_text();
    let produced: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("callstream_gateway_produce_latency_seconds_count"))
        .filter(|l| !l.ends_with(" 0"))
        .collect();
    assert!(produced.is_empty(), "nothing was produced: {produced:?}");
}

#[tokio::test]
async fn the_longest_fields_of_every_allowed_class_are_accepted_as_far_as_kafka() {
    // The broker is absent, so an accepted request ends 503 `unavailable`: it passed
    // every check of the edge and was handed to the producer.
    let gw = offline_gateway();
    let now = gw.clock.now_unix();
    let id = format!("{}-_.:@+=~90", "A1z".repeat(82));
    assert_eq!(id.len(), callstream_domain::input::MAX_ID_BYTES);
    let reason = format!("tab\tline\r\nünïcödé ✓ 🎉 {}", "x".repeat(470));
    let body = format!(
        r#"{{"request_id":"{id}","contact_id":"{id}","campaign_id":"{id}","reason":{reason:?},"contact":{{"phone_number":"+123456789012345","time_zone":"America/Indiana/Indianapolis"}}}}"#
    );
    let reply = gw.send(launch_request(Some(LAUNCH_TOKEN), &body)).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        "{}",
        reply.json
    );
    let summary = "résumé\n".repeat(2_285);
    let event = json_event(&format!(
        r#","analysis":{{"summary":{summary:?},"callback_requested":true,"callback_phrase":{:?}}}"#,
        "ü".repeat(500)
    ));
    let reply = gw.send(json_request("msg_long", now, &event, WHSEC)).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        "{}",
        reply.json
    );
}

#[tokio::test]
async fn an_unknown_method_is_405_as_a_problem() {
    let gw = offline_gateway();
    for (method, path) in [
        ("GET", "/v1/launch-requests"),
        ("DELETE", "/v1/contact-updates"),
        ("PUT", "/v1/webhooks/twilio/acme-voice"),
        ("POST", "/healthz"),
    ] {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        let reply = gw.send(request).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            "{method} {path}"
        );
        assert_eq!(reply.headers["content-type"], "application/problem+json");
        assert_eq!(reply.json["status"], 405);
    }
}

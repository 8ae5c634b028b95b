//! The gateway against the dev stack's real broker (`cargo xtask up`; run
//! by `cargo xtask test`): what lands on the topics, keyed how, encoded how,
//! and co-partitioned with the Java clients. Each test has its own topics.

mod support;

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use axum::http::StatusCode;
use callstream_gateway::verify::Clock;
use callstream_platform::topics::{TopicKind, CALL_EVENTS, CONTACT_COMMANDS};
use callstream_schemas::{CallEvent, CallOutcome, ContactCommand, ContactCommandKind, Event};
use rdkafka::Message;
use support::*;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_twilio_callback_lands_once_keyed_by_contact_in_avro() {
    let gw = kafka_gateway().await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut request = twilio_request("c-1042", &pairs(&completed("CA77", "4")), TWILIO_TOKEN);
    request
        .headers_mut()
        .insert("traceparent", traceparent.parse().unwrap());
    let reply = gw.send(request).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{:?}", reply.json);
    let event_id = reply.event_id().to_string();

    let records = read_topic(&gw.config.kafka, &gw.topic(CALL_EVENTS), 1, WAIT).await;
    assert_eq!(records.len(), 1, "exactly one record");
    let record = &records[0];
    assert_eq!(record.key(), Some(&b"c-1042"[..]));
    let event = CallEvent::decode(record.payload().unwrap()).unwrap();
    assert_eq!(event.event_id.to_string(), event_id);
    assert_eq!(event.tenant_id, TENANT);
    assert_eq!(event.contact_id, "c-1042");
    assert_eq!(event.call_id, "CA77");
    assert_eq!(event.provider, "twilio");
    assert_eq!(event.provider_status, "completed");
    assert_eq!(
        event.outcome,
        CallOutcome::Unknown,
        "the gateway does not normalise"
    );
    assert_eq!(event.sequence_number, Some(4));
    assert_eq!(event.duration_seconds, Some(31));
    assert_eq!(
        event.launch_id.map(|l| l.to_string()).as_deref(),
        Some("0b6e3f2a-5c4d-4e8f-9a1b-2c3d4e5f6a7b")
    );
    assert_eq!(
        header(record, "event-type").as_deref(),
        Some("io.callstream.events.CallEvent")
    );
    assert_eq!(
        header(record, "schema-fingerprint"),
        Some(CallEvent::fingerprint().to_string())
    );
    assert_eq!(header(record, "event-id"), Some(event_id.clone()));
    assert_eq!(
        header(record, "correlation-id"),
        Some(event_id),
        "a webhook starts its chain"
    );
    let trace = header(record, "traceparent").unwrap();
    assert!(
        trace.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
        "{trace}"
    );
    // Phone numbers are not carried into the event.
    let payload = String::from_utf8_lossy(record.payload().unwrap()).into_owned();
    assert!(!payload.contains("5551230000") && !payload.contains("5559870000"));
}

#[tokio::test]
async fn the_same_webhook_twice_carries_the_same_event_id() {
    let gw = kafka_gateway().await;
    let now = gw.clock.now_unix();
    let body = r#"{"call_id":"call_9","contact_id":"c-9","status":"no-answer",
        "analysis":{"callback_requested":true,"callback_phrase":"tomorrow at 10"}}"#;
    let first = gw.send(json_request("msg_dup", now, body, WHSEC)).await;
    // The platform redelivers, re-signed later, same webhook-id.
    let second = gw
        .send(json_request("msg_dup", now + 30, body, WHSEC))
        .await;
    let twilio = || twilio_request("c-9", &pairs(&completed("CA9", "2")), TWILIO_TOKEN);
    let third = gw.send(twilio()).await;
    let fourth = gw.send(twilio()).await;
    for reply in [&first, &second, &third, &fourth] {
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{:?}", reply.json);
    }
    assert_eq!(first.event_id(), second.event_id());
    assert_eq!(third.event_id(), fourth.event_id());
    assert_ne!(first.event_id(), third.event_id());

    let records = read_topic(&gw.config.kafka, &gw.topic(CALL_EVENTS), 4, WAIT).await;
    let events: Vec<CallEvent> = records
        .iter()
        .map(|r| CallEvent::decode(r.payload().unwrap()).unwrap())
        .collect();
    assert_eq!(
        events.len(),
        4,
        "each 202 is one record; downstream dedupes by id"
    );
    let json_events: Vec<&CallEvent> = events.iter().filter(|e| e.provider == "json").collect();
    assert_eq!(json_events.len(), 2);
    assert!(json_events
        .iter()
        .all(|e| e.event_id.to_string() == first.event_id()));
    let analysis = json_events[0].analysis.as_ref().unwrap();
    assert!(analysis.callback_requested);
    assert_eq!(analysis.callback_phrase.as_deref(), Some("tomorrow at 10"));
}

#[tokio::test]
async fn a_launch_request_becomes_a_contact_command() {
    let gw = kafka_gateway().await;
    let body = r#"{"request_id":"crm-551","contact_id":"c-5","campaign_id":"spring",
        "contact":{"phone_number":"+15550001111","time_zone":"America/Denver"}}"#;
    let correlation = "6f1c2a4e-8b9d-4c3e-a1f2-0b1c2d3e4f50";
    let mut request = launch_request(Some(LAUNCH_TOKEN), body);
    request
        .headers_mut()
        .insert("x-correlation-id", correlation.parse().unwrap());
    let reply = gw.send(request).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{:?}", reply.json);
    let command_id = reply.json["command_id"].as_str().unwrap().to_string();
    let again = gw.send(launch_request(Some(LAUNCH_TOKEN), body)).await;
    assert_eq!(again.json["command_id"].as_str(), Some(command_id.as_str()));

    let records = read_topic(&gw.config.kafka, &gw.topic(CONTACT_COMMANDS), 2, WAIT).await;
    assert_eq!(records.len(), 2);
    let record = records
        .iter()
        .find(|r| header(r, "correlation-id").as_deref() == Some(correlation))
        .expect("the caller's correlation id is on the record");
    assert_eq!(record.key(), Some(&b"c-5"[..]));
    let command = ContactCommand::decode(record.payload().unwrap()).unwrap();
    assert_eq!(command.kind, ContactCommandKind::LaunchRequest);
    assert_eq!(command.event_id.to_string(), command_id);
    assert_eq!(command.tenant_id, TENANT);
    assert_eq!(command.request_id.as_deref(), Some("crm-551"));
    assert_eq!(
        command.correlation_id.map(|c| c.to_string()).as_deref(),
        Some(correlation)
    );
    let contact = command.contact.unwrap();
    assert_eq!(contact.time_zone.as_deref(), Some("America/Denver"));
    assert_eq!(
        header(record, "event-type").as_deref(),
        Some("io.callstream.events.ContactCommand")
    );
}

/// Issue 14, hole 2: the CRM can say "stop" without a launch request.
#[tokio::test]
async fn a_contact_update_becomes_a_contact_command() {
    let gw = kafka_gateway().await;
    let body = r#"{"request_id":"crm-552","contact_id":"c-5","reason":"unsubscribed",
        "contact":{"do_not_call":true}}"#;
    let reply = gw.send(contact_update(Some(LAUNCH_TOKEN), body)).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{:?}", reply.json);
    let command_id = reply.json["command_id"].as_str().unwrap().to_string();
    let refused = gw.send(contact_update(None, body)).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let empty = r#"{"request_id":"crm-553","contact_id":"c-5","contact":{}}"#;
    let refused = gw.send(contact_update(Some(LAUNCH_TOKEN), empty)).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        refused.json
    );

    let records = read_topic(&gw.config.kafka, &gw.topic(CONTACT_COMMANDS), 1, WAIT).await;
    assert_eq!(records.len(), 1, "only the accepted update is on the topic");
    assert_eq!(records[0].key(), Some(&b"c-5"[..]));
    let command = ContactCommand::decode(records[0].payload().unwrap()).unwrap();
    assert_eq!(command.kind, ContactCommandKind::ContactUpdate);
    assert_eq!(command.event_id.to_string(), command_id);
    assert_eq!(command.tenant_id, TENANT);
    assert_eq!(command.campaign_id, None);
    assert_eq!(command.contact.unwrap().do_not_call, Some(true));
    assert_eq!(command.reason.as_deref(), Some("unsubscribed"));
}

#[tokio::test]
async fn readiness_sees_the_broker_and_the_topics() {
    let gw = kafka_gateway().await;
    let reply = gw
        .send(
            axum::http::Request::get("/readyz")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.json);
    // Topics that do not exist make the gateway not ready.
    let mut config = gw.config.clone();
    config.topics = callstream_platform::Topics::with_prefix(format!(
        "gw-absent-{}-",
        uuid::Uuid::new_v4().simple()
    ));
    let absent = Gateway::new(config);
    let reply = absent
        .send(
            axum::http::Request::get("/readyz")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        reply.json
    );
}

/// Java's console producer and the gateway put the same key in the same
/// partition: murmur2, as Kafka's default partitioner does.
#[tokio::test]
async fn the_java_console_producer_co_partitions_with_the_gateway() {
    let gw = kafka_gateway().await;
    let probe = gw.config.topics.spec("java-probe", TopicKind::Events);
    callstream_platform::admin::ensure_topics(&gw.config.kafka, std::slice::from_ref(&probe))
        .await
        .unwrap();
    let contacts: Vec<String> = (0..24).map(|i| format!("contact-{i}")).collect();
    for (i, contact) in contacts.iter().enumerate() {
        let reply = gw
            .send(twilio_request(
                contact,
                &pairs(&completed(&format!("CA{i}"), "1")),
                TWILIO_TOKEN,
            ))
            .await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{:?}", reply.json);
    }

    let libs = kafka_libs();
    let mut java = Command::new("java")
        .arg("-cp")
        .arg(format!("{}/*", libs.display()))
        .args([
            "org.apache.kafka.tools.ConsoleProducer",
            "--bootstrap-server",
        ])
        .arg(&gw.config.kafka.bootstrap_servers)
        .args(["--topic", &probe.name])
        .args([
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("java with the Kafka jars in {}: {e}", libs.display()));
    {
        let mut stdin = java.stdin.take().unwrap();
        for contact in &contacts {
            writeln!(stdin, "{contact}:from-java").unwrap();
        }
    }
    assert!(java.wait().unwrap().success(), "console producer failed");

    let partitions = |records: Vec<rdkafka::message::OwnedMessage>| -> HashMap<String, i32> {
        records
            .iter()
            .map(|r| {
                (
                    String::from_utf8(r.key().unwrap().to_vec()).unwrap(),
                    r.partition(),
                )
            })
            .collect()
    };
    let ours = partitions(
        read_topic(
            &gw.config.kafka,
            &gw.topic(CALL_EVENTS),
            contacts.len(),
            WAIT,
        )
        .await,
    );
    let javas = partitions(read_topic(&gw.config.kafka, &probe.name, contacts.len(), WAIT).await);
    assert_eq!(ours.len(), contacts.len());
    assert_eq!(javas.len(), contacts.len());
    let spread: std::collections::HashSet<i32> = ours.values().copied().collect();
    assert!(
        spread.len() > 3,
        "24 keys over 12 partitions use several: {spread:?}"
    );
    for contact in &contacts {
        assert_eq!(ours[contact], javas[contact], "{contact}");
    }
}

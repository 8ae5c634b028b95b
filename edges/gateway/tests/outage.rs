//! Broker outage: while the broker is down the gateway answers 503 with
//! `Retry-After` (never 202); once it is back the gateway accepts again,
//! without a restart; and every event answered 202 is on the topic.
//!
//! It stops and restarts the shared dev broker, which would break every
//! other test using it, so it is `#[ignore]`d. Run it alone, when nothing
//! else uses the stack:
//!
//! ```text
//! cargo xtask up
//! cargo test -p callstream-gateway --test outage -- --ignored --nocapture
//! ```
//!
//! It runs `cargo xtask down` and `cargo xtask up --no-topics` itself.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use callstream_platform::topics::CALL_EVENTS;
use callstream_schemas::{CallEvent, Event};
use rdkafka::Message;
use support::*;

fn xtask(args: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["xtask"])
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .status()
        .unwrap();
    assert!(status.success(), "cargo xtask {args:?}");
}

#[tokio::test]
#[ignore = "stops the shared broker; run alone with --ignored (see the module docs)"]
async fn the_gateway_refuses_while_the_broker_is_down_and_recovers_without_restart() {
    let mut config = kafka_gateway().await.config;
    config.produce_timeout = Duration::from_secs(2);
    config.readiness_cache = Duration::from_millis(100);
    let gw = Gateway::new(config);
    let mut accepted = HashSet::new();
    let counter = std::sync::atomic::AtomicU32::new(0);
    let post = || {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let contact = format!("c-{n}");
        twilio_request(
            &contact,
            &pairs(&completed(&format!("CA{n}"), "1")),
            TWILIO_TOKEN,
        )
    };

    for _ in 0..5 {
        let reply = gw.send(post()).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED);
        accepted.insert(reply.event_id().to_string());
    }

    xtask(&["down"]);
    let mut refused = 0;
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let reply = gw.send(post()).await;
        assert_ne!(
            reply.status,
            StatusCode::ACCEPTED,
            "no 202 while the broker is down"
        );
        assert_eq!(
            reply.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{:?}",
            reply.json
        );
        assert!(reply.headers.contains_key("retry-after"));
        refused += 1;
    }
    let ready = gw
        .send(
            axum::http::Request::get("/readyz")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);

    xtask(&["up", "--no-topics"]);
    let back_by = Instant::now() + Duration::from_secs(90);
    let mut recovered = false;
    while Instant::now() < back_by {
        let reply = gw.send(post()).await;
        if reply.status == StatusCode::ACCEPTED {
            accepted.insert(reply.event_id().to_string());
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        recovered,
        "the gateway accepts again once the broker is back"
    );
    // A broker with many partitions brings them back one by one (a dev broker with
    // thousands took a minute): a webhook for a partition not back yet is refused (503,
    // the platform retries it) until it is. Each must be accepted by the deadline.
    for _ in 0..5 {
        loop {
            let reply = gw.send(post()).await;
            if reply.status == StatusCode::ACCEPTED {
                accepted.insert(reply.event_id().to_string());
                break;
            }
            assert_eq!(
                reply.status,
                StatusCode::SERVICE_UNAVAILABLE,
                "{:?}",
                reply.json
            );
            assert!(
                Instant::now() < back_by,
                "the gateway accepts every webhook again once the broker is back"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    let records = read_topic(
        &gw.config.kafka,
        &gw.topic(CALL_EVENTS),
        accepted.len(),
        Duration::from_secs(30),
    )
    .await;
    let landed: HashSet<String> = records
        .iter()
        .map(|r| {
            CallEvent::decode(r.payload().unwrap())
                .unwrap()
                .event_id
                .to_string()
        })
        .collect();
    let missing: Vec<_> = accepted.difference(&landed).collect();
    assert!(
        missing.is_empty(),
        "every 202 is on the topic; missing {missing:?}"
    );
    println!(
        "accepted {}, refused {refused} while down, all on the topic",
        accepted.len()
    );
}

//! The gateway as a server on a real socket and the real broker: graceful
//! shutdown lets an in-flight request finish (and its record land) before
//! `serve` returns, and stops accepting new connections.

mod support;

use std::time::Duration;

use callstream_gateway::{serve, testkit};
use callstream_platform::topics::CALL_EVENTS;
use rdkafka::Message;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::test]
async fn shutdown_finishes_in_flight_requests_then_stops() {
    let gw = kafka_gateway().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let config = gw.config.clone();
    let server = tokio::spawn(async move {
        serve(listener, gw.state.clone(), &config, async {
            let _ = stopped.await;
        })
        .await
    });

    let path = format!("/v1/webhooks/twilio/{TWILIO_ID}?contact_id=c-77");
    let body = testkit::form(&pairs(&completed("CA-shutdown", "1")));
    let signature = testkit::twilio_signature(TWILIO_TOKEN, &format!("{BASE_URL}{path}"), &body);
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/x-www-form-urlencoded\r\n\
         x-twilio-signature: {signature}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let mut client = TcpStream::connect(addr).await.unwrap();
    client.write_all(head.as_bytes()).await.unwrap();
    client.write_all(&body[..10]).await.unwrap();
    // Half a body is in: the request is in flight when shutdown begins.
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    client.write_all(&body[10..]).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut response))
        .await
        .unwrap()
        .unwrap();
    let response = String::from_utf8_lossy(&response);
    assert!(response.starts_with("HTTP/1.1 202"), "{response}");

    let result = tokio::time::timeout(Duration::from_secs(15), server)
        .await
        .unwrap();
    result.unwrap().unwrap();
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );

    let records = read_topic(
        &gw.config.kafka,
        &gw.config.topics.name(CALL_EVENTS),
        1,
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].key(), Some(&b"c-77"[..]));
}

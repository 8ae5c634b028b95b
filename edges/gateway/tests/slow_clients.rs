//! The gateway on a real socket (its broker unreachable: nothing here gets as far as
//! Kafka): slow clients are bounded by the limits in its config. A webhook whose body
//! dribbles in is answered 408 within `request_timeout`; a head that dribbles in is cut
//! off and the connection cap holds, as `serve_limits` says. Every wait is bounded so a
//! broken server fails instead of hanging.
// The helpers below are test code too: a panic there is a failed test.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use callstream_e2e::slow_client::{dribble, read_answer, BOUND};
use callstream_gateway::{serve, testkit, GatewayConfig};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

struct Running {
    addr: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), callstream_gateway::StartError>>,
}

async fn start(tune: impl FnOnce(&mut GatewayConfig)) -> Running {
    let gw = offline_gateway();
    let mut config = gw.config.clone();
    tune(&mut config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        serve(listener, gw.state.clone(), &config, async {
            let _ = stopped.await;
        })
        .await
    });
    Running { addr, stop, server }
}

impl Running {
    async fn stop(self) {
        let _ = self.stop.send(());
        timeout(BOUND, self.server).await.unwrap().unwrap().unwrap();
    }
}

#[tokio::test]
async fn a_webhook_whose_body_dribbles_in_is_answered_408_within_the_request_timeout() {
    let gw = start(|c| c.request_timeout = Duration::from_millis(400)).await;
    let path = format!("/v1/webhooks/twilio/{TWILIO_ID}?contact_id=c-1");
    let body = testkit::form(&pairs(&completed("CA-slow", "1")));
    let signature = testkit::twilio_signature(TWILIO_TOKEN, &format!("{BASE_URL}{path}"), &body);
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-www-form-urlencoded\r\n\
         x-twilio-signature: {signature}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let stream = TcpStream::connect(gw.addr).await.unwrap();
    let answer =
        String::from_utf8_lossy(&dribble(stream, head.as_bytes(), &body).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains(r#""code":"request_timeout""#),
        "a problem: {answer}"
    );
    gw.stop().await;
}

#[tokio::test]
async fn a_client_dribbling_its_headers_is_cut_off_by_the_configured_header_timeout() {
    let gw = start(|c| c.serve_limits.header_read_timeout = Duration::from_millis(300)).await;
    let stream = TcpStream::connect(gw.addr).await.unwrap();
    let answer = dribble(stream, b"", b"GET /healthz HTTP/1.1\r\nx-slow: ").await;
    assert!(answer.is_empty(), "{:?}", String::from_utf8_lossy(&answer));
    gw.stop().await;
}

#[tokio::test]
async fn over_the_configured_connection_cap_a_client_waits_until_one_closes() {
    let gw = start(|c| c.serve_limits.max_connections = 1).await;
    let get = b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n";
    let mut held = TcpStream::connect(gw.addr).await.unwrap();
    held.write_all(get).await.unwrap();
    let first = timeout(BOUND, read_answer(&mut held)).await.unwrap();
    assert!(first.starts_with(b"HTTP/1.1 200"), "{first:?}");

    let mut second = TcpStream::connect(gw.addr).await.unwrap();
    second.write_all(get).await.unwrap();
    let mut byte = [0u8; 1];
    let early = timeout(Duration::from_millis(500), second.read(&mut byte)).await;
    assert!(early.is_err(), "served over the cap: {early:?}");
    drop(held);
    let answer = timeout(BOUND, read_answer(&mut second)).await.unwrap();
    let answer = format!("{}{}", byte[0] as char, String::from_utf8_lossy(&answer));
    assert!(answer.contains("HTTP/1.1 200"), "{answer}");
    drop(second);
    gw.stop().await;
}

//! The operator API on a real socket, with a fresh Postgres database and the broker (for
//! its state): slow clients are bounded by the limits in its config. A body that dribbles
//! in is answered 408 within `request_timeout`; a head that dribbles in is cut off, as
//! `serve_limits` says. Every wait is bounded so a broken server fails instead of hanging.
// The helpers below are test code too: a panic there is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use anyhow::Result;
use callstream_e2e::slow_client::{dribble, BOUND};
use callstream_e2e::views::Views;
use callstream_operator_api::{create_token, serve, state, OperatorApiConfig, Role};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

struct Running {
    addr: std::net::SocketAddr,
    token: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), callstream_operator_api::StartError>>,
    _views: Views,
}

async fn start() -> Result<Running> {
    let views = Views::start("callstream_test_slow", "slow").await?;
    let mut config = OperatorApiConfig::new(
        views.db.url.clone(),
        views.kafka.clone(),
        views.topics.clone(),
    );
    config.request_timeout = Duration::from_millis(400);
    config.serve_limits.header_read_timeout = Duration::from_millis(300);
    let token = create_token(&views.db.pool, "acme", Role::Admin, "slow-clients")
        .await?
        .token;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, state(&config)?, async {
        let _ = stopped.await;
    }));
    Ok(Running {
        addr,
        token,
        stop,
        server,
        _views: views,
    })
}

impl Running {
    async fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        timeout(BOUND, self.server).await???;
        Ok(())
    }
}

#[tokio::test]
async fn an_action_whose_body_dribbles_in_is_answered_408_within_the_request_timeout() -> Result<()>
{
    let api = start().await?;
    let head = format!(
        "POST /v1/control/system-pause HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: 1000\r\n\r\n",
        api.token
    );
    let stream = TcpStream::connect(api.addr).await?;
    let answer = dribble(stream, head.as_bytes(), b"{\"paused\": true").await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains(r#""code":"request_timeout""#),
        "a problem: {answer}"
    );
    api.stop().await
}

#[tokio::test]
async fn a_client_dribbling_its_headers_is_cut_off_by_the_configured_header_timeout() -> Result<()>
{
    let api = start().await?;
    let stream = TcpStream::connect(api.addr).await?;
    let answer = dribble(stream, b"", b"GET /healthz HTTP/1.1\r\nx-slow: ").await;
    assert!(answer.is_empty(), "{:?}", String::from_utf8_lossy(&answer));
    api.stop().await
}

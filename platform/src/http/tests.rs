//! Socket tests of `serve`: real TCP on 127.0.0.1, short configured limits, every wait
//! bounded by [`BOUND`] so a broken server fails a test instead of hanging it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::*;

/// Upper bound of any wait; only a broken server reaches it.
const BOUND: Duration = Duration::from_secs(10);

const GET: &[u8] = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";

/// A server counting the requests it answered, and how to stop it.
struct Running {
    addr: SocketAddr,
    served: Arc<AtomicUsize>,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), ServeError>>,
}

async fn start(limits: ServeLimits) -> Running {
    let served = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&served);
    let router = Router::new().route(
        "/",
        axum::routing::get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async { "up" }
        }),
    );
    let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(
        listener,
        router,
        limits,
        async {
            let _ = stopped.await;
        },
        |_| {},
    ));
    Running {
        addr,
        served,
        stop,
        server,
    }
}

impl Running {
    async fn stop(self) {
        self.stop.send(()).unwrap();
        timeout(BOUND, self.server).await.unwrap().unwrap().unwrap();
    }
}

fn limits(header_read_ms: u64, idle_ms: u64, max_connections: usize) -> ServeLimits {
    ServeLimits {
        header_read_timeout: Duration::from_millis(header_read_ms),
        idle_timeout: Duration::from_millis(idle_ms),
        max_connections,
    }
}

/// Reads one answer of the test router ("up", two bytes of body) off a kept-alive stream.
async fn read_answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while !answer.ends_with(b"\r\n\r\nup") {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before the answer: {answer:?}");
        answer.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(answer).unwrap()
}

/// What the server sends until it closes the connection (EOF or reset).
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return received,
            Ok(n) => received.extend_from_slice(&chunk[..n]),
        }
    }
}

#[tokio::test]
async fn serves_until_shutdown_and_reports_the_bound_address() {
    let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let bound = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (told, heard) = tokio::sync::oneshot::channel::<SocketAddr>();
    let router = Router::new().route("/", axum::routing::get(|| async { "up" }));
    let server = tokio::spawn(serve(
        listener,
        router,
        ServeLimits::default(),
        async {
            let _ = stopped.await;
        },
        move |addr| {
            let _ = told.send(addr);
        },
    ));
    assert_eq!(heard.await.unwrap(), bound);
    let mut stream = TcpStream::connect(bound).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("up"), "{answer}");
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_taken_address_is_a_bind_error_naming_it() {
    let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = taken.local_addr().unwrap();
    match bind(addr).await {
        Err(ServeError::Bind { addr: named, .. }) => assert_eq!(named, addr),
        other => panic!("expected a bind error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_client_dribbling_its_headers_is_cut_off_unanswered() {
    let server = start(limits(300, 30_000, 8)).await;
    let stream = TcpStream::connect(server.addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let closed = tokio::spawn(async move {
        let mut received = Vec::new();
        let _ = read.read_to_end(&mut received).await;
        received
    });
    // One byte every 50 ms of a head that never ends, until the server closes.
    let head = b"GET / HTTP/1.1\r\nhost: x\r\nx-slow: ".iter().copied();
    let mut bytes = head.chain(std::iter::repeat(b'a'));
    let dribble = async {
        while !closed.is_finished() {
            let byte = bytes.next().unwrap_or(b'a');
            if write.write_all(&[byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    timeout(BOUND, dribble)
        .await
        .expect("the server never closed the dribbling connection");
    let received = timeout(BOUND, closed).await.unwrap().unwrap();
    assert!(
        received.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&received)
    );
    assert_eq!(server.served.load(Ordering::SeqCst), 0);
    server.stop().await;
}

#[tokio::test]
async fn the_header_timeout_counts_from_the_first_byte_not_from_the_connect() {
    // A header timeout long enough that a loaded machine's stall between reading the
    // request's bytes and parsing them cannot reach it.
    let server = start(limits(1_000, 30_000, 8)).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    // Idle for longer than the header timeout, but within the idle timeout.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    stream.write_all(GET).await.unwrap();
    let answer = timeout(BOUND, read_answer(&mut stream)).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn a_kept_alive_connection_left_idle_is_closed_by_the_server() {
    // Idle long enough that the client's own pause between its two requests, on a
    // loaded machine, is not taken for idleness.
    let server = start(limits(10_000, 2_000, 8)).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    for _ in 0..2 {
        stream.write_all(GET).await.unwrap();
        let answer = timeout(BOUND, read_answer(&mut stream)).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let after = timeout(BOUND, read_until_closed(&mut stream))
        .await
        .expect("the idle connection was never closed");
    assert!(after.is_empty(), "{:?}", String::from_utf8_lossy(&after));
    assert_eq!(server.served.load(Ordering::SeqCst), 2);
    server.stop().await;
}

#[tokio::test]
async fn over_the_connection_cap_a_client_waits_until_a_connection_closes() {
    let server = start(limits(10_000, 30_000, 2)).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        stream.write_all(GET).await.unwrap();
        timeout(BOUND, read_answer(&mut stream)).await.unwrap();
        held.push(stream);
    }
    // The kernel completes the handshake; the server does not accept it yet.
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    third.write_all(GET).await.unwrap();
    let mut byte = [0u8; 1];
    let early = timeout(Duration::from_millis(500), third.read(&mut byte)).await;
    assert!(early.is_err(), "served over the cap: {early:?}");
    assert_eq!(server.served.load(Ordering::SeqCst), 2);

    drop(held.pop());
    let answer = timeout(BOUND, read_answer(&mut third)).await.unwrap();
    let answer = format!("{}{answer}", byte[0] as char);
    assert!(answer.contains("HTTP/1.1 200"), "{answer}");
    assert_eq!(server.served.load(Ordering::SeqCst), 3);
    drop(held);
    server.stop().await;
}

#[tokio::test]
async fn shutdown_lets_a_request_in_flight_finish_and_closes_idle_connections() {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(tokio::sync::Mutex::new(Some(released)));
    let (entered_tx, entered) = tokio::sync::oneshot::channel::<()>();
    let entered_tx = Arc::new(std::sync::Mutex::new(Some(entered_tx)));
    let router = Router::new().route(
        "/slow",
        axum::routing::get(move || {
            let released = Arc::clone(&released);
            let entered_tx = Arc::clone(&entered_tx);
            async move {
                if let Some(tx) = entered_tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
                if let Some(rx) = released.lock().await.take() {
                    let _ = rx.await;
                }
                "done"
            }
        }),
    );
    let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(
        listener,
        router,
        limits(10_000, 30_000, 8),
        async {
            let _ = stopped.await;
        },
        |_| {},
    ));
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    timeout(BOUND, entered).await.unwrap().unwrap();
    stop.send(()).unwrap();
    let idle_after = timeout(BOUND, read_until_closed(&mut idle)).await.unwrap();
    assert!(idle_after.is_empty());
    assert!(!server.is_finished(), "stopped before answering");
    release.send(()).unwrap();
    let answer = timeout(BOUND, read_until_closed(&mut busy)).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("done"), "{answer}");
    timeout(BOUND, server).await.unwrap().unwrap().unwrap();
}

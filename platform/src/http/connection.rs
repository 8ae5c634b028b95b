//! One HTTP/1.1 connection, with a watchdog that closes it when the client is too slow.
//!
//! hyper's own `header_read_timeout` starts when the server begins waiting for a head, so
//! it cannot tell an idle kept-alive connection (allowed `idle_timeout`) from one whose
//! head trickles in (allowed `header_read_timeout` from its first byte). The watchdog can:
//! the socket reports the first byte after each answer, the service reports requests
//! starting and their answers finishing, and the deadline follows from those. hyper's
//! timer stays on as a backstop at the sum of the two.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use axum::Router;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tower::Service;

use super::ServeLimits;

/// Serves one connection until it ends, the watchdog closes it, or (after `stop` turns
/// true) its last request was answered.
pub(super) async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: ServeLimits,
    mut stop: watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new(limits));
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: Arc::clone(&activity),
    });
    let service = {
        let activity = Arc::clone(&activity);
        hyper::service::service_fn(move |request: Request<Incoming>| {
            let guard = activity.request_started();
            let mut router = router.clone();
            async move {
                let mut request = request.map(Body::new);
                // The peer address, for services that limit per address (`ConnectInfo`).
                request.extensions_mut().insert(ConnectInfo(peer));
                let response: Response = router.call(request).await?;
                // The request counts until its answer's body is written (or dropped).
                Ok::<_, Infallible>(response.map(|body| {
                    Body::new(body.map_frame(move |frame| {
                        let _held = &guard;
                        frame
                    }))
                }))
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.idle_timeout + limits.header_read_timeout);
    let conn = builder.serve_connection(io, service).with_upgrades();
    let mut conn = std::pin::pin!(conn);
    let watchdog = watchdog(&activity);
    let mut watchdog = std::pin::pin!(watchdog);
    let mut stopping = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                }
                return;
            }
            () = &mut watchdog => {
                // Dropping the connection closes the socket; nothing was being answered.
                tracing::debug!("closing a connection that sent no request in time");
                return;
            }
            told = async { stop.wait_for(|stop| *stop).await.is_ok() }, if !stopping => {
                stopping = true;
                // Not told (the server is gone) also means nothing more to wait for.
                if told {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// Resolves when the connection has waited longer than it may for a request.
///
/// It looks at the connection at its deadline, and at least every quarter of the shorter
/// timeout, rather than being woken by every request: a busy connection then pays one
/// uncontended lock per read and per request, not a task wake-up and a timer (that cost
/// 18% of the requests per second of a trivial route). A deadline that comes closer while
/// it sleeps (a first byte after a long idle) is seen at most that quarter late.
async fn watchdog(activity: &Activity) {
    let limits = activity.limits;
    let tick = (limits.header_read_timeout.min(limits.idle_timeout) / 4).max(MIN_TICK);
    loop {
        let now = Instant::now();
        let wake = match activity.deadline() {
            Some(deadline) if deadline <= now => return,
            Some(deadline) => deadline.min(now + tick),
            None => now + tick,
        };
        tokio::time::sleep_until(wake).await;
    }
}

/// The watchdog's shortest look interval, however short the timeouts.
const MIN_TICK: Duration = Duration::from_millis(1);

/// What the watchdog needs to know of a connection.
struct Activity {
    limits: ServeLimits,
    state: Mutex<State>,
}

struct State {
    /// Requests whose answer is not yet written.
    in_flight: usize,
    /// Since when no request is in flight.
    waiting_since: Instant,
    /// When the first byte after `waiting_since` arrived.
    first_byte: Option<Instant>,
}

impl Activity {
    fn new(limits: ServeLimits) -> Self {
        Self {
            limits,
            state: Mutex::new(State {
                in_flight: 0,
                waiting_since: Instant::now(),
                first_byte: None,
            }),
        }
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        // The state is plain numbers, valid whatever a panicking holder left.
        change(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// When the connection must be closed, if nothing changes; `None` while a request is
    /// being served (the service's request timeout bounds it).
    fn deadline(&self) -> Option<Instant> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.in_flight > 0 {
            return None;
        }
        Some(match state.first_byte {
            Some(first) => first + self.limits.header_read_timeout,
            None => state.waiting_since + self.limits.idle_timeout,
        })
    }

    fn bytes_read(&self) {
        self.update(|state| {
            if state.in_flight == 0 && state.first_byte.is_none() {
                state.first_byte = Some(Instant::now());
            }
        });
    }

    fn request_started(self: &Arc<Self>) -> RequestGuard {
        self.update(|state| {
            state.in_flight += 1;
            state.first_byte = None;
        });
        RequestGuard(Arc::clone(self))
    }
}

/// Marks a request answered when dropped.
struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.update(|state| {
            state.in_flight = state.in_flight.saturating_sub(1);
            if state.in_flight == 0 {
                state.waiting_since = Instant::now();
                state.first_byte = None;
            }
        });
    }
}

/// The socket, telling `activity` when bytes arrive.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_read();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

//! Serving HTTP: bind an address (or take a listener already bound, as tests bind port 0),
//! serve a router until a shutdown future resolves, then stop accepting and let in-flight
//! requests finish. The gateway, the operator API and both simulators serve through here;
//! what a service does around it (its router, its layers, flushing a producer once serving
//! has stopped, its log lines) stays with the service.
//!
//! Guarantees:
//! - `serve` returns only after the shutdown future resolved and every request already
//!   accepted was answered; connections that are idle at shutdown are closed at once.
//! - A slow client cannot hold a connection for ever ([`ServeLimits`]): a request head must
//!   arrive within `header_read_timeout` of its first byte, and a kept-alive connection
//!   waiting for its next request is closed after `idle_timeout`. Either way the server
//!   closes the socket without an answer and no request is served. The watchdog looks at a
//!   connection at least every quarter of the shorter timeout, so a head deadline that
//!   starts while it sleeps is enforced at most that much late (10 s is 10 to 12.5 s).
//! - At most `max_connections` connections are open at once. The ones over the cap are not
//!   refused: they are not accepted yet, so they wait in the listen backlog (the client sees
//!   a slow connect, not an error) and are served as soon as an open connection closes.
//!
//! The whole-request bound (body included) is the service's `TimeoutLayer`, which answers
//! 408: it is per route and per service, so it stays with the router.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

mod connection;

#[cfg(test)]
mod tests;

/// Why a service could not bind or keep serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("binding {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("serving HTTP: {0}")]
    Serve(#[source] std::io::Error),
}

/// What one client may hold of a server. Each service reads these from its own settings;
/// [`Default`] is what a public-facing service should run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// Longest a request head may take from its first byte to its blank line; then the
    /// connection is closed (default 10 s).
    pub header_read_timeout: Duration,
    /// Longest a connection may sit with no request: after it is accepted and after each
    /// answer on a kept-alive connection, until the next request's first byte (default 60 s).
    pub idle_timeout: Duration,
    /// Most connections open at once; more wait in the listen backlog (default 1024).
    pub max_connections: usize,
}

impl ServeLimits {
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
    pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// A service's admin listener (`/metrics`, `/healthz`, `/readyz`), served beside it on a
/// task of its own: [`AdminServer::stop`] ends it once the service has stopped, so the last
/// scrape sees the end. How it ended is logged: it never decides the service's outcome.
pub struct AdminServer<E> {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), E>>,
}

impl<E: std::fmt::Display + Send + 'static> AdminServer<E> {
    /// Spawns `serve`, given the future that resolves when [`Self::stop`] is called.
    pub fn spawn<F>(
        serve: impl FnOnce(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>) -> F,
    ) -> Self
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
    {
        let (stop, stops) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serve(Box::pin(async {
            let _ = stops.await;
        })));
        Self { stop, task }
    }

    /// Stops the admin listener and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(Err(error)) => tracing::warn!(%error, "admin listener failed"),
            Err(error) => tracing::warn!(%error, "admin listener panicked"),
            Ok(Ok(())) => {}
        }
    }
}

/// Binds `addr` for `serve`.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Serves `router` on `listener` within `limits` until `shutdown` resolves, then stops
/// accepting and waits for the requests in flight. `listening` is told the bound address
/// once, before the first connection is accepted (the service logs it, under its own name).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
    listening: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let addr = listener.local_addr().map_err(ServeError::Serve)?;
    listening(addr);
    // A zero cap would never accept; one is the least that still serves.
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // Connections watch `stop` to begin their graceful shutdown, and each holds a
    // `done` receiver: `done_tx.closed()` resolves when the last connection ended.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, done_rx) = watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // The permit is taken before `accept`: over the cap, connections stay in the
        // kernel's backlog instead of being accepted and held unanswered.
        let permit = tokio::select! {
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_closed) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Per-connection failures (reset before accept, out of descriptors)
                    // must not stop the server; pausing lets descriptors free up.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let router = router.clone();
        let stop = stop_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            connection::serve_connection(stream, peer, router, limits, stop).await;
            drop(permit);
            drop(done);
        });
    }
    drop(listener);
    drop(done_rx);
    // Send fails only when no connection is open, which is fine.
    let _ = stop_tx.send(true);
    done_tx.closed().await;
    Ok(())
}

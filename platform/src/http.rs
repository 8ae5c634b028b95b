//! Serving HTTP: bind an address (or take a listener already bound, as tests bind port 0),
//! serve a router until a shutdown future resolves, then stop accepting and let in-flight
//! requests finish. The gateway, the operator API and both simulators serve through here;
//! what a service does around it (its router, its layers, flushing a producer once serving
//! has stopped, its log lines) stays with the service.
//!
//! Guarantees: `serve` returns only after the shutdown future resolved and every request
//! already accepted was answered (axum's graceful shutdown), or on an I/O error of the
//! listener.

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;

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

/// Binds `addr` for `serve`.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Serves `router` on `listener` until `shutdown` resolves, then stops accepting and waits
/// for the requests in flight. `listening` is told the bound address once, before the first
/// request is accepted (the service logs it, under its own name).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    listening: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let addr = listener.local_addr().map_err(ServeError::Serve)?;
    listening(addr);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServeError::Serve)
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

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
            async {
                let _ = stopped.await;
            },
            move |addr| {
                let _ = told.send(addr);
            },
        ));
        assert_eq!(heard.await.unwrap(), bound);
        let mut stream = tokio::net::TcpStream::connect(bound).await.unwrap();
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
}

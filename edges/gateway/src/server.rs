//! Running the gateway: bind, serve until the shutdown future resolves,
//! then stop accepting, let in-flight requests finish (each waits at most
//! for its delivery report), and flush the producer before returning.

use std::future::Future;

use axum::http::StatusCode;
use tokio::net::TcpListener;
use tower_http::timeout::TimeoutLayer;

use crate::app::{app, AppState, StartError};
use crate::config::GatewayConfig;

/// Runs the gateway with `config` until `shutdown` resolves.
pub async fn run(
    config: GatewayConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let state = AppState::new(&config)?;
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
    serve(listener, state, &config, shutdown).await
}

/// Serves on an already bound listener (tests and benchmarks bind port 0).
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    config: &GatewayConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let addr = listener.local_addr().map_err(StartError::Serve)?;
    tracing::info!(%addr, integrations = config.integrations.len(), "gateway listening");
    let router = app(state.clone()).layer(TimeoutLayer::with_status_code(
        StatusCode::REQUEST_TIMEOUT,
        config.request_timeout,
    ));
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(StartError::Serve)?;
    tracing::info!("stopped accepting; flushing the producer");
    match state.publisher().flush(config.flush_timeout).await {
        Ok(()) => tracing::info!("producer flushed; gateway stopped"),
        // Every record not flushed was also never answered 202.
        Err(e) => tracing::warn!(error = %e, "producer flush incomplete"),
    }
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C: the usual `shutdown` argument.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}

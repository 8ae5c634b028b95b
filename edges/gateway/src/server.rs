//! Running the gateway: bind the public and the admin listener, serve until
//! the shutdown future resolves, then stop accepting, let in-flight requests
//! finish (each waits at most for its delivery report), and flush the
//! producer before returning; the admin listener (`/metrics`) stays up until
//! then, so the last scrape sees the end. Binding and serving are
//! `callstream_platform::http`'s; the flush is ours.

use std::future::Future;

use callstream_platform::http;
use tokio::net::TcpListener;

use crate::app::{admin, app, AppState, StartError};
use crate::config::GatewayConfig;

/// Runs the gateway with `config` until `shutdown` resolves.
pub async fn run(
    config: GatewayConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let state = AppState::new(&config)?;
    let listener = http::bind(config.listen).await?;
    let admin_listener = http::bind(config.admin_listen).await?;
    let admin =
        http::AdminServer::spawn(|stopped| serve_admin(admin_listener, state.clone(), stopped));
    let served = serve(listener, state, &config, shutdown).await;
    admin.stop().await;
    served
}

/// Serves the admin routes (`/metrics`, `/healthz`, `/readyz`) on `listener`
/// until `shutdown` resolves.
pub async fn serve_admin(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let limits = http::ServeLimits::default();
    http::serve(listener, admin(state), limits, shutdown, |addr| {
        tracing::info!(%addr, "gateway admin listener (/metrics) listening");
    })
    .await?;
    Ok(())
}

/// Serves on an already bound listener (tests and benchmarks bind port 0).
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    config: &GatewayConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let router = callstream_platform::problem::with_request_timeout(
        app(state.clone()),
        config.request_timeout,
    );
    http::serve(listener, router, config.serve_limits, shutdown, |addr| {
        tracing::info!(%addr, integrations = config.integrations.len(), "gateway listening");
    })
    .await?;
    tracing::info!("stopped accepting; flushing the producer");
    match state.publisher().flush(config.flush_timeout).await {
        Ok(()) => tracing::info!("producer flushed; gateway stopped"),
        // Every record not flushed was also never answered 202.
        Err(e) => tracing::warn!(error = %e, "producer flush incomplete"),
    }
    Ok(())
}

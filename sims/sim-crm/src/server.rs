//! Running the CRM simulator: bind (or take a bound listener), serve until
//! the shutdown future resolves, then stop accepting and let in-flight
//! requests finish. Binding and serving are `callstream_platform::http`'s.

use std::future::Future;

use callstream_platform::http;
use tokio::net::TcpListener;

use crate::app::app;
use crate::config::SimCrmConfig;
use crate::state::{CrmState, StartError};

/// Binds `config.listen` and serves until `shutdown` resolves.
pub async fn run(
    config: SimCrmConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let listener = http::bind(config.listen).await?;
    serve(config, listener, shutdown).await
}

/// Serves on an already bound listener (tests bind port 0).
pub async fn serve(
    config: SimCrmConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let state = CrmState::new(&config)?;
    serve_state(state, listener, shutdown).await
}

/// Serves a state the caller keeps a handle on.
pub async fn serve_state(
    state: CrmState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    http::serve(
        listener,
        app(state),
        http::ServeLimits::default(),
        shutdown,
        |addr| {
            tracing::info!(%addr, "CRM simulator listening");
        },
    )
    .await?;
    tracing::info!("CRM simulator stopped");
    Ok(())
}

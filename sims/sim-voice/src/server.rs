//! Running the simulator: bind (or take a bound listener), serve until the
//! shutdown future resolves, then stop accepting and let in-flight requests
//! finish. Calls still playing out are abandoned with the process, as a
//! platform outage would abandon them. Binding and serving are
//! `callstream_platform::http`'s.

use std::future::Future;

use callstream_platform::http;
use tokio::net::TcpListener;

use crate::app::app;
use crate::config::SimVoiceConfig;
use crate::state::{SimState, StartError};

/// Binds `config.listen` and serves until `shutdown` resolves.
pub async fn run(
    config: SimVoiceConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let listener = http::bind(config.listen).await?;
    serve(config, listener, shutdown).await
}

/// Serves on an already bound listener (tests bind port 0).
pub async fn serve(
    config: SimVoiceConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let state = SimState::new(&config)?;
    serve_state(state, listener, shutdown).await
}

/// Serves a state the caller keeps a handle on (to read stats directly).
pub async fn serve_state(
    state: SimState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    http::serve(
        listener,
        app(state),
        http::ServeLimits::default(),
        shutdown,
        |addr| {
            tracing::info!(%addr, "voice simulator listening");
        },
    )
    .await?;
    tracing::info!("voice simulator stopped");
    Ok(())
}

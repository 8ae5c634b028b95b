//! Running the operator API: connect, bind the public and the admin listener (`/metrics`),
//! serve until the shutdown future resolves, then let in-flight requests finish and flush
//! the producer. Binding and serving are
//! `callstream_platform::http`'s; the flush is ours.

use std::future::Future;
use std::time::Duration;

use callstream_platform::http;
use sqlx::postgres::PgPoolOptions;
use tokio::net::TcpListener;

use crate::app::{admin, app, AppState};
use crate::config::OperatorApiConfig;
use crate::publish::Publisher;

/// Why the API could not start or keep serving.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("postgres: {0}")]
    Postgres(#[from] sqlx::Error),
    #[error("kafka: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    /// Binding the listen address, or serving on it.
    #[error(transparent)]
    Http(#[from] callstream_platform::http::ServeError),
}

/// The state for a config: a lazily connecting pool (the API starts while Postgres is
/// away and answers 503 until it is back) and the producer.
pub fn state(config: &OperatorApiConfig) -> Result<AppState, StartError> {
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(3))
        .connect_lazy(&config.database_url)?;
    let publisher = Publisher::new(&config.kafka, config.produce_timeout)?;
    Ok(AppState::new(pool, publisher, config.clone()))
}

/// Runs the API with `config` until `shutdown` resolves.
pub async fn run(
    config: OperatorApiConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let state = state(&config)?;
    let listener = http::bind(config.listen).await?;
    let admin_listener = http::bind(config.admin_listen).await?;
    let admin =
        http::AdminServer::spawn(|stopped| serve_admin(admin_listener, state.clone(), stopped));
    let served = serve(listener, state, shutdown).await;
    // The admin listener outlives the public one, so the last scrape sees the end.
    admin.stop().await;
    served
}

/// Serves the admin routes (`/metrics`, `/healthz`, `/readyz`) on `listener` until
/// `shutdown` resolves.
pub async fn serve_admin(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    http::serve(
        listener,
        admin(state),
        http::ServeLimits::default(),
        shutdown,
        |addr| tracing::info!(%addr, "operator API admin listener (/metrics) listening"),
    )
    .await?;
    Ok(())
}

/// Serves on an already bound listener (tests bind port 0).
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let timeout = state.config().request_timeout;
    let router = callstream_platform::problem::with_request_timeout(app(state.clone()), timeout);
    let limits = state.config().serve_limits;
    http::serve(listener, router, limits, shutdown, |addr| {
        tracing::info!(%addr, "operator API listening");
    })
    .await?;
    state.publisher().flush(Duration::from_secs(5));
    tracing::info!("operator API stopped");
    Ok(())
}

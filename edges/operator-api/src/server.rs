//! Running the operator API: connect, bind, serve until the shutdown future resolves, then
//! let in-flight requests finish and flush the producer.

use std::future::Future;
use std::time::Duration;

use axum::http::StatusCode;
use sqlx::postgres::PgPoolOptions;
use tokio::net::TcpListener;
use tower_http::timeout::TimeoutLayer;

use crate::app::{app, AppState};
use crate::config::OperatorApiConfig;
use crate::publish::Publisher;

/// Why the API could not start or keep serving.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("postgres: {0}")]
    Postgres(#[from] sqlx::Error),
    #[error("kafka: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    #[error("binding {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("serving: {0}")]
    Serve(std::io::Error),
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
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
    serve(listener, state, shutdown).await
}

/// Serves on an already bound listener (tests bind port 0).
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let addr = listener.local_addr().map_err(StartError::Serve)?;
    tracing::info!(%addr, "operator API listening");
    let timeout = state.config().request_timeout;
    let router = app(state.clone()).layer(TimeoutLayer::with_status_code(
        StatusCode::REQUEST_TIMEOUT,
        timeout,
    ));
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(StartError::Serve)?;
    state.publisher().flush(Duration::from_secs(5));
    tracing::info!("operator API stopped");
    Ok(())
}

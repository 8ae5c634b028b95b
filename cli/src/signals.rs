//! Graceful shutdown: SIGTERM (what supervisors send) or Ctrl-C, as
//! `callstream_platform::shutdown::signal` waits for them, logged here.

/// Resolves on the first SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let signal = callstream_platform::shutdown::signal().await;
    tracing::info!(%signal, "shutdown requested");
}

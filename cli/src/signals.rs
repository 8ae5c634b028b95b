//! Graceful shutdown: SIGTERM (what supervisors send) or Ctrl-C.

/// Resolves on the first SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            // Without a SIGTERM handler, Ctrl-C still works.
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
    tracing::info!("shutdown requested");
}

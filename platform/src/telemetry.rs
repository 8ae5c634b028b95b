//! Logging set-up: JSON lines by default (for log shippers), plain text when
//! `CALLSTREAM_LOG_FORMAT=text`. The filter comes from `RUST_LOG`.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber once; later calls are no-ops, so tests
/// and binaries can both call it.
pub fn init_tracing(default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let text = std::env::var("CALLSTREAM_LOG_FORMAT").is_ok_and(|f| f == "text");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // `try_init` fails only when a subscriber is already installed.
    let _ = if text {
        builder.try_init()
    } else {
        builder.json().flatten_event(true).try_init()
    };
}

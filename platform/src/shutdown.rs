//! Graceful shutdown: the signals a service stops on, SIGTERM (what supervisors and
//! orchestrators send) or Ctrl-C, waited for in this one place.
//!
//! Guarantees: `signal` resolves only when one of the two arrives. A signal that cannot be
//! watched (no SIGTERM off Unix, or a handler that fails to install) never fires, and the
//! other still works. Nothing is logged here: each caller logs in its own words and under
//! its own target, so a crate's log filter shows its shutdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The signal that asked for the shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM.
    Terminate,
    /// Ctrl-C (SIGINT).
    Interrupt,
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signal::Terminate => "SIGTERM",
            Signal::Interrupt => "Ctrl-C",
        })
    }
}

/// Resolves on the first SIGTERM or Ctrl-C, with the one that came.
pub async fn signal() -> Signal {
    let interrupt = async {
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
            // Without a SIGTERM handler, Ctrl-C still works.
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => Signal::Interrupt,
        () = terminate => Signal::Terminate,
    }
}

/// For a service that runs on its own threads rather than in an async runtime (the stream
/// processors' runtime polls a flag): sets `flag` on the first SIGTERM or Ctrl-C, waiting
/// on a thread of its own. If that thread cannot start its signal runtime, no signal can be
/// watched and `flag` is never set, as with `signal`.
pub fn set_on_signal(flag: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(signal());
        flag.store(true, Ordering::SeqCst);
    });
}

//! The effect runner: effects that committed transactions asked for run on
//! a small async executor of the engine's own, at most `concurrency` at
//! once, and their results go back to the event loop, which hands each to
//! its task in a later transaction. An effect runs only after the
//! transaction that asked for it committed; a result lost in a crash is not
//! retried (the processor reconciles, see `crate::effects`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tracing::warn;

use crate::api::{EffectRequest, EffectResult};
use crate::effects::EffectHandler;

/// An effect handler and how many of its effects may run at once.
#[derive(Clone)]
pub struct EffectRunner {
    pub handler: Arc<dyn EffectHandler>,
    pub concurrency: usize,
}

impl std::fmt::Debug for EffectRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EffectRunner")
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

/// Runs effects on a small async executor of the engine's own and sends
/// their results back to the event loop.
pub(super) struct EffectExecutor {
    runtime: tokio::runtime::Runtime,
    runner: Option<EffectRunner>,
    permits: Arc<tokio::sync::Semaphore>,
    results_tx: std::sync::mpsc::Sender<EffectResult>,
    pub(super) results: std::sync::mpsc::Receiver<EffectResult>,
    in_flight: Arc<AtomicUsize>,
}

impl EffectExecutor {
    pub(super) fn new(runner: Option<EffectRunner>) -> std::io::Result<Self> {
        let (results_tx, results) = std::sync::mpsc::channel();
        let concurrency = runner.as_ref().map_or(1, |r| r.concurrency.max(1));
        Ok(Self {
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("effects")
                .enable_all()
                .build()?,
            runner,
            permits: Arc::new(tokio::sync::Semaphore::new(concurrency)),
            results_tx,
            results,
            in_flight: Arc::new(AtomicUsize::new(0)),
        })
    }

    pub(super) fn start(&self, app_id: &str, requests: Vec<EffectRequest>) {
        let Some(runner) = &self.runner else {
            if !requests.is_empty() {
                warn!(
                    app = app_id,
                    count = requests.len(),
                    "effects asked for, but no effect handler is configured; dropped"
                );
            }
            return;
        };
        for request in requests {
            let handler = runner.handler.clone();
            let permits = self.permits.clone();
            let results = self.results_tx.clone();
            let in_flight = self.in_flight.clone();
            in_flight.fetch_add(1, Ordering::SeqCst);
            self.runtime.spawn(async move {
                // The semaphore is never closed, so acquiring only waits.
                let _permit = permits.acquire_owned().await;
                let payload = handler.call(request.clone()).await;
                let _ = results.send(EffectResult { request, payload });
                in_flight.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }

    pub(super) fn busy(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) > 0
    }
}

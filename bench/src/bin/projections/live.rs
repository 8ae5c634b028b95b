//! The live projections on the benchmark's tokio runtime, as
//! `callstream projections` runs them, and loading events into the topics.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use callstream_platform::{KafkaSettings, Topics};
use callstream_projections::{run_with_stats, ProjectionError, ProjectionsConfig, Stats};
use callstream_schemas::AnyEvent;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use callstream_bench::kafka::preload;

use crate::workload::route;

/// The live projections, running until stopped.
pub struct Live {
    pub stats: Arc<Stats>,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<Result<(), ProjectionError>>>,
}

impl Live {
    pub fn start(runtime: &Runtime, config: &ProjectionsConfig) -> Self {
        let stats = Arc::new(Stats::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async {
            let _ = stopped.await;
        };
        let handle = runtime.spawn(run_with_stats(config.clone(), stats.clone(), shutdown));
        Self {
            stats,
            stop: Some(stop),
            handle: Some(handle),
        }
    }

    /// Records applied (or skipped as already applied) and committed so far.
    pub fn records(&self) -> u64 {
        self.stats.records.load(Ordering::Relaxed)
    }

    pub fn batches(&self) -> u64 {
        self.stats.batches.load(Ordering::Relaxed)
    }

    /// Fails if the projections stopped on their own (only an error stops them).
    pub fn check(&mut self, runtime: &Runtime) -> Result<()> {
        if self.handle.as_ref().is_some_and(JoinHandle::is_finished) {
            self.join(runtime)?;
            bail!("the projections stopped during the measurement");
        }
        Ok(())
    }

    /// Stops the projections between two batches and waits for them.
    pub fn stop(mut self, runtime: &Runtime) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.join(runtime)
    }

    fn join(&mut self, runtime: &Runtime) -> Result<()> {
        let Some(handle) = self.handle.take() else {
            return Ok(());
        };
        runtime
            .block_on(handle)
            .map_err(|e| anyhow!("the projections task failed: {e}"))?
            .context("the projections failed")
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // On an early return: the task stops at its next batch; nobody waits.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Loads `events` into their topics (each keyed as the services key it),
/// as fast as the broker takes them; returns how long it took.
pub fn load(settings: &KafkaSettings, topics: &Topics, events: &[AnyEvent]) -> Result<Duration> {
    let mut by_topic: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for event in events {
        let (topic, key) = route(topics, event);
        let bytes = event.encode().context("encoding an event")?;
        by_topic.entry(topic).or_default().push((key, bytes));
    }
    let mut took = Duration::ZERO;
    for (topic, records) in &by_topic {
        took += preload(settings, topic, records.len() as u64, |i, key, value| {
            let (k, v) = &records[usize::try_from(i).unwrap_or(usize::MAX)];
            key.extend_from_slice(k.as_bytes());
            value.extend_from_slice(v);
        })?;
    }
    Ok(took)
}

//! Applied events/s and rebuild events/s over one preloaded workload.
//!
//! Live: the projections start on topics holding N events and are timed
//! from their first committed batch to the commit that brings them to N
//! (the first batch's records are left out of the count, so start-up,
//! migrations and partition assignment are not in the rate). Every view is
//! on, as `callstream projections` runs by default; a record counts once
//! however many views it changes.
//!
//! Rebuild: with the live projections stopped, `rebuild` of every view
//! from offset 0 into new tables and the swap, timed by its own report.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callstream_projections::{rebuild, ProjectionsConfig};
use tokio::runtime::Runtime;
use tracing::info;

use crate::live::Live;

/// What the live run found.
#[derive(Debug, Clone)]
pub struct Applied {
    pub events_per_s: f64,
    pub seconds: f64,
    /// Projections start to first batch committed.
    pub startup_seconds: f64,
    pub batches: u64,
}

const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Runs the live projections until they have applied `events` records.
pub fn applied(
    runtime: &Runtime,
    config: &ProjectionsConfig,
    events: u64,
    timeout: Duration,
) -> Result<Applied> {
    let started = Instant::now();
    let mut live = Live::start(runtime, config);
    let mut first: Option<(Instant, u64)> = None;
    let mut last_progress = Instant::now();
    let (end, records) = loop {
        live.check(runtime)?;
        let records = live.records();
        let now = Instant::now();
        if first.is_none() && records > 0 {
            first = Some((now, records));
        }
        if records >= events {
            break (now, records);
        }
        if started.elapsed() > timeout {
            bail!("the projections applied {records} of {events} events in {timeout:?}");
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            info!(records, batches = live.batches(), "applying");
        }
        // The counter moves once a batch (~2,000 records): 2 ms is fine-grained enough.
        std::thread::sleep(Duration::from_millis(2));
    };
    let batches = live.batches();
    live.stop(runtime)?;
    let Some((first_at, first_records)) = first else {
        bail!("the projections never committed a batch");
    };
    if records != events {
        tracing::warn!(
            records,
            events,
            "the projections counted more records than were loaded"
        );
    }
    let seconds = end.duration_since(first_at).as_secs_f64();
    let timed = records.saturating_sub(first_records);
    if timed == 0 || seconds <= 0.0 {
        bail!("everything was applied in the first batch; load more events (--events)");
    }
    Ok(Applied {
        events_per_s: timed as f64 / seconds,
        seconds,
        startup_seconds: first_at.duration_since(started).as_secs_f64(),
        batches,
    })
}

/// What the rebuild found.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    pub events_per_s: f64,
    pub records: u64,
    pub seconds: f64,
}

/// Rebuilds every view from the topics and swaps them in.
pub fn rebuilt(runtime: &Runtime, config: &ProjectionsConfig) -> Result<Rebuilt> {
    let report = runtime
        .block_on(rebuild(config.clone(), &[], false))
        .context("rebuilding the views")?;
    let seconds = report.elapsed.as_secs_f64();
    if report.records == 0 || seconds <= 0.0 {
        bail!("the rebuild read no records");
    }
    Ok(Rebuilt {
        events_per_s: report.records as f64 / seconds,
        records: report.records,
        seconds,
    })
}

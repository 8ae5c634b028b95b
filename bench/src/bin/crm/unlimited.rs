//! Throughput with the CRM's limit lifted: preload N commands over many
//! contacts, start the dispatcher (no client-side limit either) against the
//! simulator, and time it from its first handled record until the N-th
//! result is visible to a `read_committed` reader.
//!
//! Every command needs at least two commits of the dispatcher (the one that
//! asks for the request, the one that records its result), and only one
//! command per contact is in flight, so the load spreads over thousands of
//! contacts: with few, the commit cadence, not the dispatcher, is the limit.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callstream_crm_dispatcher::RateLimit;
use callstream_platform::KafkaSettings;
use tracing::info;

use callstream_bench::cpu::Usage;

use crate::load::{self, Results, Tally};
use crate::stack::{dispatcher_config, start_dispatcher, Names, Sim};

/// The load of the unlimited run.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub commands: u64,
    pub contacts: u64,
    pub concurrency: usize,
    pub commit_interval: Duration,
    pub timeout: Duration,
}

/// What the unlimited run found.
#[derive(Debug, Clone)]
pub struct Found {
    /// First record handled to the N-th result visible.
    pub seconds: f64,
    /// Dispatcher start to first record handled (group join, restore).
    pub startup_seconds: f64,
    pub tally: Tally,
    /// Requests the simulator answered.
    pub crm_requests: u64,
    pub duplicates: u64,
    pub commits: u64,
    pub mean_commit_ms: Option<f64>,
    pub cpu: Usage,
}

impl Found {
    pub fn commands_per_s(&self) -> f64 {
        self.tally.done() as f64 / self.seconds
    }
}

const PROGRESS_EVERY: Duration = Duration::from_secs(5);

pub fn measure(
    settings: &KafkaSettings,
    runtime: &tokio::runtime::Runtime,
    names: &Names,
    load: Load,
) -> Result<Found> {
    names.create(settings)?;
    let sim = Sim::start(runtime, 0, 10_000)?;
    info!(
        commands = load.commands,
        contacts = load.contacts,
        "preloading commands"
    );
    let took = load::load(
        settings,
        &names.commands(),
        &names.app,
        load.commands,
        load.contacts,
    )?;
    info!(seconds = took.as_secs_f64(), "preloaded");
    let no_limit = RateLimit {
        max_requests: 0,
        ..RateLimit::default()
    };
    let config = dispatcher_config(names, &sim, no_limit, load.concurrency)?;
    let mut results = Results::new(settings, &names.results(), names.topics.partitions)?;

    let cpu_before = Usage::now();
    let started = Instant::now();
    let mut dispatcher = start_dispatcher(settings, names, &config, load.commit_interval)?;
    let mut first: Option<Instant> = None;
    let mut last_progress = Instant::now();
    let end = loop {
        dispatcher.ensure_running()?;
        if first.is_none() && dispatcher.metrics().records_in.get() > 0 {
            first = Some(Instant::now());
        }
        results.read_some(Duration::from_millis(10));
        if results.tally.total() >= load.commands {
            break Instant::now();
        }
        if started.elapsed() > load.timeout {
            bail!(
                "only {} of {} results after {:?} (the dispatcher handled {} records)",
                results.tally.total(),
                load.commands,
                load.timeout,
                dispatcher.metrics().records_in.get()
            );
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            info!(
                handled = dispatcher.metrics().records_in.get(),
                results = results.tally.total(),
                crm_requests = sim.stats().requests_total,
                commits = dispatcher.metrics().commits.get(),
                "running"
            );
        }
    };
    let cpu = Usage::now().since(&cpu_before);
    let first = first.unwrap_or(started);
    let commits = dispatcher.metrics().commits.get();
    let mean_commit_ms = dispatcher.mean_commit_ms();
    dispatcher.stop()?;
    // Results past N would be duplicates: read a little longer to see them.
    let drain_until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < drain_until {
        results.read_some(Duration::from_millis(50));
    }
    Ok(Found {
        seconds: end.duration_since(first).as_secs_f64(),
        startup_seconds: first.duration_since(started).as_secs_f64(),
        tally: results.tally.clone(),
        crm_requests: sim.stats().requests_total,
        duplicates: sim.duplicate_creates(),
        commits,
        mean_commit_ms,
        cpu,
    })
}

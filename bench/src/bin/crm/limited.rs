//! The CRM's limit kept, not exceeded: the simulator enforces HubSpot's
//! rolling limit (100 requests per 10 s per token by default), the
//! dispatcher runs with its own client-side limiter at its defaults, and a
//! backlog far larger than the limit lets through keeps it busy throughout.
//!
//! Utilisation is measured over a steady stretch: from `warmup` after the
//! first request reaches the simulator, for `seconds`, as the requests the
//! simulator admitted in that stretch over what its limit allows in it
//! (`max / window × seconds`). The stretch must end with commands still
//! waiting, or it measured the load running out, and the run fails.
//!
//! Few contacts (tens): a command waits for the limiter inside its send
//! window (30 s by default), and with thousands of contacts in flight most
//! would expire there and be asked again, which measures the backlog, not
//! the limiter.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callstream_crm_dispatcher::RateLimit;
use callstream_platform::KafkaSettings;
use tracing::info;

use crate::load::{self, Results, Tally};
use crate::stack::{dispatcher_config, start_dispatcher, Names, Sim};

/// The limited run's shape.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub limit: RateLimit,
    pub contacts: u64,
    pub concurrency: usize,
    pub warmup: Duration,
    pub seconds: Duration,
    pub commit_interval: Duration,
    pub timeout: Duration,
}

impl Load {
    /// Requests per second the CRM allows.
    pub fn allowed_per_s(&self) -> f64 {
        f64::from(self.limit.max_requests) / self.limit.window.as_secs_f64()
    }

    /// Commands to preload: half as many again as the limit could pass
    /// in the whole run (start-up included), so the backlog never runs out.
    fn commands(&self) -> u64 {
        let span = (self.warmup + self.seconds + Duration::from_secs(30)).as_secs_f64();
        let needed = (self.allowed_per_s() * span * 1.5).ceil() as u64;
        needed.max(self.contacts * 2)
    }
}

/// What the limited run found.
#[derive(Debug, Clone)]
pub struct Found {
    /// Requests admitted in the steady stretch over those allowed in it.
    pub utilisation: f64,
    /// Requests per second admitted in the stretch.
    pub requests_per_s: f64,
    /// 429s the simulator answered over the whole run.
    pub throttled: u64,
    /// Most requests that arrived in any window of the limit.
    pub max_in_window: u32,
    pub crm_requests: u64,
    pub duplicates: u64,
    pub tally: Tally,
    pub commands: u64,
}

/// Requests the simulator admitted so far (arrived minus refused).
fn admitted(sim: &Sim) -> u64 {
    sim.state
        .limits()
        .iter()
        .map(|(_, arrived, refused, _, _)| arrived.saturating_sub(*refused))
        .sum()
}

const PROGRESS_EVERY: Duration = Duration::from_secs(10);

pub fn measure(
    settings: &KafkaSettings,
    runtime: &tokio::runtime::Runtime,
    names: &Names,
    load: Load,
) -> Result<Found> {
    names.create(settings)?;
    let window_ms = u64::try_from(load.limit.window.as_millis()).unwrap_or(u64::MAX);
    let sim = Sim::start(runtime, load.limit.max_requests, window_ms)?;
    let commands = load.commands();
    info!(commands, contacts = load.contacts, "preloading commands");
    load::load(
        settings,
        &names.commands(),
        &names.app,
        commands,
        load.contacts,
    )?;
    let config = dispatcher_config(names, &sim, load.limit, load.concurrency)?;
    let mut results = Results::new(settings, &names.results(), names.topics.partitions)?;

    let started = Instant::now();
    let mut dispatcher = start_dispatcher(settings, names, &config, load.commit_interval)?;
    let mut first_request: Option<Instant> = None;
    let mut stretch: Option<(Instant, u64)> = None;
    let mut last_progress = Instant::now();
    let found = loop {
        dispatcher.ensure_running()?;
        // Sampled every few ms: an error of one sample is ~0.1% of a 60 s stretch.
        results.read_some(Duration::from_millis(5));
        let now = Instant::now();
        let admitted_now = admitted(&sim);
        if first_request.is_none() && admitted_now > 0 {
            first_request = Some(now);
            info!(
                after_s = now.duration_since(started).as_secs_f64(),
                "first CRM request"
            );
        }
        if let Some(first) = first_request {
            if stretch.is_none() && now.duration_since(first) >= load.warmup {
                stretch = Some((now, admitted_now));
            }
        }
        if let Some((from, admitted_then)) = stretch {
            let length = now.duration_since(from);
            if length >= load.seconds {
                if results.tally.total() >= commands {
                    bail!("the backlog ran out before the stretch ended; preload more commands");
                }
                let requests = admitted_now - admitted_then;
                let requests_per_s = requests as f64 / length.as_secs_f64();
                break Found {
                    utilisation: requests_per_s / load.allowed_per_s(),
                    requests_per_s,
                    throttled: sim.stats().throttled,
                    max_in_window: sim.max_requests_in_window(),
                    crm_requests: sim.stats().requests_total,
                    duplicates: 0,
                    tally: Tally::default(),
                    commands,
                };
            }
        }
        if started.elapsed() > load.timeout {
            bail!("the limited run did not finish within {:?}", load.timeout);
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            let stats = sim.stats();
            info!(
                crm_requests = stats.requests_total,
                throttled = stats.throttled,
                results = results.tally.total(),
                measuring = stretch.is_some(),
                "running"
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    dispatcher.stop()?;
    results.read_some(Duration::from_millis(200));
    Ok(Found {
        duplicates: sim.duplicate_creates(),
        tally: results.tally.clone(),
        ..found
    })
}

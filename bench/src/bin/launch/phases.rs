//! The two measurements, on one dispatcher and one set of topics:
//!
//! - throughput: a backlog of W warm-up then N launch commands, preloaded
//!   before the dispatcher starts; the clock runs from the W-th launch
//!   decided and visible to a `read_committed` reader to the (W+N)-th (the
//!   warm-up's own clock from the first record handled, so group join and
//!   restore are left out, reported as `startup`);
//! - latency: once the backlog is done, commands at a steady rate; for
//!   each, the time from handing it to the producer to its decision being
//!   visible downstream.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use callstream_platform::topics::LAUNCH_COMMANDS;
use callstream_platform::KafkaSettings;
use tracing::info;

use callstream_bench::processor::RunningProcessor;

use crate::commands::{paced, Pace};
use crate::outcomes::Outcomes;
use crate::stack::Names;
use crate::threads::Reading;

const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// What the throughput phase measured.
pub struct Throughput {
    pub launches: u64,
    /// W-th decision visible to the (W+N)-th (first record handled to the
    /// N-th without a warm-up).
    pub seconds: f64,
    /// Dispatcher start to first record handled.
    pub startup_seconds: f64,
    pub warmup_launches: u64,
    /// First record handled to the W-th decision visible.
    pub warmup_seconds: f64,
    /// CPU seconds by thread group (and the broker) over the measured span
    /// (with no warm-up: start-up included).
    pub cpu: std::collections::BTreeMap<&'static str, f64>,
}

impl Throughput {
    pub fn launches_per_s(&self) -> f64 {
        self.launches as f64 / self.seconds
    }

    pub fn warmup_launches_per_s(&self) -> Option<f64> {
        (self.warmup_launches > 0 && self.warmup_seconds > 0.0)
            .then(|| self.warmup_launches as f64 / self.warmup_seconds)
    }
}

/// Starts the dispatcher through `start` (which returns it with what else
/// it started, `T`) and waits for `warmup + launches` decisions, measuring
/// the last `launches`.
pub fn throughput<T>(
    warmup: u64,
    launches: u64,
    outcomes: &mut Outcomes,
    timeout: Duration,
    start: impl FnOnce() -> Result<(RunningProcessor, T)>,
) -> Result<(RunningProcessor, T, Throughput)> {
    let before_start = Reading::now();
    let started = Instant::now();
    let (mut dispatcher, with) = start()?;
    let mut first: Option<Instant> = None;
    // When the warm-up was seen decided, how many were by then (a read can
    // take it past `warmup`: the measured span is the rest) and the CPU then.
    let mut warm: Option<(Instant, u64, Reading)> = None;
    let mut last_progress = Instant::now();
    let total = warmup + launches;
    while outcomes.count() < total {
        dispatcher.ensure_running()?;
        if first.is_none() && dispatcher.metrics().records_in.get() > 0 {
            first = Some(Instant::now());
        }
        outcomes.read_some(Duration::from_millis(10));
        if warm.is_none() && warmup > 0 && outcomes.count() >= warmup {
            warm = Some((Instant::now(), outcomes.count(), Reading::now()));
            info!(warmup, "warmed up; measuring");
        }
        if started.elapsed() > timeout {
            bail!(
                "only {} of {total} launches decided after {timeout:?} (dispatcher handled {} records)",
                outcomes.count(),
                dispatcher.metrics().records_in.get()
            );
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            info!(
                handled = dispatcher.metrics().records_in.get(),
                decided = outcomes.count(),
                "running"
            );
        }
    }
    let end = Instant::now();
    let at_end = Reading::now();
    let first = first.unwrap_or(started);
    let (from, decided_before, cpu) = match warm {
        Some((at, decided, reading)) => (at, decided, at_end.since(&reading, &before_start)),
        None => (first, 0, at_end.since(&before_start, &before_start)),
    };
    Ok((
        dispatcher,
        with,
        Throughput {
            launches: total - decided_before,
            seconds: end.duration_since(from).as_secs_f64(),
            startup_seconds: first.duration_since(started).as_secs_f64(),
            warmup_launches: decided_before,
            warmup_seconds: from.duration_since(first).as_secs_f64(),
            cpu,
        },
    ))
}

/// What the latency phase measured.
pub struct Latency {
    pub per_second: u64,
    /// Command handed to the producer to decision visible, ms, per launch.
    pub samples_ms: Vec<f64>,
}

/// Sends `pace` and waits for every one of its launches to be decided.
pub fn latency(
    settings: &KafkaSettings,
    names: &Names,
    run: u64,
    pace: Pace,
    outcomes: &mut Outcomes,
    dispatcher: &mut RunningProcessor,
    timeout: Duration,
) -> Result<Latency> {
    let (tx, rx) = mpsc::channel();
    let topic = names.topics.name(LAUNCH_COMMANDS);
    let producer = paced(settings, &topic, run, pace, tx)?;
    let decided_before = outcomes.count();
    let mut sent: Vec<Option<Instant>> = vec![None; usize::try_from(pace.count)?];
    let started = Instant::now();
    let mut last_progress = Instant::now();
    while outcomes.count() - decided_before < pace.count {
        dispatcher.ensure_running()?;
        take_sent(&rx, &mut sent, pace.first);
        outcomes.read_some(Duration::from_millis(5));
        if started.elapsed() > timeout {
            bail!(
                "only {} of {} paced launches decided after {timeout:?}",
                outcomes.count() - decided_before,
                pace.count
            );
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            info!(
                decided = outcomes.count() - decided_before,
                of = pace.count,
                "paced"
            );
        }
    }
    producer
        .join()
        .map_err(|_| anyhow!("the launch-command producer panicked"))??;
    take_sent(&rx, &mut sent, pace.first);
    let mut samples_ms = Vec::with_capacity(sent.len());
    for (i, at) in sent.iter().enumerate() {
        let n = pace.first + i as u64;
        let (Some(at), Some((visible, _))) = (at, outcomes.decided.get(&n)) else {
            bail!("launch {n} has no send time or no decision");
        };
        samples_ms.push(visible.saturating_duration_since(*at).as_secs_f64() * 1000.0);
    }
    Ok(Latency {
        per_second: pace.per_second,
        samples_ms,
    })
}

/// Files the send times the producer reported so far.
fn take_sent(rx: &mpsc::Receiver<(u64, Instant)>, sent: &mut [Option<Instant>], first: u64) {
    for (n, at) in rx.try_iter() {
        let slot = n
            .checked_sub(first)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| sent.get_mut(i));
        if let Some(slot) = slot {
            *slot = Some(at);
        }
    }
}

//! Deadline to `completion-missing` visible (to a `read_committed` reader),
//! on busy partitions and on quiet ones, measured together against one
//! detector instance with a short window (`--window-ms` plus `--grace-ms`).
//!
//! - Busy partitions (all but the last `quiet_partitions`) carry a steady
//!   live stream: accepted launches at `busy_launches_per_s`, each followed
//!   `completion_delay_ms` later by its completion, except every
//!   `missing_every`-th launch, whose completion never comes. Records carry
//!   their event time as timestamp, so stream time keeps moving there and
//!   usually closes a window before the wall clock does.
//! - Quiet partitions get a group of `quiet_group` launches at once, then
//!   nothing until a second after their deadline: only the wall-clock timer
//!   can report those, while the same instance is busy with the others
//!   (the realistic worst case for a quiet partition).
//!
//! Launch ids say what a launch is (high half: warm-up, busy-missing,
//! busy-completed, quiet), so the reader classifies each report alone. A
//! report of a completed busy launch (its completion came after the
//! deadline on a loaded machine) is counted as `busy_false_missing`, not
//! sampled. Every launch meant to go missing must be reported.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use callstream_bench::kafka::{committed_reader, now_micros};
use callstream_bench::report::Summary;
use callstream_platform::{topics, KafkaSettings};
use callstream_schemas::{CompletionMissing, Event};
use rdkafka::consumer::BaseConsumer;
use rdkafka::message::Message;
use tracing::{info, warn};
use uuid::Uuid;

use crate::pace::{Driver, Sent};
use crate::stack::{detector_config, start_instance, Names};

/// Launch-id high halves.
pub const WARM_UP: u64 = 1;
pub const BUSY_MISSING: u64 = 2;
pub const BUSY_DONE: u64 = 3;
pub const QUIET: u64 = 4;

/// The load and the window.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub busy_launches_per_s: u64,
    pub missing_every: u64,
    pub completion_delay_ms: i64,
    pub quiet_partitions: i32,
    pub quiet_group: u64,
    pub duration: Duration,
    pub window_ms: i64,
    pub grace_ms: i64,
}

#[derive(Debug, Clone)]
pub struct Latency {
    pub busy: Summary,
    pub quiet: Summary,
    /// Of which: deadline to the detector's emission (the report's
    /// `occurred_at`, the detector's clock when it decided); the rest is
    /// the commit and the read.
    pub busy_detect: Summary,
    pub quiet_detect: Summary,
    pub busy_false_missing: u64,
    /// Launches and completions sent during the measurement.
    pub sent: Sent,
    pub mean_commit_ms: Option<f64>,
}

/// Samples by class, in ms after the deadline.
#[derive(Debug, Default)]
struct Seen {
    busy: Vec<f64>,
    quiet: Vec<f64>,
    busy_detect: Vec<f64>,
    quiet_detect: Vec<f64>,
    false_missing: u64,
    quiet_by_wall_clock: u64,
}

const WARM_UP_LIMIT: Duration = Duration::from_secs(60);
const TAIL: Duration = Duration::from_secs(30);

pub fn measure(settings: &KafkaSettings, names: &Names, load: Load) -> Result<Latency> {
    names.create(settings, false)?;
    let partitions = names.topics.partitions;
    let reader = committed_reader(
        settings,
        &names.name(topics::COMPLETION_MISSING),
        partitions,
        10,
    )?;
    let config = detector_config(names, load.window_ms, load.grace_ms);
    let mut instance = start_instance(settings, names, config)?;
    let ready = Arc::new(AtomicBool::new(false));
    let driver = Driver::new(settings, names, load, ready.clone())?;
    let mut sender = Some(
        std::thread::Builder::new()
            .name("paced-producer".into())
            .spawn(move || driver.run())
            .context("starting the paced producer")?,
    );

    let mut seen = Seen::default();
    let mut sent: Option<Sent> = None;
    let window = Duration::from_millis(u64::try_from(load.window_ms + load.grace_ms).unwrap_or(0));
    let give_up = Instant::now() + WARM_UP_LIMIT + load.duration + window + TAIL;
    loop {
        instance.ensure_healthy()?;
        read_reports(&reader, &ready, &mut seen)?;
        if let Some(thread) = sender.take_if(|t| t.is_finished()) {
            let count = thread
                .join()
                .map_err(|_| anyhow!("the paced producer panicked"))??;
            info!(?count, "load sent; waiting for the last reports");
            sent = Some(count);
        }
        if let Some(count) = sent {
            if seen.busy.len() as u64 >= count.busy_missing
                && seen.quiet.len() as u64 >= count.quiet
            {
                break;
            }
        }
        if Instant::now() > give_up {
            bail!(
                "only {} busy and {} quiet of {sent:?} missing completions were reported",
                seen.busy.len(),
                seen.quiet.len()
            );
        }
    }
    let mean_commit_ms = instance.mean_commit_ms();
    instance.stop()?;
    let sent = sent.ok_or_else(|| anyhow!("the load never finished"))?;
    info!(
        quiet = seen.quiet.len(),
        by_wall_clock = seen.quiet_by_wall_clock,
        "quiet partitions' reports"
    );
    if seen.false_missing > 0 {
        warn!(
            count = seen.false_missing,
            "completed launches reported missing (completion later than the deadline)"
        );
    }
    let busy = Summary::of(seen.busy).ok_or_else(|| anyhow!("no busy samples"))?;
    let quiet = Summary::of(seen.quiet).ok_or_else(|| anyhow!("no quiet samples"))?;
    let busy_detect = Summary::of(seen.busy_detect).ok_or_else(|| anyhow!("no busy samples"))?;
    let quiet_detect = Summary::of(seen.quiet_detect).ok_or_else(|| anyhow!("no quiet samples"))?;
    Ok(Latency {
        busy,
        quiet,
        busy_detect,
        quiet_detect,
        busy_false_missing: seen.false_missing,
        sent,
        mean_commit_ms,
    })
}

/// Reads the reports that are there and files each by its launch's class.
fn read_reports(reader: &BaseConsumer, ready: &AtomicBool, seen: &mut Seen) -> Result<()> {
    let mut wait = Duration::from_millis(5);
    for _ in 0..10_000 {
        let message = match reader.poll(wait) {
            Some(Ok(message)) => message,
            Some(Err(error)) => {
                warn!(%error, "reader error");
                return Ok(());
            }
            None => return Ok(()),
        };
        let seen_ms = now_micros() as f64 / 1000.0;
        let report = CompletionMissing::decode(message.payload().unwrap_or_default())
            .context("decoding a completion-missing report")?;
        let deadline_ms = report.deadline_at.timestamp_millis();
        let late_ms = seen_ms - deadline_ms as f64;
        let detect_ms = (report.occurred_at.timestamp_millis() - deadline_ms) as f64;
        match class(report.launch_id) {
            WARM_UP => ready.store(true, Ordering::SeqCst),
            BUSY_MISSING => {
                seen.busy.push(late_ms);
                seen.busy_detect.push(detect_ms);
            }
            BUSY_DONE => seen.false_missing += 1,
            QUIET => {
                seen.quiet.push(late_ms);
                seen.quiet_detect.push(detect_ms);
                if report.trigger == callstream_schemas::MissingTrigger::WallClock {
                    seen.quiet_by_wall_clock += 1;
                }
            }
            _ => warn!(launch = %report.launch_id, "a report of a launch this run did not send"),
        }
        wait = Duration::ZERO;
    }
    Ok(())
}

fn class(launch_id: Uuid) -> u64 {
    launch_id.as_u64_pair().0
}

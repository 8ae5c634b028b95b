//! `cargo xtask bench detector`: the missing-completion detector's numbers
//! (issue 7), JSON lines on stdout, each phase on fresh topics:
//!
//! 1. `detector_events_per_s`: accepted launches and their completions,
//!    preloaded with event-time record timestamps, through the real
//!    detector on the exactly-once runtime, first input to the commit of
//!    the last (`throughput`).
//! 2. `missing_latency_p99_ms` and `quiet_missing_latency_p99_ms`: from a
//!    window's deadline to its `completion-missing` visible to a
//!    `read_committed` reader, under a live paced load, on busy partitions
//!    (stream time moves) and on quiet ones (only the wall clock can
//!    fire), with a short window (`latency`).
//! 3. `state_bytes_per_open_launch`: open launches through the detector,
//!    then the key plus value bytes of the last value per key of the
//!    `contacts` and timer changelogs, over the open launches (`state`).
//! 4. `restore_windows_per_s`: changelogs filled with open windows in the
//!    detector's own format, a fresh instance, windows over the runtime's
//!    restore time (`restore`).
//!
//! Topics are deleted afterwards unless `--keep-topics`.

mod latency;
mod load;
mod pace;
mod records;
mod restore;
mod stack;
mod state;
mod throughput;

use std::time::Duration;

use anyhow::{bail, Result};
use callstream_bench::report::Report;
use callstream_completion_detector::config::{DEFAULT_GRACE_MS, DEFAULT_WINDOW_MS};
use callstream_platform::KafkaSettings;
use clap::Parser;
use tracing::info;

use self::stack::Names;

fn main() -> Result<()> {
    callstream_bench::init("detector", &["callstream_runtime"]);
    run(&Args::parse(), &mut Report::stdout("detector"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// Exactly-once events/s.
    Throughput,
    /// Deadline-to-report latency, busy and quiet partitions.
    Latency,
    /// State bytes per open launch.
    State,
    /// Restore rate of open windows.
    Restore,
}

/// The completion detector: exactly-once events/s, deadline-to-report
/// latency on busy and quiet partitions, state per open launch, restore rate.
#[derive(Debug, Parser)]
#[command(name = "detector")]
pub struct Args {
    /// Contacts of the throughput run: one launch and one completion each.
    #[arg(long, default_value_t = 200_000)]
    contacts: u64,
    /// Event time from a launch to its completion in the throughput run, ms.
    #[arg(long, default_value_t = 30_000)]
    completion_delay_ms: i64,
    /// Partitions of every topic.
    #[arg(long, default_value_t = 12)]
    partitions: i32,
    /// Busy launches per second of the latency run (plus a completion for
    /// all but every `--missing-every`-th).
    #[arg(long, default_value_t = 1_000)]
    busy_rate: u64,
    /// Every n-th busy launch gets no completion (a latency sample).
    #[arg(long, default_value_t = 20)]
    missing_every: u64,
    /// Delay from a busy launch to its completion, ms (below the window).
    #[arg(long, default_value_t = 500)]
    live_completion_delay_ms: i64,
    /// Partitions of the latency run that get only isolated launch groups.
    #[arg(long, default_value_t = 2)]
    quiet_partitions: i32,
    /// Launches per quiet partition and cycle (a cycle is W + grace + 1 s).
    #[arg(long, default_value_t = 10)]
    quiet_group: u64,
    /// Seconds of the latency run.
    #[arg(long, default_value_t = 30)]
    latency_seconds: u64,
    /// Window W of the latency run, ms (short, so deadlines come during it).
    #[arg(long, default_value_t = 2_000)]
    window_ms: i64,
    /// Grace after W of the latency run, ms.
    #[arg(long, default_value_t = 500)]
    grace_ms: i64,
    /// Open launches of the state-size run.
    #[arg(long, default_value_t = 100_000)]
    open_launches: u64,
    /// Open windows written to the changelogs of the restore run.
    #[arg(long, default_value_t = 500_000)]
    restore_windows: u64,
    /// Which phases to run, comma-separated.
    #[arg(long, value_delimiter = ',',
          default_values = ["throughput", "latency", "state", "restore"])]
    phases: Vec<Phase>,
    /// Most seconds a phase may wait for the detector before the run fails.
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
    /// Leave the benchmark's topics in place (to look at them).
    #[arg(long)]
    keep_topics: bool,
}

pub fn run(args: &Args, report: &mut Report) -> Result<()> {
    if args.contacts == 0
        || args.partitions < 1
        || args.busy_rate == 0
        || args.missing_every == 0
        || args.quiet_group == 0
        || args.latency_seconds == 0
        || args.window_ms <= 0
        || args.grace_ms < 0
        || args.open_launches == 0
        || args.restore_windows == 0
    {
        bail!("every size, rate, count and window must be positive");
    }
    if args.quiet_partitions < 1 || args.quiet_partitions >= args.partitions {
        bail!("--quiet-partitions must leave at least one busy partition and be at least 1");
    }
    if args.live_completion_delay_ms >= args.window_ms
        || args.completion_delay_ms >= DEFAULT_WINDOW_MS
    {
        bail!("completion delays must be shorter than their windows");
    }
    let settings = KafkaSettings::from_env("callstream-bench");
    stack::check_reachable(&settings)?;
    let mut made: Vec<String> = Vec::new();
    let result = run_phases(args, &settings, report, &mut made);
    callstream_bench::kafka::clean_up(&settings, &made, args.keep_topics);
    result
}

fn fresh(label: &str, args: &Args, made: &mut Vec<String>) -> Names {
    let names = Names::fresh(label, args.partitions);
    made.extend(names.topic_names());
    info!(app = %names.app, phase = label, "phase");
    names
}

fn run_phases(
    args: &Args,
    settings: &KafkaSettings,
    report: &mut Report,
    made: &mut Vec<String>,
) -> Result<()> {
    let timeout = Duration::from_secs(args.timeout_s);
    // The production defaults, where the window does not matter to the figure.
    let default_window = (DEFAULT_WINDOW_MS, DEFAULT_GRACE_MS);
    report.emit("partitions", f64::from(args.partitions), "partitions")?;
    if args.phases.contains(&Phase::Throughput) {
        let names = fresh("tput", args, made);
        let r = throughput::measure(
            settings,
            &names,
            args.contacts,
            args.completion_delay_ms,
            default_window,
            timeout,
        )?;
        report.emit("detector_events_per_s", r.per_s(), "events/s")?;
        report.emit("detector_events", r.events as f64, "events")?;
        report.emit("detector_seconds", r.seconds, "s")?;
        report.emit("detector_startup_seconds", r.startup_seconds, "s")?;
        report.emit("detector_commits", r.commits as f64, "commits")?;
        if let Some(ms) = r.mean_commit_ms {
            report.emit("detector_mean_commit_ms", ms, "ms")?;
        }
        if let Some(cpu) = r.cpu.bench {
            report.emit("detector_bench_process_cpu_s", cpu, "s")?;
        }
        if let Some(cpu) = r.cpu.broker {
            report.emit("detector_broker_cpu_s", cpu, "s")?;
        }
    }
    if args.phases.contains(&Phase::Latency) {
        let names = fresh("lat", args, made);
        let load = latency::Load {
            busy_launches_per_s: args.busy_rate,
            missing_every: args.missing_every,
            completion_delay_ms: args.live_completion_delay_ms,
            quiet_partitions: args.quiet_partitions,
            quiet_group: args.quiet_group,
            duration: Duration::from_secs(args.latency_seconds),
            window_ms: args.window_ms,
            grace_ms: args.grace_ms,
        };
        let r = latency::measure(settings, &names, load)?;
        report.emit("missing_latency_p99_ms", r.busy.p99, "ms")?;
        report.emit("missing_latency_p50_ms", r.busy.p50, "ms")?;
        report.emit("missing_latency_max_ms", r.busy.max, "ms")?;
        report.emit("missing_latency_samples", r.busy.count as f64, "reports")?;
        report.emit("quiet_missing_latency_p99_ms", r.quiet.p99, "ms")?;
        report.emit("quiet_missing_latency_p50_ms", r.quiet.p50, "ms")?;
        report.emit("quiet_missing_latency_max_ms", r.quiet.max, "ms")?;
        report.emit(
            "quiet_missing_latency_samples",
            r.quiet.count as f64,
            "reports",
        )?;
        report.emit("missing_detect_p99_ms", r.busy_detect.p99, "ms")?;
        report.emit("quiet_missing_detect_p99_ms", r.quiet_detect.p99, "ms")?;
        report.emit("quiet_missing_detect_p50_ms", r.quiet_detect.p50, "ms")?;
        report.emit("busy_false_missing", r.busy_false_missing as f64, "reports")?;
        let events_per_s = r.sent.events() as f64 / args.latency_seconds as f64;
        report.emit("latency_load_events_per_s", events_per_s, "events/s")?;
        if let Some(ms) = r.mean_commit_ms {
            report.emit("latency_mean_commit_ms", ms, "ms")?;
        }
    }
    if args.phases.contains(&Phase::State) {
        let names = fresh("state", args, made);
        let r = state::measure(
            settings,
            &names,
            args.open_launches,
            default_window,
            timeout,
        )?;
        report.emit(
            "state_bytes_per_open_launch",
            r.bytes_per_open_launch(),
            "bytes",
        )?;
        report.emit(
            "contacts_state_bytes_per_open_launch",
            r.contact_bytes_per_open_launch(),
            "bytes",
        )?;
        report.emit(
            "timer_state_bytes_per_open_launch",
            r.timer_bytes_per_open_launch(),
            "bytes",
        )?;
        report.emit("state_open_launches", r.open_launches as f64, "launches")?;
    }
    if args.phases.contains(&Phase::Restore) {
        let names = fresh("restore", args, made);
        let r = restore::measure(
            settings,
            &names,
            args.restore_windows,
            default_window,
            timeout,
        )?;
        report.emit("restore_windows_per_s", r.windows_per_s(), "windows/s")?;
        report.emit("restore_windows", r.windows as f64, "windows")?;
        report.emit("restore_seconds", r.seconds, "s")?;
        report.emit("restored_records", r.records as f64, "records")?;
        report.emit(
            "restore_start_to_restored_seconds",
            r.start_to_restored_seconds,
            "s",
        )?;
        report.emit("restore_open_timers", r.open_timers as f64, "timers")?;
    }
    Ok(())
}

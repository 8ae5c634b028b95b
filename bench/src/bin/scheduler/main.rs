//! `cargo xtask bench scheduler`: the scheduler's numbers (issue 5), JSON
//! lines on stdout.
//!
//! 1. `pure_allocations_per_s`: the domain crate's [`SlotGrid`] allocator,
//!    no Kafka, on a grid holding `--booked` (100,000) jobs under a real
//!    calling window (weekdays 08:00–21:00 America/Chicago). Each round
//!    allocates a job at a spread earliest time and cancels it, so the grid
//!    stays at its size. Beside it: the same rounds through the scheduler's
//!    own `place_job` (window placement, reasons, then the allocator), and a
//!    worst case where every request lands behind the whole booked stretch.
//! 2. `kafka_allocations_per_s`: `--requests` plan requests preloaded on
//!    `schedule-requests` (keyed by tenant, spread over `--tenants`), then
//!    the real scheduler processor on the exactly-once runtime, timed from
//!    its first record to the last `allocated` event visible to a
//!    `read_committed` reader.
//! 3. `p99_allocation_latency_ms`: plan requests at a steady `--latency-rate`,
//!    from the produce call to the `allocated` event (matched by its
//!    causation id) visible to a `read_committed` reader.
//!
//! Every job is planned days ahead (`--lead-days`) so no launch timer fires
//! during the run, and over enough tenants that nothing is refused for want
//! of slots (a refusal fails the run: it would not be an allocation).
//! Topics are fresh per phase and deleted afterwards unless `--keep-topics`.
//!
//! [`SlotGrid`]: callstream_domain::slot_grid::SlotGrid

mod latency;
mod pure;
mod stack;
mod throughput;

use std::time::Duration;

use anyhow::{bail, Result};
use callstream_bench::report::Report;
use callstream_platform::KafkaSettings;
use clap::Parser;
use tracing::info;

use self::stack::{Names, Workload};

fn main() -> Result<()> {
    callstream_bench::init("scheduler", &["callstream_runtime"]);
    run(&Args::parse(), &mut Report::stdout("scheduler"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// The pure allocator (no Kafka).
    Pure,
    /// Exactly-once throughput of the scheduler processor.
    Kafka,
    /// Request-to-allocation latency at a steady rate.
    Latency,
}

/// The scheduler: pure allocator rate, exactly-once allocations/s through
/// Kafka, and request-to-allocation latency.
#[derive(Debug, Parser)]
#[command(name = "scheduler")]
pub struct Args {
    /// Jobs booked on the grid before the pure allocator is timed.
    #[arg(long, default_value_t = 100_000)]
    booked: u64,
    /// Allocate-and-cancel rounds of the pure measurement.
    #[arg(long, default_value_t = 200_000)]
    rounds: u64,
    /// Requests of the pure worst case (each lands behind every booked job).
    #[arg(long, default_value_t = 2_000)]
    frontier_rounds: u64,
    /// Plan requests of the Kafka throughput run.
    #[arg(long, default_value_t = 200_000)]
    requests: u64,
    /// Tenants the requests are spread over (each tenant is one grid, and
    /// the key that picks the partition).
    #[arg(long, default_value_t = 200)]
    tenants: u64,
    /// Launches a slot may hold (control setting `launches_per_slot`).
    #[arg(long, default_value_t = 1)]
    launches_per_slot: u32,
    /// Days from now to the earliest time of the first job.
    #[arg(long, default_value_t = 2)]
    lead_days: u64,
    /// Days over which the jobs' earliest times are spread.
    #[arg(long, default_value_t = 7)]
    spread_days: u64,
    /// Partitions of every topic.
    #[arg(long, default_value_t = 12)]
    partitions: i32,
    /// Plan requests per second of the latency run.
    #[arg(long, default_value_t = 2_000)]
    latency_rate: u64,
    /// Seconds of the latency run.
    #[arg(long, default_value_t = 15)]
    latency_seconds: u64,
    /// Which phases to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_values = ["pure", "kafka", "latency"])]
    phases: Vec<Phase>,
    /// Most seconds a Kafka phase may take before the run fails.
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
    /// Leave the benchmark's topics in place (to look at them).
    #[arg(long)]
    keep_topics: bool,
}

pub fn run(args: &Args, report: &mut Report) -> Result<()> {
    if args.booked == 0
        || args.rounds == 0
        || args.frontier_rounds == 0
        || args.requests == 0
        || args.tenants == 0
        || args.launches_per_slot == 0
        || args.spread_days == 0
        || args.partitions < 1
        || args.latency_rate == 0
        || args.latency_seconds == 0
    {
        bail!("every size, rate and count must be positive");
    }
    if args.phases.contains(&Phase::Pure) {
        run_pure(args, report)?;
    }
    let kafka_phases = args.phases.iter().any(|p| *p != Phase::Pure);
    if !kafka_phases {
        return Ok(());
    }
    let settings = KafkaSettings::from_env("callstream-bench");
    stack::check_reachable(&settings)?;
    let mut made: Vec<String> = Vec::new();
    let result = run_kafka_phases(args, &settings, report, &mut made);
    callstream_bench::kafka::clean_up(&settings, &made, args.keep_topics);
    result
}

fn run_pure(args: &Args, report: &mut Report) -> Result<()> {
    let sizes = pure::Sizes {
        booked: args.booked,
        rounds: args.rounds,
        frontier_rounds: args.frontier_rounds,
    };
    info!(?sizes, "pure allocator");
    let result = pure::measure(sizes)?;
    report.emit(
        "pure_allocations_per_s",
        result.spread_per_s,
        "allocations/s",
    )?;
    report.emit(
        "pure_place_job_per_s",
        result.place_job_per_s,
        "allocations/s",
    )?;
    report.emit(
        "pure_allocations_rules_on_per_s",
        result.spread_rules_on_per_s,
        "allocations/s",
    )?;
    report.emit(
        "pure_place_job_rules_on_per_s",
        result.place_job_rules_on_per_s,
        "allocations/s",
    )?;
    report.emit(
        "pure_rules_on_ratio",
        result.spread_rules_on_per_s / result.spread_per_s,
        "ratio",
    )?;
    report.emit(
        "pure_frontier_allocations_per_s",
        result.frontier_per_s,
        "allocations/s",
    )?;
    report.emit("pure_booked_jobs", args.booked as f64, "jobs")?;
    Ok(())
}

fn run_kafka_phases(
    args: &Args,
    settings: &KafkaSettings,
    report: &mut Report,
    made: &mut Vec<String>,
) -> Result<()> {
    let workload = Workload {
        tenants: args.tenants,
        launches_per_slot: args.launches_per_slot,
        lead: Duration::from_secs(args.lead_days * 86_400),
        spread: Duration::from_secs(args.spread_days * 86_400),
    };
    let timeout = Duration::from_secs(args.timeout_s);
    if args.phases.contains(&Phase::Kafka) {
        workload.check_capacity(args.requests)?;
        let names = Names::fresh("tput", args.partitions);
        made.extend(names.topic_names());
        info!(app = %names.app, requests = args.requests, "exactly-once throughput");
        let result = throughput::measure(settings, &names, &workload, args.requests, timeout)?;
        report.emit("kafka_allocations_per_s", result.per_s(), "allocations/s")?;
        report.emit("kafka_requests", args.requests as f64, "requests")?;
        report.emit("kafka_seconds", result.seconds, "s")?;
        report.emit("kafka_startup_seconds", result.startup_seconds, "s")?;
        report.emit("kafka_commits", result.commits as f64, "commits")?;
        if let Some(ms) = result.mean_commit_ms {
            report.emit("kafka_mean_commit_ms", ms, "ms")?;
        }
        if let Some(cpu) = result.cpu.bench {
            report.emit("kafka_bench_process_cpu_s", cpu, "s")?;
        }
        if let Some(cpu) = result.cpu.broker {
            report.emit("kafka_broker_cpu_s", cpu, "s")?;
        }
    }
    if args.phases.contains(&Phase::Latency) {
        let total = args.latency_rate * args.latency_seconds;
        workload.check_capacity(total)?;
        let names = Names::fresh("lat", args.partitions);
        made.extend(names.topic_names());
        let pace = latency::Pace {
            rate_per_s: args.latency_rate,
            duration: Duration::from_secs(args.latency_seconds),
        };
        info!(app = %names.app, rate = pace.rate_per_s, "request-to-allocation latency");
        let result = latency::measure(settings, &names, &workload, pace)?;
        let s = result.summary;
        report.emit("p99_allocation_latency_ms", s.p99, "ms")?;
        report.emit("p50_allocation_latency_ms", s.p50, "ms")?;
        report.emit("max_allocation_latency_ms", s.max, "ms")?;
        report.emit("mean_allocation_latency_ms", s.mean, "ms")?;
        report.emit("latency_samples", s.count as f64, "requests")?;
        report.emit("latency_rate", args.latency_rate as f64, "requests/s")?;
        if let Some(ms) = result.mean_commit_ms {
            report.emit("latency_mean_commit_ms", ms, "ms")?;
        }
    }
    Ok(())
}

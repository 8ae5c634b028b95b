//! `cargo xtask bench crm`: the CRM dispatcher (issue 8) against the CRM
//! simulator, both in this process (the simulator on a loopback port, the
//! dispatcher on the processor runtime on a thread of its own, the broker
//! the dev stack's), on fresh topics:
//!
//! 1. `unlimited`: the simulator's limit and the dispatcher's limiter lifted;
//!    N preloaded commands over thousands of contacts, timed from the first
//!    record the dispatcher handles to the N-th result visible to a
//!    `read_committed` reader: `crm_commands_per_s` (target ≥ 2,000/s).
//! 2. `limited`: HubSpot's 100 requests per 10 s in the simulator, the
//!    dispatcher's limiter at its defaults, a backlog that never runs out;
//!    over a steady stretch (`--limited-seconds`, 60 by default), the share
//!    of the allowed rate the CRM saw: `crm_limit_utilisation` (target ≥
//!    0.9), and the 429s it answered over the whole run: `crm_429s` (near 0).
//!    The dispatcher aims at `1 - headroom` of the limit (0.95 by default),
//!    so that is the ceiling of the utilisation.
//!
//! 3. `settle`: HubSpot as it is (the simulator's default long-tailed search
//!    lag, 5 searches per second) with 2% of writes applied and answered too
//!    late, the rate limit lifted, the dispatcher at its defaults; commands
//!    at a fixed rate, and the time from each command to its result:
//!    `settle_p50_ms`, `settle_p99_ms` (and of the ambiguous ones alone).
//!
//! Each checks that no create was written twice. Topics are deleted
//! afterwards unless `--keep-topics`.

mod limited;
mod load;
mod settle;
mod stack;
mod unlimited;

use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_crm_dispatcher::RateLimit;
use callstream_platform::KafkaSettings;
use clap::Parser;
use rdkafka::consumer::{BaseConsumer, Consumer};
use tracing::info;

use callstream_bench::report::{Report, Summary};

use self::stack::Names;

fn main() -> Result<()> {
    callstream_bench::init("crm", &["callstream_sim_crm"]);
    run(&Args::parse(), &mut Report::stdout("crm"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// Commands/s with the CRM's limit lifted.
    Unlimited,
    /// Utilisation of the CRM's limit, and 429s.
    Limited,
    /// Command to applied with HubSpot's search lag and ambiguous writes.
    Settle,
}

/// The CRM dispatcher against the CRM simulator: commands/s without a
/// limit; utilisation of the CRM's rate limit and 429s with it.
#[derive(Debug, Parser)]
#[command(name = "crm")]
pub struct Args {
    /// Commands of the unlimited run. Each contact's commands go one after
    /// another, two commits each at least, so commands per contact (8 by
    /// default) sets how many rounds of commits the run spans.
    #[arg(long, default_value_t = 40_000)]
    commands: u64,
    /// Contacts of the unlimited run (one command in flight per contact).
    #[arg(long, default_value_t = 5_000)]
    contacts: u64,
    /// CRM requests in flight at once in the unlimited run (the product's
    /// default is 32).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Partitions of the command and result topics.
    #[arg(long, default_value_t = 12)]
    partitions: i32,
    /// The dispatcher's commit interval, ms.
    #[arg(long, default_value_t = 100)]
    commit_interval_ms: u64,
    /// Seconds of the steady stretch the utilisation is measured over
    /// (shorter than a few windows of the limit says little).
    #[arg(long, default_value_t = 60)]
    limited_seconds: u64,
    /// Seconds after the first CRM request before the stretch starts.
    #[arg(long, default_value_t = 5)]
    limited_warmup_seconds: u64,
    /// Contacts of the limited run.
    #[arg(long, default_value_t = 50)]
    limited_contacts: u64,
    /// CRM requests in flight at once in the limited run.
    #[arg(long, default_value_t = 32)]
    limited_concurrency: usize,
    /// Requests per window the CRM allows (HubSpot: 100).
    #[arg(long, default_value_t = RateLimit::default().max_requests)]
    limit_max: u32,
    /// The CRM's window, ms (HubSpot: 10,000).
    #[arg(long, default_value_t = 10_000)]
    limit_window_ms: u64,
    /// Share of the limit the dispatcher leaves unused (its default).
    #[arg(long, default_value_t = RateLimit::default().headroom)]
    headroom: f64,
    /// Commands of the settle run.
    #[arg(long, default_value_t = 1_200)]
    settle_commands: u64,
    /// Commands per second of the settle run.
    #[arg(long, default_value_t = 20.0)]
    settle_rate: f64,
    /// Share of writes the settle run's CRM applies and answers too late.
    #[arg(long, default_value_t = 0.02)]
    settle_ambiguous_share: f64,
    /// Which phases to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_values = ["unlimited", "limited", "settle"])]
    phases: Vec<Phase>,
    /// Most seconds any phase may take before the run fails.
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
    /// Leave the benchmark's topics in place (to look at them).
    #[arg(long)]
    keep_topics: bool,
}

pub fn run(args: &Args, report: &mut Report) -> Result<()> {
    if args.commands == 0 || args.contacts == 0 || args.limited_contacts == 0 {
        bail!("--commands, --contacts and --limited-contacts must be positive");
    }
    if args.partitions < 1 || args.concurrency == 0 || args.limited_concurrency == 0 {
        bail!("--partitions and the concurrencies must be positive");
    }
    if args.limit_max == 0 || args.limit_window_ms == 0 || args.limited_seconds == 0 {
        bail!("--limit-max, --limit-window-ms and --limited-seconds must be positive");
    }
    let settings = KafkaSettings::from_env("callstream-bench");
    check_broker(&settings)?;
    // The simulator's server (and the HTTP client's I/O) run here; the
    // dispatcher brings its own event-loop thread and effect executor.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-crm")
        .enable_all()
        .build()
        .context("starting a tokio runtime")?;
    let mut made: Vec<String> = Vec::new();
    let result = run_phases(args, &settings, &runtime, report, &mut made);
    callstream_bench::kafka::clean_up(&settings, &made, args.keep_topics);
    runtime.shutdown_timeout(Duration::from_secs(5));
    result
}

/// Fails early and plainly when the broker is not there.
fn check_broker(settings: &KafkaSettings) -> Result<()> {
    let consumer: BaseConsumer = settings
        .base_config()
        .create()
        .context("creating a Kafka client")?;
    consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .with_context(|| {
            format!(
                "no Kafka broker at {} (is the stack up? `cargo xtask up`)",
                settings.bootstrap_servers
            )
        })?;
    Ok(())
}

fn run_phases(
    args: &Args,
    settings: &KafkaSettings,
    runtime: &tokio::runtime::Runtime,
    report: &mut Report,
    made: &mut Vec<String>,
) -> Result<()> {
    let commit_interval = Duration::from_millis(args.commit_interval_ms);
    let timeout = Duration::from_secs(args.timeout_s);
    report.emit("partitions", f64::from(args.partitions), "partitions")?;
    report.emit("commit_interval_ms", args.commit_interval_ms as f64, "ms")?;
    if args.phases.contains(&Phase::Unlimited) {
        let names = Names::fresh("unl", args.partitions);
        made.extend(names.all_topics());
        info!(app = %names.app, "unlimited throughput");
        let load = unlimited::Load {
            commands: args.commands,
            contacts: args.contacts,
            concurrency: args.concurrency,
            commit_interval,
            timeout,
        };
        let found = unlimited::measure(settings, runtime, &names, load)?;
        report.emit("crm_commands_per_s", found.commands_per_s(), "commands/s")?;
        report.emit("unlimited_seconds", found.seconds, "s")?;
        report.emit("unlimited_startup_seconds", found.startup_seconds, "s")?;
        report.emit("unlimited_commands", args.commands as f64, "commands")?;
        report.emit("unlimited_contacts", args.contacts as f64, "contacts")?;
        report.emit("unlimited_concurrency", args.concurrency as f64, "requests")?;
        report.emit("unlimited_applied", found.tally.done() as f64, "commands")?;
        report.emit("unlimited_results", found.tally.total() as f64, "results")?;
        report.emit(
            "unlimited_crm_requests",
            found.crm_requests as f64,
            "requests",
        )?;
        report.emit(
            "unlimited_duplicate_creates",
            found.duplicates as f64,
            "creates",
        )?;
        report.emit("unlimited_commits", found.commits as f64, "commits")?;
        if let Some(ms) = found.mean_commit_ms {
            report.emit("unlimited_mean_commit_ms", ms, "ms")?;
        }
        if let Some(cpu) = found.cpu.bench {
            report.emit("unlimited_bench_process_cpu_s", cpu, "s")?;
        }
        if let Some(cpu) = found.cpu.broker {
            report.emit("unlimited_broker_cpu_s", cpu, "s")?;
        }
        check_outcome("unlimited", &found.tally, found.duplicates)?;
    }
    if args.phases.contains(&Phase::Limited) {
        let names = Names::fresh("lim", args.partitions);
        made.extend(names.all_topics());
        let limit = RateLimit {
            max_requests: args.limit_max,
            window: Duration::from_millis(args.limit_window_ms),
            headroom: args.headroom,
        };
        info!(app = %names.app, ?limit, seconds = args.limited_seconds, "limited utilisation");
        let load = limited::Load {
            limit,
            contacts: args.limited_contacts,
            concurrency: args.limited_concurrency,
            warmup: Duration::from_secs(args.limited_warmup_seconds),
            seconds: Duration::from_secs(args.limited_seconds),
            commit_interval,
            timeout,
        };
        let found = limited::measure(settings, runtime, &names, load)?;
        report.emit("crm_limit_utilisation", found.utilisation, "ratio")?;
        report.emit("crm_429s", found.throttled as f64, "responses")?;
        report.emit("limited_requests_per_s", found.requests_per_s, "requests/s")?;
        report.emit("limited_allowed_per_s", load.allowed_per_s(), "requests/s")?;
        report.emit("limited_headroom", args.headroom, "ratio")?;
        report.emit("limited_seconds", args.limited_seconds as f64, "s")?;
        report.emit(
            "limited_max_requests_in_window",
            f64::from(found.max_in_window),
            "requests",
        )?;
        report.emit(
            "limited_crm_requests",
            found.crm_requests as f64,
            "requests",
        )?;
        report.emit("limited_commands_loaded", found.commands as f64, "commands")?;
        report.emit("limited_applied", found.tally.done() as f64, "commands")?;
        report.emit(
            "limited_duplicate_creates",
            found.duplicates as f64,
            "creates",
        )?;
        check_outcome("limited", &found.tally, found.duplicates)?;
    }
    if args.phases.contains(&Phase::Settle) {
        let names = Names::fresh("settle", args.partitions);
        made.extend(names.all_topics());
        info!(app = %names.app, commands = args.settle_commands, rate = args.settle_rate,
            "command to applied, HubSpot's search lag and ambiguous writes");
        let load = settle::Load {
            commands: args.settle_commands,
            contacts: args.limited_contacts.max(200),
            per_second: args.settle_rate,
            ambiguous_share: args.settle_ambiguous_share,
            commit_interval,
            timeout,
        };
        let found = settle::measure(settings, runtime, &names, load)?;
        let all = Summary::of(found.latencies_ms.clone()).context("no command applied")?;
        report.emit("settle_p50_ms", all.p50, "ms")?;
        report.emit("settle_p99_ms", all.p99, "ms")?;
        report.emit("settle_max_ms", all.max, "ms")?;
        report.emit("settle_applied", all.count as f64, "commands")?;
        let searched = Summary::of(found.found_by_search.clone());
        report.emit(
            "settle_found_by_search",
            searched.map_or(0, |s| s.count) as f64,
            "commands",
        )?;
        if let Some(searched) = searched {
            report.emit("settle_ambiguous_p50_ms", searched.p50, "ms")?;
            report.emit("settle_ambiguous_p99_ms", searched.p99, "ms")?;
        }
        report.emit(
            "settle_late_answers",
            found.late_answers as f64,
            "responses",
        )?;
        report.emit("settle_search_lag_p50_ms", found.lag_p50_ms as f64, "ms")?;
        report.emit("settle_search_lag_p99_ms", found.lag_p99_ms as f64, "ms")?;
        report.emit("settle_search_lag_max_ms", found.lag_max_ms as f64, "ms")?;
        report.emit(
            "settle_max_searches_in_second",
            f64::from(found.max_searches_in_second),
            "searches",
        )?;
        report.emit(
            "settle_search_429s",
            found.search_throttled as f64,
            "responses",
        )?;
        report.emit(
            "settle_duplicate_creates",
            found.duplicates as f64,
            "creates",
        )?;
        if found.other > 0 || found.duplicates > 0 {
            bail!(
                "settle: {} commands did not apply, {} creates written twice",
                found.other,
                found.duplicates
            );
        }
    }
    Ok(())
}

/// A run whose commands failed or were written twice measured something
/// else than the dispatcher's happy path: fail rather than stand by it.
fn check_outcome(phase: &str, tally: &load::Tally, duplicates: u64) -> Result<()> {
    if !tally.other.is_empty() || tally.undecodable > 0 {
        bail!(
            "{phase}: not every command applied: {:?}, {} undecodable results",
            tally.other,
            tally.undecodable
        );
    }
    if duplicates > 0 {
        bail!("{phase}: the CRM holds {duplicates} duplicate creates");
    }
    Ok(())
}

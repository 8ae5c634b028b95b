//! `cargo xtask bench gateway`: the ingest gateway's throughput and latency
//! (issue 4), with its one promise checked: every 202 is on the topic.
//!
//! The gateway runs in this process exactly as `callstream gateway` runs it
//! (`serve` on a real socket, the real idempotent `acks=all` producer, Avro
//! values) on fresh topics; a load generator on loopback posts signed
//! Twilio status callbacks, each a distinct call, at rising concurrency
//! (closed loop: each of N tasks sends its next request when the previous
//! one is answered). Per level, after a warm-up, it measures accepted
//! webhooks per second and the 202's p50/p99/p99.9 latency, and splits the
//! CPU used among the gateway's threads, librdkafka's, the load
//! generator's and the broker's. The headline lines (`accepted_per_s`,
//! `p50_ms`, `p99_ms`, `p999_ms`, `errors`, `concurrency`) are of the best
//! level: the highest rate with no errors and p99 within `--p99-budget-ms`
//! (or, if none qualifies, the highest rate, with a warning). Finally the
//! gateway stops (flushing its producer) and a `read_committed` reader
//! matches the topic against every 202's event id: `lost` must be 0.
//!
//! Everything shares the machine's cores with the broker, so a level's
//! rate is what the three together sustain; the `cpu_*_us_per_req` lines
//! say who spent the time. Topics are deleted afterwards unless `--keep-topics`.
//!
//! Then the open loop (issue 23, item 3; `open_loop_phase`, `open_loop`): a
//! closed loop hides queueing (a slow answer delays the next send, so the
//! slow moments are sampled less), so its p99 is optimistic. A fresh gateway
//! takes requests at fixed arrival rates (5,000, 10,000 and 15,000/s, then a
//! search for the highest rate with p99 within budget and no errors), each
//! request timed from its intended send time, errors and timeouts included
//! in the percentiles; then its own loss check (`open_loop_*` lines).
//!
//! Then the registry's cost (issue 21): the best level's concurrency (or
//! `--framing-concurrency`) run again, once with the gateway writing Avro
//! single-object encoding and once the Confluent wire format with ids
//! registered in the stack's registry, each a fresh gateway in a child
//! process of its own (the framing is chosen once per process), alternating
//! over `--framing-rounds` rounds, each with its loss check (`framing_*`
//! lines, tagged with the framing and round); then the mean of each framing
//! and the `confluent_over_single_object_*` ratios (`callstream_bench::framing`).
//!
//! `--phases` picks among the three (`closed-loop`, `open-loop`, `framing`;
//! all by default, in that order): `--phases open-loop` runs the open loop alone.

mod http;
mod load;
mod open_loop;
mod open_loop_phase;
mod server;
mod threads;
mod verify;

use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_bench::framing::{self, Framing};
use callstream_bench::report::{percentile, Report};
use callstream_platform::KafkaSettings;
use clap::Parser;
use tracing::{info, warn};

use self::load::{Level, Plan, Target};
use self::server::{Gateway, Setup};

/// The load generator's runtime and what it aims at: `gateway`, for a
/// fresh run of callbacks.
fn load_against(
    args: &Args,
    gateway: &Gateway,
    setup: &Setup,
) -> Result<(tokio::runtime::Runtime, Arc<Target>)> {
    let load_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads.max(1))
        .thread_name(load::THREAD_NAME)
        .enable_all()
        .build()
        .context("starting the load generator's runtime")?;
    let target = Arc::new(Target {
        addr: gateway.addr,
        base_url: gateway.base_url.clone(),
        run: uuid::Uuid::new_v4().as_u64_pair().0,
        contacts: args.contacts,
        // Above the produce timeout, so a slow produce shows as the gateway's 503.
        timeout: setup.produce_timeout * 2,
    });
    Ok((load_runtime, target))
}

fn main() -> Result<()> {
    callstream_bench::init("gateway", &[]);
    let args = Args::parse();
    callstream_bench::framing::main_or_child(
        "gateway",
        args.child_framing,
        args.child_round,
        |framing, report| child(&args, framing, report),
        |report| run(&args, report),
    )
}

/// The parts of a run, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// The closed-loop levels (`--concurrency`), their best, and their loss check.
    ClosedLoop,
    /// Fixed arrival rates, latency from intended send times, the highest rate within budget.
    OpenLoop,
    /// The best closed-loop level again under both framings (`--framing-rounds`).
    Framing,
}

/// The ingest gateway: signed Twilio callbacks per second at rising
/// concurrency, 202 latency, and a loss check against the topic.
#[derive(Debug, Parser)]
#[command(name = "gateway")]
struct Args {
    /// Which phases to run, comma-separated (they run in the order listed here).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_values = ["closed-loop", "open-loop", "framing"]
    )]
    phases: Vec<Phase>,
    /// Concurrent requests of each level (comma-separated, run in order).
    #[arg(long, value_delimiter = ',', default_values_t = [8, 32, 64, 128, 256])]
    concurrency: Vec<usize>,
    /// Measured seconds of each level.
    #[arg(long, default_value_t = 8)]
    seconds: u64,
    /// Seconds each level runs before its measurement starts.
    #[arg(long, default_value_t = 2)]
    warmup_seconds: u64,
    /// A level qualifies as sustained only with p99 at most this (ms) and no errors.
    #[arg(long, default_value_t = 25.0)]
    p99_budget_ms: f64,
    /// Open-loop rates always measured, webhooks/s (comma-separated, run in order).
    #[arg(long, value_delimiter = ',', default_values_t = [5_000, 10_000, 15_000])]
    open_loop_rates: Vec<u64>,
    /// Measured seconds of each open-loop level (after `--warmup-seconds` at its rate).
    #[arg(long, default_value_t = 10)]
    open_loop_seconds: u64,
    /// Most extra open-loop levels the search for the highest rate within budget may run.
    #[arg(long, default_value_t = 5)]
    open_loop_search_steps: u32,
    /// The search's step up above the highest rate within budget, webhooks/s.
    #[arg(long, default_value_t = 5_000)]
    open_loop_step: u64,
    /// The search stops once the highest pass and the lowest failure are this close, webhooks/s.
    #[arg(long, default_value_t = 500)]
    open_loop_resolution: u64,
    /// Most HTTP connections the open-loop generator opens (the gateway's cap is 1,024).
    #[arg(long, default_value_t = 1_000)]
    open_loop_connections: usize,
    /// Most open-loop requests in flight (waiting for a connection included); one due
    /// beyond it is not sent and counts as an error with the whole timeout as latency.
    #[arg(long, default_value_t = 50_000)]
    open_loop_max_in_flight: usize,
    /// Partitions of the call-events topic.
    #[arg(long, default_value_t = 12)]
    partitions: i32,
    /// Distinct contacts (record keys) the requests cycle through.
    #[arg(long, default_value_t = 10_000)]
    contacts: u64,
    /// Worker threads of the gateway's tokio runtime.
    #[arg(long, default_value_t = 2)]
    server_threads: usize,
    /// Worker threads of the load generator's tokio runtime.
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// The gateway's produce timeout, ms (past it: 503).
    #[arg(long, default_value_t = 5_000)]
    produce_timeout_ms: u64,
    /// The gateway's producer linger, ms (its `produce_linger`; default: the gateway's).
    #[arg(long)]
    linger_ms: Option<u64>,
    /// Most seconds the read-back of the topic may take.
    #[arg(long, default_value_t = 60)]
    readback_timeout_s: u64,
    /// Leave the benchmark's topics in place (to look at them).
    #[arg(long)]
    keep_topics: bool,
    /// Runs of each framing in the comparison, the order alternating (0: none).
    #[arg(long, default_value_t = 2)]
    framing_rounds: u32,
    /// Concurrency of the comparison's runs (default: the best level's).
    #[arg(long)]
    framing_concurrency: Option<usize>,
    /// The framings to compare (one alone: its figures, no ratio).
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["single-object", "confluent"])]
    framings: Vec<Framing>,
    /// Run as the child measuring this framing (the comparison starts them).
    #[arg(long, value_enum, hide = true)]
    child_framing: Option<Framing>,
    /// The round of a child run.
    #[arg(long, hide = true, default_value_t = 1)]
    child_round: u32,
}

fn run(args: &Args, report: &mut Report) -> Result<()> {
    if args.concurrency.is_empty() || args.concurrency.contains(&0) {
        bail!("--concurrency needs at least one level, each above 0");
    }
    if args.seconds == 0 || args.partitions < 1 || args.contacts == 0 {
        bail!("--seconds, --partitions and --contacts must be positive");
    }
    if !(args.p99_budget_ms.is_finite() && args.p99_budget_ms > 0.0) {
        bail!("--p99-budget-ms must be a positive number");
    }
    if args.framing_concurrency == Some(0) {
        bail!("--framing-concurrency must be above 0");
    }
    let phase = |p: Phase| args.phases.contains(&p);
    if phase(Phase::OpenLoop)
        && (args.open_loop_seconds == 0
            || args.open_loop_connections == 0
            || args.open_loop_rates.contains(&0))
    {
        bail!("--open-loop-seconds, --open-loop-connections and --open-loop-rates must be above 0");
    }
    let framing = phase(Phase::Framing) && args.framing_rounds > 0;
    if framing && !phase(Phase::ClosedLoop) && args.framing_concurrency.is_none() {
        bail!("the framing phase without the closed-loop one needs --framing-concurrency");
    }
    let settings = KafkaSettings::from_env("callstream-bench");
    preflight(&settings)?;
    let mut best_concurrency = None;
    if phase(Phase::ClosedLoop) {
        let mut made = Vec::new();
        let result = measure(args, &settings, report, &mut made);
        callstream_bench::kafka::clean_up(&settings, &made, args.keep_topics);
        best_concurrency = Some(result?);
    }
    if phase(Phase::OpenLoop) {
        let mut made = Vec::new();
        let result = open_loop_phase::run(args, &settings, report, &mut made);
        callstream_bench::kafka::clean_up(&settings, &made, args.keep_topics);
        result?;
    }
    if framing {
        compare_framings(args, report, best_concurrency)?;
    }
    Ok(())
}

fn setup(args: &Args) -> Setup {
    Setup {
        partitions: args.partitions,
        threads: args.server_threads,
        produce_timeout: Duration::from_millis(args.produce_timeout_ms),
        linger: args.linger_ms.map(Duration::from_millis),
    }
}

/// The levels, their best, and the loss check; returns the best level's concurrency.
fn measure(
    args: &Args,
    settings: &KafkaSettings,
    report: &mut Report,
    made: &mut Vec<String>,
) -> Result<usize> {
    let setup = setup(args);
    let gateway = Gateway::start(settings, setup, None, made)?;
    info!(url = %gateway.base_url, topic = %gateway.call_events, "gateway started");
    let (load_runtime, target) = load_against(args, &gateway, &setup)?;
    let next = Arc::new(AtomicU64::new(0));

    let mut levels = Vec::new();
    let mut acknowledged: HashSet<u128> = HashSet::new();
    let mut answered: usize = 0;
    for &concurrency in &args.concurrency {
        let plan = Plan {
            concurrency,
            warmup: Duration::from_secs(args.warmup_seconds),
            measure: Duration::from_secs(args.seconds),
        };
        info!(concurrency, "level");
        let mut level = load_runtime.block_on(load::level(&target, &next, &gateway.state, plan))?;
        gateway.check()?;
        emit_level(report, &level)?;
        let ids = std::mem::take(&mut level.accepted_ids);
        answered += ids.len();
        acknowledged.extend(ids);
        if acknowledged.len() != answered {
            bail!("the gateway answered the same event id for two distinct calls");
        }
        levels.push(level);
    }
    drop(load_runtime);
    let call_events = gateway.call_events.clone();
    gateway.stop()?;

    let best = best_level(&levels, args.p99_budget_ms);
    emit_best(report, "", best, Some(args.p99_budget_ms))?;
    let best_concurrency = best.concurrency;
    let loss = verify::check(
        settings,
        &call_events,
        args.partitions,
        &acknowledged,
        Duration::from_secs(args.readback_timeout_s),
        None,
    )?;
    report.emit("lost", loss.lost as f64, "events")?;
    report.emit("accepted_total", acknowledged.len() as f64, "events")?;
    report.emit("records_on_topic", loss.records as f64, "records")?;
    report.emit(
        "unacknowledged_on_topic",
        loss.unacknowledged as f64,
        "records",
    )?;
    report.emit("duplicates_on_topic", loss.duplicates as f64, "records")?;
    loss.ensure_complete()?;
    Ok(best_concurrency)
}

/// What the comparison's runs report, per child, that the summary compares.
const COMPARED: &[&str] = &[
    "framing_accepted_per_s",
    "framing_p50_ms",
    "framing_p99_ms",
    "framing_cpu_gateway_us_per_req",
];

/// A child process per framing and round (this executable again, with this
/// run's arguments and the comparison's concurrency), then the summary.
fn compare_framings(
    args: &Args,
    report: &mut Report,
    best_concurrency: Option<usize>,
) -> Result<()> {
    let framings = framing::available(&args.framings, report)?;
    let mut passed: Vec<String> = std::env::args().skip(1).collect();
    if args.framing_concurrency.is_none() {
        let best = best_concurrency.context("no closed-loop level to take the concurrency of")?;
        passed.extend(["--framing-concurrency".into(), best.to_string()]);
    }
    let mut lines = Vec::new();
    for (round, framing) in framing::schedule(&framings, args.framing_rounds) {
        lines.extend(framing::run_child(report, &passed, framing, round)?);
    }
    framing::summarise(report, &lines, COMPARED)
}

/// A child of [`compare_framings`]: a fresh gateway writing `framing`, one
/// level at `--framing-concurrency`, its loss check (and that every record
/// on the topic is in `framing`); every line tagged with framing and round.
fn child(args: &Args, framing: Framing, report: &mut Report) -> Result<()> {
    let concurrency = args
        .framing_concurrency
        .filter(|c| *c > 0)
        .context("a child run needs --framing-concurrency")?;
    let settings = KafkaSettings::from_env("callstream-bench");
    preflight(&settings)?;
    let mut made = Vec::new();
    let result = child_level(args, &settings, framing, concurrency, report, &mut made);
    callstream_bench::kafka::clean_up(&settings, &made, args.keep_topics);
    result
}

fn child_level(
    args: &Args,
    settings: &KafkaSettings,
    framing: Framing,
    concurrency: usize,
    report: &mut Report,
    made: &mut Vec<String>,
) -> Result<()> {
    let setup = setup(args);
    let gateway = Gateway::start(settings, setup, Some(framing), made)?;
    info!(url = %gateway.base_url, framing = framing.label(), concurrency, "gateway started");
    let (load_runtime, target) = load_against(args, &gateway, &setup)?;
    let plan = Plan {
        concurrency,
        warmup: Duration::from_secs(args.warmup_seconds),
        measure: Duration::from_secs(args.seconds),
    };
    let next = Arc::new(AtomicU64::new(0));
    let mut level = load_runtime.block_on(load::level(&target, &next, &gateway.state, plan))?;
    gateway.check()?;
    drop(load_runtime);
    let call_events = gateway.call_events.clone();
    gateway.stop()?;
    if !level.failures.is_empty() {
        warn!(concurrency, failures = ?level.failures, "requests not answered 202");
    }
    emit_best(report, "framing_", &level, None)?;
    let acknowledged: HashSet<u128> = std::mem::take(&mut level.accepted_ids)
        .into_iter()
        .collect();
    let loss = verify::check(
        settings,
        &call_events,
        args.partitions,
        &acknowledged,
        Duration::from_secs(args.readback_timeout_s),
        Some(framing),
    )?;
    report.emit("framing_lost", loss.lost as f64, "events")?;
    report.emit(
        "framing_accepted_total",
        acknowledged.len() as f64,
        "events",
    )?;
    report.emit("framing_misframed", loss.misframed as f64, "records")?;
    if loss.lost > 0 {
        bail!("{} acknowledged events are not on the topic", loss.lost);
    }
    if loss.misframed > 0 {
        bail!(
            "{} records on the topic are not in the {} framing",
            loss.misframed,
            framing.label()
        );
    }
    Ok(())
}

/// The highest rate with no errors and p99 within budget; else the highest rate.
fn best_level(levels: &[Level], budget_ms: f64) -> &Level {
    let rate = |l: &&Level| l.accepted_per_s();
    let qualified = levels
        .iter()
        .filter(|l| l.errors == 0 && p(l, 99.0).is_some_and(|p99| p99 <= budget_ms))
        .max_by(|a, b| rate(a).total_cmp(&rate(b)));
    qualified.unwrap_or_else(|| {
        warn!(
            budget_ms,
            "no level kept p99 within budget without errors; reporting the fastest"
        );
        // `run` refuses an empty level list, so there is a first.
        levels
            .iter()
            .max_by(|a, b| rate(a).total_cmp(&rate(b)))
            .unwrap_or(&levels[0])
    })
}

fn p(level: &Level, q: f64) -> Option<f64> {
    percentile(&level.latencies_ms, q)
}

fn emit_level(report: &mut Report, level: &Level) -> Result<()> {
    let c = level.concurrency;
    report.emit(
        &format!("accepted_per_s_c{c}"),
        level.accepted_per_s(),
        "events/s",
    )?;
    for (name, q) in [("p50", 50.0), ("p99", 99.0), ("p999", 99.9)] {
        if let Some(ms) = p(level, q) {
            report.emit(&format!("{name}_ms_c{c}"), ms, "ms")?;
        }
    }
    report.emit(&format!("errors_c{c}"), level.errors as f64, "requests")?;
    if !level.failures.is_empty() {
        warn!(concurrency = c, failures = ?level.failures, "requests not answered 202");
    }
    Ok(())
}

/// The lines of one level's figures, each name after `prefix` (none: the
/// headline lines of the best level, with the budget it was chosen by).
fn emit_best(
    report: &mut Report,
    prefix: &str,
    level: &Level,
    budget_ms: Option<f64>,
) -> Result<()> {
    let mut emit = |name: &str, value: f64, unit: &str| -> Result<()> {
        report.emit(&format!("{prefix}{name}"), value, unit)
    };
    emit("accepted_per_s", level.accepted_per_s(), "events/s")?;
    for (name, q) in [("p50_ms", 50.0), ("p99_ms", 99.0), ("p999_ms", 99.9)] {
        if let Some(ms) = p(level, q) {
            emit(name, ms, "ms")?;
        }
    }
    emit("errors", level.errors as f64, "requests")?;
    emit("concurrency", level.concurrency as f64, "requests")?;
    if let Some(ms) = budget_ms {
        emit("p99_budget_ms", ms, "ms")?;
    }
    if let Some(ms) = level.produce_mean_ms {
        // The share of the 202 latency spent waiting for Kafka's delivery report.
        emit("produce_mean_ms", ms, "ms")?;
    }
    // CPU per accepted request, by who spent it (µs), and cores kept busy.
    let accepted = level.accepted().max(1) as f64;
    let per_req = |seconds: f64| seconds / accepted * 1e6;
    let cpu = level.cpu;
    emit("cpu_gateway_us_per_req", per_req(cpu.server), "us")?;
    emit("cpu_librdkafka_us_per_req", per_req(cpu.librdkafka), "us")?;
    emit("cpu_loadgen_us_per_req", per_req(cpu.load), "us")?;
    emit("cpu_other_us_per_req", per_req(cpu.other), "us")?;
    if let Some(broker) = cpu.broker {
        emit("cpu_broker_us_per_req", per_req(broker), "us")?;
    }
    emit("cpu_cores_busy", cpu.total() / level.seconds, "cores")?;
    Ok(())
}

/// Fails fast, with the fix, when no broker answers.
fn preflight(settings: &KafkaSettings) -> Result<()> {
    let admin = callstream_platform::admin::admin_client(settings)?;
    admin
        .inner()
        .fetch_metadata(None, Duration::from_secs(5))
        .with_context(|| {
            format!(
                "no Kafka broker answered at {} within 5 s: is the dev stack up? \
                 (`cargo xtask up`, or set KAFKA_BOOTSTRAP_SERVERS)",
                settings.bootstrap_servers
            )
        })?;
    Ok(())
}

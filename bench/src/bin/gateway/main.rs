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

mod http;
mod load;
mod server;
mod threads;
mod verify;

use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_bench::report::{percentile, Report};
use callstream_platform::KafkaSettings;
use clap::Parser;
use tracing::{info, warn};

use self::load::{Level, Plan, Target};
use self::server::{Gateway, Setup};

fn main() -> Result<()> {
    callstream_bench::init("gateway", &[]);
    run(&Args::parse(), &mut Report::stdout("gateway"))
}

/// The ingest gateway: signed Twilio callbacks per second at rising
/// concurrency, 202 latency, and a loss check against the topic.
#[derive(Debug, Parser)]
#[command(name = "gateway")]
struct Args {
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
    let settings = KafkaSettings::from_env("callstream-bench");
    preflight(&settings)?;
    let mut made = Vec::new();
    let result = measure(args, &settings, report, &mut made);
    if args.keep_topics {
        info!(topics = ?made, "keeping the benchmark topics");
    } else {
        callstream_bench::kafka::delete_topics(&settings, &made);
    }
    result
}

fn measure(
    args: &Args,
    settings: &KafkaSettings,
    report: &mut Report,
    made: &mut Vec<String>,
) -> Result<()> {
    let setup = Setup {
        partitions: args.partitions,
        threads: args.server_threads,
        produce_timeout: Duration::from_millis(args.produce_timeout_ms),
        linger: args.linger_ms.map(Duration::from_millis),
    };
    let gateway = Gateway::start(settings, setup, made)?;
    info!(url = %gateway.base_url, topic = %gateway.call_events, "gateway started");
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
    emit_best(report, best, args.p99_budget_ms)?;
    let loss = verify::check(
        settings,
        &call_events,
        args.partitions,
        &acknowledged,
        Duration::from_secs(args.readback_timeout_s),
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
    if loss.unreadable > 0 {
        bail!(
            "{} records on the topic had no readable event-id header",
            loss.unreadable
        );
    }
    if loss.lost > 0 {
        bail!("{} acknowledged events are not on the topic", loss.lost);
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

fn emit_best(report: &mut Report, level: &Level, budget_ms: f64) -> Result<()> {
    report.emit("accepted_per_s", level.accepted_per_s(), "events/s")?;
    for (name, q) in [("p50_ms", 50.0), ("p99_ms", 99.0), ("p999_ms", 99.9)] {
        if let Some(ms) = p(level, q) {
            report.emit(name, ms, "ms")?;
        }
    }
    report.emit("errors", level.errors as f64, "requests")?;
    report.emit("concurrency", level.concurrency as f64, "requests")?;
    report.emit("p99_budget_ms", budget_ms, "ms")?;
    if let Some(ms) = level.produce_mean_ms {
        // The share of the 202 latency spent waiting for Kafka's delivery report.
        report.emit("produce_mean_ms", ms, "ms")?;
    }
    // CPU per accepted request, by who spent it (µs), and cores kept busy.
    let accepted = level.accepted().max(1) as f64;
    let per_req = |seconds: f64| seconds / accepted * 1e6;
    let cpu = level.cpu;
    report.emit("cpu_gateway_us_per_req", per_req(cpu.server), "us")?;
    report.emit("cpu_librdkafka_us_per_req", per_req(cpu.librdkafka), "us")?;
    report.emit("cpu_loadgen_us_per_req", per_req(cpu.load), "us")?;
    report.emit("cpu_other_us_per_req", per_req(cpu.other), "us")?;
    if let Some(broker) = cpu.broker {
        report.emit("cpu_broker_us_per_req", per_req(broker), "us")?;
    }
    report.emit("cpu_cores_busy", cpu.total() / level.seconds, "cores")?;
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

//! `cargo xtask bench launch`: the launch dispatcher's numbers (issue 6).
//!
//! The dispatcher runs in this process on the processor runtime, exactly
//! once, as `callstream process launch-dispatcher` runs it, against the
//! voice simulator over HTTP on loopback (instant calls, no faults; status
//! callbacks go to a sink that answers 204), on fresh topics:
//!
//! 1. `launches_per_s`: a preloaded backlog of `--warmup-launches` then
//!    `--launches` commands; the clock runs from the warm-up's last launch
//!    decided (first non-`ambiguous` `call-launch`, visible to a
//!    `read_committed` reader) to the last one's. Each launch is two
//!    transactions (record `dispatching`, then the outcome) around an HTTP
//!    create. The warm-up is what a long-running broker and dispatcher have
//!    behind them (the broker's JIT compiles its transaction paths in the
//!    first seconds: a broker just started cost 105 µs a launch against 51-61
//!    warm); its own rate, from the first record handled, is
//!    `warmup_launches_per_s`, as Kafka's `ProducerPerformance
//!    --warmup-records` reports its warm-up apart.
//! 2. `launch_p99_ms`: then commands at a steady `--latency-rate`, from the
//!    moment each is handed to the producer to its decision being visible.
//! 3. `max_calls_per_launch`: the most calls the simulator placed for one
//!    launch id (its own counters); anything but 1 fails the run.
//!
//! The CPU lines (`cpu_*_us_per_launch`, throughput phase) split the time
//! among the dispatcher's event loop, its effect executor, the simulator,
//! librdkafka (the dispatcher's clients; `librdkafka_bench`: this
//! benchmark's), the broker and the rest. By component:
//! `dispatcher_cpu_us_per_launch` (event loop, effects and its librdkafka
//! clients: what the dispatcher costs on its own), `sim_`, `sink_`,
//! `broker_` and `bench_cpu_us_per_launch`; and
//! `dispatcher_launches_per_cpu_s`, launches per CPU second of the
//! dispatcher alone: the rate it would reach with the cores to itself (an
//! upper bound; the broker's work for it is not counted), beside the
//! end-to-end `launches_per_s`, which shares two cores with the simulator,
//! the sink and the broker. Topics are deleted afterwards unless
//! `--keep-topics`.

mod commands;
mod outcomes;
mod phases;
mod stack;
mod threads;

use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_bench::report::{Report, Summary};
use callstream_platform::topics::{CALL_LAUNCHES, LAUNCH_COMMANDS};
use callstream_platform::KafkaSettings;
use callstream_runtime::CommitPolicy;
use clap::Parser;
use tracing::{info, warn};

use self::commands::{preload_commands, Pace};
use self::outcomes::Outcomes;
use self::stack::{creates, start_dispatcher, DispatchSetup, Names, Outcomes as SimOutcomes, Sim};
use self::threads::Components;

fn main() -> Result<()> {
    callstream_bench::init("launch", &[]);
    run(&Args::parse(), &mut Report::stdout("launch"))
}

/// The launch dispatcher against the voice simulator: launches per second,
/// command-to-decision latency, and calls per launch id.
#[derive(Debug, Parser)]
#[command(name = "launch")]
struct Args {
    /// Launch commands of the throughput backlog.
    #[arg(long, default_value_t = 50_000)]
    launches: u64,
    /// Launch commands ahead of the measured backlog, decided but not
    /// measured (reported apart as `warmup_launches_per_s`; 0: none).
    #[arg(long, default_value_t = 10_000)]
    warmup_launches: u64,
    /// Launch commands per second of the latency phase (default: half the
    /// measured throughput, so the dispatcher is busy but not saturated).
    #[arg(long)]
    latency_rate: Option<u64>,
    /// Seconds of the latency phase.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Partitions of every topic.
    #[arg(long, default_value_t = 12)]
    partitions: i32,
    /// Provider requests in flight at once (the dispatcher's `concurrency`).
    #[arg(long, default_value_t = 256)]
    concurrency: usize,
    /// How long a create may wait in the dispatcher before it is given up
    /// unsent and retried (its `send_deadline`, ms). The runtime hands a
    /// transaction's effects over as soon as it commits, without
    /// backpressure, so a backlog of N waits behind `--concurrency`
    /// requests; with the production default (10,000) the tail of a large
    /// backlog would expire and go around again, and the rate would measure
    /// that churn. `creates_not_sent` counts them.
    #[arg(long, default_value_t = 600_000)]
    send_deadline_ms: u64,
    /// Commit interval of the runtime, ms.
    #[arg(long, default_value_t = 100)]
    commit_interval_ms: u64,
    /// Commit after this many records even before the interval.
    #[arg(long, default_value_t = CommitPolicy::default().max_records)]
    commit_max_records: usize,
    /// Which calls the simulator plays (how many callbacks each costs).
    #[arg(long, value_enum, default_value_t = SimOutcomes::Short)]
    outcomes: SimOutcomes,
    /// Worker threads of the simulator's tokio runtime (the callback sink has one of its own).
    #[arg(long, default_value_t = 1)]
    sim_threads: usize,
    /// Most seconds either phase may take before the run fails.
    #[arg(long, default_value_t = 120)]
    timeout_s: u64,
    /// Leave the benchmark's topics in place (to look at them).
    #[arg(long)]
    keep_topics: bool,
}

fn run(args: &Args, report: &mut Report) -> Result<()> {
    if args.launches == 0 || args.seconds == 0 || args.partitions < 1 || args.concurrency == 0 {
        bail!("--launches, --seconds, --partitions and --concurrency must be positive");
    }
    if args.latency_rate == Some(0) {
        bail!("--latency-rate must be positive");
    }
    let settings = KafkaSettings::from_env("callstream-bench");
    preflight(&settings)?;
    let names = Names::fresh(args.partitions);
    let result = measure(args, &settings, &names, report);
    if args.keep_topics {
        info!(app = %names.app, topics = ?names.all(), "keeping the benchmark topics");
    } else {
        callstream_bench::kafka::delete_topics(&settings, &names.all());
    }
    result
}

fn measure(
    args: &Args,
    settings: &KafkaSettings,
    names: &Names,
    report: &mut Report,
) -> Result<()> {
    names.create(settings)?;
    let sim = Sim::start(args.outcomes, args.sim_threads)?;
    let run = uuid::Uuid::new_v4().as_u64_pair().0;
    let took = preload_commands(
        settings,
        &names.topics.name(LAUNCH_COMMANDS),
        run,
        args.warmup_launches + args.launches,
    )?;
    info!(
        warmup = args.warmup_launches,
        launches = args.launches,
        seconds = took.as_secs_f64(),
        "preloaded"
    );
    let mut outcomes = Outcomes::new(
        settings,
        &names.topics.name(CALL_LAUNCHES),
        args.partitions,
        run,
    )?;
    let setup = DispatchSetup {
        concurrency: args.concurrency,
        commit: CommitPolicy {
            interval: Duration::from_millis(args.commit_interval_ms),
            max_records: args.commit_max_records,
        },
        send_deadline: Duration::from_millis(args.send_deadline_ms),
    };
    let timeout = Duration::from_secs(args.timeout_s);
    let (mut dispatcher, dispatch, throughput) = phases::throughput(
        args.warmup_launches,
        args.launches,
        &mut outcomes,
        timeout,
        || start_dispatcher(settings, names, &sim, setup),
    )?;
    report.emit("launches_per_s", throughput.launches_per_s(), "launches/s")?;
    report.emit("launches", throughput.launches as f64, "launches")?;
    report.emit("throughput_seconds", throughput.seconds, "s")?;
    report.emit("startup_seconds", throughput.startup_seconds, "s")?;
    if let Some(rate) = throughput.warmup_launches_per_s() {
        report.emit("warmup_launches_per_s", rate, "launches/s")?;
    }
    let per_launch = |seconds: f64| seconds / throughput.launches as f64 * 1e6;
    for (group, seconds) in &throughput.cpu {
        report.emit(
            &format!("cpu_{group}_us_per_launch"),
            per_launch(*seconds),
            "us",
        )?;
    }
    let parts = Components::of(&throughput.cpu);
    report.emit(
        "dispatcher_cpu_us_per_launch",
        per_launch(parts.dispatcher),
        "us",
    )?;
    report.emit("sim_cpu_us_per_launch", per_launch(parts.sim), "us")?;
    report.emit("sink_cpu_us_per_launch", per_launch(parts.sink), "us")?;
    if let Some(broker) = parts.broker {
        report.emit("broker_cpu_us_per_launch", per_launch(broker), "us")?;
    }
    report.emit("bench_cpu_us_per_launch", per_launch(parts.bench), "us")?;
    // What the dispatcher would do with the cores to itself (no simulator,
    // sink, broker or reader beside it): an upper bound, beside the
    // end-to-end `launches_per_s`.
    if parts.dispatcher > 0.0 {
        report.emit(
            "dispatcher_launches_per_cpu_s",
            throughput.launches as f64 / parts.dispatcher,
            "launches/cpu-s",
        )?;
    }

    let rate = args
        .latency_rate
        .unwrap_or_else(|| ((throughput.launches_per_s() / 2.0) as u64).max(10));
    let pace = Pace {
        first: args.warmup_launches + args.launches,
        count: rate * args.seconds,
        per_second: rate,
    };
    info!(rate, count = pace.count, "latency at a steady rate");
    let latency = phases::latency(
        settings,
        names,
        run,
        pace,
        &mut outcomes,
        &mut dispatcher,
        timeout + Duration::from_secs(args.seconds),
    )?;
    // A little longer, to see a second decision for any launch.
    outcomes.read_some(Duration::from_millis(500));
    let summary = Summary::of(latency.samples_ms).context("no latency samples")?;
    report.emit("launch_p99_ms", summary.p99, "ms")?;
    report.emit("launch_p50_ms", summary.p50, "ms")?;
    report.emit("launch_max_ms", summary.max, "ms")?;
    report.emit("latency_rate", latency.per_second as f64, "launches/s")?;
    report.emit("latency_samples", summary.count as f64, "launches")?;
    if let Some(ms) = dispatcher.mean_commit_ms() {
        report.emit("mean_commit_ms", ms, "ms")?;
    }
    report.emit(
        "commits",
        dispatcher.metrics().commits.get() as f64,
        "commits",
    )?;
    // Creates that waited here past their send deadline were not sent and
    // had to go again: a sign the backlog outran the provider side.
    for outcome in ["accepted", "not_sent", "transient", "ambiguous"] {
        let count = creates(&dispatch, outcome);
        report.emit(&format!("creates_{outcome}"), count as f64, "requests")?;
    }
    dispatcher.stop()?;

    let (max_calls, calls) = sim.calls();
    report.emit("max_calls_per_launch", max_calls as f64, "calls")?;
    report.emit("calls_created", calls as f64, "calls")?;
    report.emit("callbacks_sent", sim.callbacks_sent() as f64, "callbacks")?;
    let not_accepted = outcomes.not_accepted();
    report.emit("launches_not_accepted", not_accepted as f64, "launches")?;
    report.emit("ambiguous_reports", outcomes.ambiguous as f64, "records")?;
    let launches = args.warmup_launches + args.launches + pace.count;
    if max_calls != 1 || calls != launches {
        bail!("{calls} calls for {launches} launches, at most {max_calls} for one launch id: one call per launch is broken");
    }
    if outcomes.redecided > 0 || outcomes.undecodable > 0 {
        bail!(
            "{} launches decided twice, {} records undecodable",
            outcomes.redecided,
            outcomes.undecodable
        );
    }
    if not_accepted > 0 {
        warn!(by_status = ?outcomes.by_status, "launches not accepted without faults");
    }
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

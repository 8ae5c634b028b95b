//! `cargo xtask bench runtime`: the processor runtime's numbers (issue 3), in
//! one run on fresh topics, with the runtime's `CountingProcessor` (one state
//! write and one output per input):
//!
//! 1. exactly-once throughput over N preloaded records (100 ms commits),
//! 2. at-least-once throughput over the same load, and the EOS/ALO ratio,
//! 3. restore of a store of 1,000,000 keys written to its changelog,
//! 4. exactly-once end-to-end latency at a steady, moderate rate,
//! 5. the registry's cost (issue 21): exactly-once throughput (`framing`) and
//!    latency (`framing-latency`) of the counting processor's Avro twin
//!    (`avro`: decode a `CallEvent`, count, encode one), once in Avro
//!    single-object encoding and once in the Confluent wire format with ids
//!    registered in the stack's registry, each in a child process of its own
//!    (the framing is chosen once per process), alternating over
//!    `--framing-rounds` rounds; then the mean of each framing and the
//!    `confluent_over_single_object_*` ratios (`callstream_bench::framing`).
//!
//! N defaults to 4,000,000: at this machine's rate (2 cores shared with the
//! broker) that keeps each throughput measurement above 20 s. The framing
//! runs have `--framing-records` (2,000,000) each.
//!
//! Topics are deleted afterwards unless `--keep-topics`.

mod avro;
mod instance;
mod latency;
mod restore;
mod throughput;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_bench::framing::{self, Framing};
use callstream_bench::kafka::{block_on, unique_name};
use callstream_platform::topics::CALL_EVENTS;
use callstream_platform::{KafkaSettings, Topics};
use callstream_runtime::{CommitPolicy, Guarantee, ValueGate};
use callstream_schema_registry::SchemaFetcher;
use callstream_schemas::Event as _;
use tracing::info;

use callstream_bench::report::Report;
use clap::Parser;

use self::instance::{Mode, Names, Payload};
use self::throughput::{Load, Throughput, Until};

fn main() -> Result<()> {
    callstream_bench::init("runtime", &["callstream_runtime"]);
    let args = Args::parse();
    callstream_bench::framing::main_or_child(
        "runtime",
        args.child_framing,
        args.child_round,
        |framing, report| child(&args, framing, report),
        |report| run(&args, report),
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// Exactly-once throughput.
    Eos,
    /// At-least-once throughput (with `eos`: their ratio).
    Alo,
    /// Restore of a store filled through its changelog.
    Restore,
    /// Exactly-once end-to-end latency at a steady rate.
    Latency,
    /// Exactly-once throughput of Avro records, single-object and Confluent-framed.
    Framing,
    /// Exactly-once latency of Avro records, single-object and Confluent-framed.
    FramingLatency,
}

/// The processor runtime: exactly-once and at-least-once throughput,
/// end-to-end latency, restore rate.
#[derive(Debug, Parser)]
#[command(name = "runtime")]
pub struct Args {
    /// Input records of each throughput run.
    #[arg(long, default_value_t = 4_000_000)]
    records: u64,
    /// Distinct keys of the throughput runs; record `i` has key `i mod keys`.
    /// With the default no key repeats within a transaction, so every state
    /// write reaches the changelog.
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    /// Keys in the store of the restore run.
    #[arg(long, default_value_t = 1_000_000)]
    restore_keys: u64,
    /// Partitions of the input and output topics.
    #[arg(long, default_value_t = 12)]
    partitions: i32,
    /// Commit interval, ms.
    #[arg(long, default_value_t = 100)]
    commit_interval_ms: u64,
    /// Commit after this many records even before the interval.
    #[arg(long, default_value_t = CommitPolicy::default().max_records)]
    commit_max_records: usize,
    /// Records per second of the latency run.
    #[arg(long, default_value_t = 5_000)]
    latency_rate: u64,
    /// Seconds of the latency run.
    #[arg(long, default_value_t = 10)]
    latency_seconds: u64,
    /// When the throughput clock stops: the N-th output visible to a
    /// `read_committed` reader running beside it, or the processor's own
    /// commit of the N-th input (outputs then counted afterwards).
    #[arg(long, value_enum, default_value_t = Until::Visible)]
    until: Until,
    /// Which phases to run, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_values = ["eos", "alo", "restore", "latency", "framing", "framing-latency"]
    )]
    phases: Vec<Phase>,
    /// Input records of each framing throughput run.
    #[arg(long, default_value_t = 2_000_000)]
    framing_records: u64,
    /// Runs of each framing (`framing`, `framing-latency`), the order alternating.
    #[arg(long, default_value_t = 2)]
    framing_rounds: u32,
    /// The framings to compare (one alone: its figures, no ratio).
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["single-object", "confluent"])]
    framings: Vec<Framing>,
    /// Run as the child measuring this framing (the comparison starts them).
    #[arg(long, value_enum, hide = true)]
    child_framing: Option<Framing>,
    /// The round of a child run.
    #[arg(long, hide = true, default_value_t = 1)]
    child_round: u32,
    /// Most seconds any phase may take before the run fails.
    #[arg(long, default_value_t = 900)]
    timeout_s: u64,
    /// Leave the benchmark's topics in place (to look at them).
    #[arg(long)]
    keep_topics: bool,
}

pub fn run(args: &Args, report: &mut Report) -> Result<()> {
    if args.records == 0
        || args.keys == 0
        || args.restore_keys == 0
        || args.partitions < 1
        || args.framing_records == 0
    {
        bail!(
            "--records, --keys, --restore-keys, --partitions and --framing-records must be positive"
        );
    }
    let settings = KafkaSettings::from_env("callstream-bench");
    let mut made: Vec<String> = Vec::new();
    let result = run_phases(args, &settings, report, &mut made);
    callstream_bench::kafka::clean_up(&settings, &made, args.keep_topics);
    result
}

fn run_phases(
    args: &Args,
    settings: &KafkaSettings,
    report: &mut Report,
    made: &mut Vec<String>,
) -> Result<()> {
    let commit = CommitPolicy {
        interval: Duration::from_millis(args.commit_interval_ms),
        max_records: args.commit_max_records,
    };
    let eos = Mode {
        guarantee: Guarantee::ExactlyOnce,
        commit,
    };
    let alo = Mode {
        guarantee: Guarantee::AtLeastOnce,
        commit,
    };
    let load = Load {
        records: args.records,
        keys: args.keys,
        partitions: args.partitions,
        timeout: Duration::from_secs(args.timeout_s),
        until: args.until,
    };
    report.emit("records", args.records as f64, "records")?;
    report.emit("partitions", f64::from(args.partitions), "partitions")?;
    report.emit("keys", args.keys as f64, "keys")?;
    report.emit("commit_interval_ms", args.commit_interval_ms as f64, "ms")?;
    report.emit(
        "commit_max_records",
        args.commit_max_records as f64,
        "records",
    )?;

    let mut eos_rate = None;
    if args.phases.contains(&Phase::Eos) {
        let names = Names::fresh("eos");
        made.extend(names.topics());
        info!(app = %names.app, "exactly-once throughput");
        let result = throughput::measure(settings, &names, eos, load, &Payload::Text)?;
        emit_throughput(report, "eos", &result)?;
        eos_rate = Some(result.records_per_s());
    }
    if args.phases.contains(&Phase::Alo) {
        let names = Names::fresh("alo");
        made.extend(names.topics());
        info!(app = %names.app, "at-least-once throughput");
        let result = throughput::measure(settings, &names, alo, load, &Payload::Text)?;
        emit_throughput(report, "alo", &result)?;
        if let Some(eos_rate) = eos_rate {
            report.emit(
                "eos_to_alo_ratio",
                eos_rate / result.records_per_s(),
                "ratio",
            )?;
        }
    }
    if args.phases.contains(&Phase::Restore) {
        let names = Names::fresh("restore");
        made.extend(names.topics());
        info!(app = %names.app, keys = args.restore_keys, "restore");
        let timeout = Duration::from_secs(args.timeout_s);
        let restored = restore::measure(
            settings,
            &names,
            eos,
            args.restore_keys,
            args.partitions,
            timeout,
        )?;
        report.emit("restore_keys_per_s", restored.keys_per_s(), "keys/s")?;
        report.emit("restore_seconds", restored.seconds, "s")?;
        report.emit("restore_keys", restored.keys as f64, "keys")?;
        report.emit("restored_records", restored.records as f64, "records")?;
        report.emit(
            "restore_start_to_restored_seconds",
            restored.start_to_restored_seconds,
            "s",
        )?;
    }
    if args.phases.contains(&Phase::Latency) {
        let names = Names::fresh("lat");
        made.extend(names.topics());
        let pace = latency::Pace {
            rate_per_s: args.latency_rate,
            duration: Duration::from_secs(args.latency_seconds),
            partitions: args.partitions,
        };
        info!(app = %names.app, rate = pace.rate_per_s, "exactly-once latency");
        let result = latency::measure(settings, &names, eos, pace, &Payload::Text)?;
        emit_latency(report, "eos", &result, args.latency_rate)?;
    }
    if args.phases.contains(&Phase::Framing) || args.phases.contains(&Phase::FramingLatency) {
        compare_framings(args, report)?;
    }
    Ok(())
}

/// What the framing runs report, per child, that the summary compares.
const COMPARED: &[&str] = &[
    "avro_eos_records_per_s",
    "avro_eos_bench_cpu_us_per_record",
    "avro_eos_p50_latency_ms",
    "avro_eos_p99_latency_ms",
];

/// The `framing` phases: a child process per framing and round (this
/// executable again, with this run's arguments), then the summary.
fn compare_framings(args: &Args, report: &mut Report) -> Result<()> {
    report.emit("framing_records", args.framing_records as f64, "records")?;
    let framings = framing::available(&args.framings, report)?;
    let passed: Vec<String> = std::env::args().skip(1).collect();
    let mut lines = Vec::new();
    for (round, framing) in framing::schedule(&framings, args.framing_rounds) {
        info!(framing = framing.label(), round, "framing run");
        lines.extend(framing::run_child(report, &passed, framing, round)?);
    }
    framing::summarise(report, &lines, COMPARED)
}

/// A child of [`compare_framings`]: switches to `framing` (registering the
/// schemas for its topics with the stack's registry, for Confluent), then
/// runs the `framing` phases once with Avro records; every line is tagged
/// with the framing and round.
fn child(args: &Args, framing: Framing, report: &mut Report) -> Result<()> {
    let settings = KafkaSettings::from_env("callstream-bench");
    // Every topic of the child behind one prefix, the throughput's input
    // named as the call-events topic: `install` registers the value
    // subjects of those topics, `<prefix>call-events-value` among them.
    let prefix = format!("{}-", unique_name("bench-rt-fr"));
    let topics = Topics::with_prefix(prefix.clone());
    let client = block_on(framing::adopt(framing, &topics))??;
    let sample = avro::call_event(0, 0, "k0", "0".into()).encode()?;
    framing::check_written(framing, &sample)?;
    // As `callstream process` with a registry: the runtime asks the
    // registry's gate before each record (a known id: no call).
    let gate = match client {
        Some(client) => {
            let fetcher = SchemaFetcher::new(client).context("starting the schema fetcher")?;
            Some(Arc::new(fetcher) as Arc<dyn ValueGate>)
        }
        None => None,
    };
    let payload = Payload::Avro { gate };
    let mut made: Vec<String> = Vec::new();
    let result = child_phases(
        args, &settings, &prefix, &topics, &payload, report, &mut made,
    );
    callstream_bench::kafka::clean_up(&settings, &made, args.keep_topics);
    result
}

fn child_phases(
    args: &Args,
    settings: &KafkaSettings,
    prefix: &str,
    topics: &Topics,
    payload: &Payload,
    report: &mut Report,
    made: &mut Vec<String>,
) -> Result<()> {
    let eos = Mode {
        guarantee: Guarantee::ExactlyOnce,
        commit: CommitPolicy {
            interval: Duration::from_millis(args.commit_interval_ms),
            max_records: args.commit_max_records,
        },
    };
    if args.phases.contains(&Phase::Framing) {
        let names = Names {
            app: format!("{prefix}tp"),
            input: topics.name(CALL_EVENTS),
            output: format!("{prefix}tp-out"),
        };
        made.extend(names.topics());
        let load = Load {
            records: args.framing_records,
            keys: args.keys,
            partitions: args.partitions,
            timeout: Duration::from_secs(args.timeout_s),
            until: args.until,
        };
        info!(app = %names.app, "exactly-once throughput, Avro");
        let result = throughput::measure(settings, &names, eos, load, payload)?;
        emit_throughput(report, "avro_eos", &result)?;
        if let Some(cpu) = result.cpu.bench {
            let per_record = cpu / result.records as f64 * 1e6;
            report.emit("avro_eos_bench_cpu_us_per_record", per_record, "us")?;
        }
    }
    if args.phases.contains(&Phase::FramingLatency) {
        let names = Names {
            app: format!("{prefix}lat"),
            input: format!("{prefix}lat-in"),
            output: format!("{prefix}lat-out"),
        };
        made.extend(names.topics());
        let pace = latency::Pace {
            rate_per_s: args.latency_rate,
            duration: Duration::from_secs(args.latency_seconds),
            partitions: args.partitions,
        };
        info!(app = %names.app, rate = pace.rate_per_s, "exactly-once latency, Avro");
        let result = latency::measure(settings, &names, eos, pace, payload)?;
        emit_latency(report, "avro_eos", &result, args.latency_rate)?;
    }
    Ok(())
}

fn emit_latency(
    report: &mut Report,
    mode: &str,
    result: &latency::Latency,
    rate: u64,
) -> Result<()> {
    let s = result.summary;
    report.emit(&format!("{mode}_p99_latency_ms"), s.p99, "ms")?;
    report.emit(&format!("{mode}_p50_latency_ms"), s.p50, "ms")?;
    report.emit(&format!("{mode}_max_latency_ms"), s.max, "ms")?;
    report.emit(&format!("{mode}_mean_latency_ms"), s.mean, "ms")?;
    report.emit(
        &format!("{mode}_latency_samples"),
        result.sent as f64,
        "records",
    )?;
    report.emit(&format!("{mode}_latency_rate"), rate as f64, "records/s")?;
    if let Some(ms) = result.mean_commit_ms {
        report.emit(&format!("{mode}_latency_mean_commit_ms"), ms, "ms")?;
    }
    Ok(())
}

fn emit_throughput(report: &mut Report, mode: &str, result: &Throughput) -> Result<()> {
    report.emit(
        &format!("{mode}_records_per_s"),
        result.records_per_s(),
        "records/s",
    )?;
    report.emit(&format!("{mode}_seconds"), result.seconds, "s")?;
    report.emit(
        &format!("{mode}_startup_seconds"),
        result.startup_seconds,
        "s",
    )?;
    report.emit(
        &format!("{mode}_outputs_visible"),
        result.outputs as f64,
        "records",
    )?;
    report.emit(&format!("{mode}_commits"), result.commits as f64, "commits")?;
    if let Some(ms) = result.mean_commit_ms {
        report.emit(&format!("{mode}_mean_commit_ms"), ms, "ms")?;
    }
    if let Some(cpu) = result.cpu.bench {
        report.emit(&format!("{mode}_bench_process_cpu_s"), cpu, "s")?;
    }
    if let Some(cpu) = result.cpu.broker {
        report.emit(&format!("{mode}_broker_cpu_s"), cpu, "s")?;
    }
    Ok(())
}

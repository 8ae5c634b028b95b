//! `cargo xtask bench runtime`: the processor runtime's numbers (issue 3), in
//! one run on fresh topics, with the runtime's `CountingProcessor` (one state
//! write and one output per input):
//!
//! 1. exactly-once throughput over N preloaded records (100 ms commits),
//! 2. at-least-once throughput over the same load, and the EOS/ALO ratio,
//! 3. restore of a store of 1,000,000 keys written to its changelog,
//! 4. exactly-once end-to-end latency at a steady, moderate rate.
//!
//! N defaults to 4,000,000: at this machine's rate (2 cores shared with the
//! broker) that keeps each throughput measurement above 20 s.
//!
//! Topics are deleted afterwards unless `--keep-topics`.

mod instance;
mod latency;
mod restore;
mod throughput;

use std::time::Duration;

use anyhow::{bail, Result};
use callstream_platform::KafkaSettings;
use callstream_runtime::{CommitPolicy, Guarantee};
use tracing::info;

use callstream_bench::report::Report;
use clap::Parser;

use self::instance::{Mode, Names};
use self::throughput::{Load, Throughput, Until};

fn main() -> Result<()> {
    callstream_bench::init("runtime", &["callstream_runtime"]);
    run(&Args::parse(), &mut Report::stdout("runtime"))
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
    #[arg(long, value_delimiter = ',', default_values = ["eos", "alo", "restore", "latency"])]
    phases: Vec<Phase>,
    /// Most seconds any phase may take before the run fails.
    #[arg(long, default_value_t = 900)]
    timeout_s: u64,
    /// Leave the benchmark's topics in place (to look at them).
    #[arg(long)]
    keep_topics: bool,
}

pub fn run(args: &Args, report: &mut Report) -> Result<()> {
    if args.records == 0 || args.keys == 0 || args.restore_keys == 0 || args.partitions < 1 {
        bail!("--records, --keys, --restore-keys and --partitions must be positive");
    }
    let settings = KafkaSettings::from_env("callstream-bench");
    let mut made: Vec<String> = Vec::new();
    let result = run_phases(args, &settings, report, &mut made);
    if args.keep_topics {
        info!(topics = ?made, "keeping the benchmark topics");
    } else {
        callstream_bench::kafka::delete_topics(&settings, &made);
    }
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
        let result = throughput::measure(settings, &names, eos, load)?;
        emit_throughput(report, "eos", &result)?;
        eos_rate = Some(result.records_per_s());
    }
    if args.phases.contains(&Phase::Alo) {
        let names = Names::fresh("alo");
        made.extend(names.topics());
        info!(app = %names.app, "at-least-once throughput");
        let result = throughput::measure(settings, &names, alo, load)?;
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
        let result = latency::measure(settings, &names, eos, pace)?;
        let s = result.summary;
        report.emit("eos_p99_latency_ms", s.p99, "ms")?;
        report.emit("eos_p50_latency_ms", s.p50, "ms")?;
        report.emit("eos_max_latency_ms", s.max, "ms")?;
        report.emit("eos_mean_latency_ms", s.mean, "ms")?;
        report.emit("eos_latency_samples", result.sent as f64, "records")?;
        report.emit("eos_latency_rate", args.latency_rate as f64, "records/s")?;
        if let Some(ms) = result.mean_commit_ms {
            report.emit("eos_latency_mean_commit_ms", ms, "ms")?;
        }
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

//! `callstream-bench NAME [ARGS]`: the project's benchmarks, one subcommand
//! (and one module) each, run against the dev stack by `cargo xtask bench NAME`.
//!
//! Every benchmark prints its results as JSON lines on stdout,
//! `{"bench":NAME,"metric":...,"value":...,"unit":...}`, and nothing else
//! there; progress and logs go to stderr, so `... | jq` or a CI script can
//! read the numbers directly. A benchmark that cannot measure what it claims
//! (a broker error, a processor that dies, a count that never arrives) fails
//! non-zero instead of printing a number.
//!
//! Adding a benchmark: a module with an `Args` (clap) and a `run(args, &mut
//! Report)`, and a variant of `Bench` below.

mod cpu;
mod kafka;
mod report;
mod runtime;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::report::Report;

#[derive(Debug, Parser)]
#[command(
    name = "callstream-bench",
    about = "callstream benchmarks: JSON lines on stdout, progress on stderr"
)]
struct Cli {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// The processor runtime: exactly-once and at-least-once throughput,
    /// end-to-end latency, restore rate.
    Runtime(runtime::Args),
}

fn main() -> Result<()> {
    callstream_platform::telemetry::init_tracing(
        "warn,callstream_bench=info,callstream_runtime=info",
    );
    let cli = Cli::parse();
    match cli.bench {
        Bench::Runtime(args) => runtime::run(&args, &mut Report::stdout("runtime")),
    }
}

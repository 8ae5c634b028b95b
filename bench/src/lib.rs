//! The shared parts of callstream's benchmarks: one binary per benchmark
//! (`src/bin/<name>/main.rs`), run against the dev stack by
//! `cargo xtask bench NAME` (`cargo run --release -p callstream-bench --bin NAME`).
//!
//! Every benchmark prints its results as JSON lines on stdout,
//! `{"bench":NAME,"metric":...,"value":...,"unit":...}`, and nothing else
//! there; progress and logs go to stderr, so `... | jq` or a CI script can
//! read the numbers directly. A benchmark that cannot measure what it claims
//! (a broker error, a processor that dies, a count that never arrives) fails
//! non-zero instead of printing a number.
//!
//! Adding a benchmark: a binary `src/bin/<name>/main.rs` that parses its
//! arguments with clap, calls [`init`], and reports through
//! [`report::Report::stdout`].

pub mod cpu;
pub mod db;
pub mod framing;
pub mod kafka;
pub mod processor;
pub mod report;

/// Logs to stderr at `warn`, and at `info` for the benchmark itself and the given crates.
pub fn init(bench_crate: &str, also_info: &[&str]) {
    let mut filter = format!("warn,callstream_bench=info,{bench_crate}=info");
    for name in also_info {
        filter.push(',');
        filter.push_str(name);
        filter.push_str("=info");
    }
    callstream_platform::telemetry::init_tracing(&filter);
}

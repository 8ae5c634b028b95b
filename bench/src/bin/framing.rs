//! `cargo xtask bench framing`: what the schema registry's framing costs on the hot path.
//! Encode and decode of every event type in Avro single-object encoding, then, in the same
//! process after registering the schemas with the stack's registry (`install`, as every role
//! does at start), in the Confluent wire format: side by side, with their ratios. Ids are
//! cached at start, so the difference is the header alone (a 5-byte id instead of the 10-byte
//! fingerprint, one table read each way); the bar is less than 3% of throughput.
//!
//! Framing is chosen once per process, so single-object runs first; each figure is the best
//! of `--rounds` runs of `--records` records.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use callstream_bench::report::Report;
use callstream_platform::Topics;
use callstream_schema_registry::{install, RegistryClient};
use callstream_schemas::{decode_any, wire, AnyEvent, EventKind};
use clap::Parser;

#[path = "../../../schemas/tests/support/mod.rs"]
#[allow(dead_code, clippy::all)]
mod support;

/// Encode and decode of every event type, single-object and Confluent-framed.
#[derive(Debug, Parser)]
#[command(name = "framing")]
struct Args {
    /// Records encoded (and decoded) per event type and run.
    #[arg(long, default_value_t = 200_000)]
    records: u32,
    /// Runs of each measurement; the best counts.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// The registry's Confluent-compatible API (the stack's by default).
    #[arg(
        long,
        env = "CALLSTREAM_STACK_REGISTRY_URL",
        default_value = "http://127.0.0.1:8085/apis/ccompat/v7"
    )]
    registry: String,
}

/// Best rate (records/s) of `rounds` runs of `n` calls of `f`.
fn best_rate(n: u32, rounds: u32, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..n {
            f()?;
        }
        best = best.min(start.elapsed());
    }
    Ok(f64::from(n) / best.as_secs_f64())
}

/// (encode/s, decode/s) of every kind, in the process's framing now.
fn measure(events: &[(EventKind, AnyEvent)], args: &Args) -> Result<Vec<(f64, f64)>> {
    events
        .iter()
        .map(|(_, event)| {
            let bytes = event.encode()?;
            let encode = best_rate(args.records, args.rounds, || {
                std::hint::black_box(event.encode()?);
                Ok(())
            })?;
            let decode = best_rate(args.records, args.rounds, || {
                std::hint::black_box(decode_any(std::hint::black_box(&bytes))?);
                Ok(())
            })?;
            Ok((encode, decode))
        })
        .collect()
}

/// Records per second of the whole mix (one of each kind): n / sum of per-kind times.
fn mix(rates: &[f64]) -> f64 {
    rates.len() as f64 / rates.iter().map(|r| 1.0 / r).sum::<f64>()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    callstream_bench::init("framing", &[]);
    let args = Args::parse();
    let mut report = Report::stdout("framing");
    let events: Vec<(EventKind, AnyEvent)> = EventKind::ALL
        .iter()
        .map(|&kind| {
            let raw = support::written_by(kind.schema(), kind.fingerprint(), support::sample(kind));
            Ok((kind, decode_any(&raw)?))
        })
        .collect::<Result<_>>()?;

    let single = measure(&events, &args)?;
    let client = RegistryClient::new(&args.registry)?;
    install(&client, &Topics::default(), Duration::from_secs(60))
        .await
        .with_context(|| {
            format!(
                "registering the schemas at {} (is the stack up?)",
                args.registry
            )
        })?;
    anyhow::ensure!(
        wire::framing() == wire::Framing::Confluent,
        "the ids were not installed"
    );
    let confluent = measure(&events, &args)?;

    for (((kind, _), s), c) in events.iter().zip(&single).zip(&confluent) {
        let stem = kind.file_stem();
        report.emit(&format!("{stem}_encode_per_s_single_object"), s.0, "1/s")?;
        report.emit(&format!("{stem}_encode_per_s_confluent"), c.0, "1/s")?;
        report.emit(&format!("{stem}_decode_per_s_single_object"), s.1, "1/s")?;
        report.emit(&format!("{stem}_decode_per_s_confluent"), c.1, "1/s")?;
    }
    let (se, sd): (Vec<f64>, Vec<f64>) = single.iter().copied().unzip();
    let (ce, cd): (Vec<f64>, Vec<f64>) = confluent.iter().copied().unzip();
    report.emit("mix_encode_per_s_single_object", mix(&se), "1/s")?;
    report.emit("mix_encode_per_s_confluent", mix(&ce), "1/s")?;
    report.emit("mix_decode_per_s_single_object", mix(&sd), "1/s")?;
    report.emit("mix_decode_per_s_confluent", mix(&cd), "1/s")?;
    report.emit(
        "encode_ratio_confluent_to_single_object",
        mix(&ce) / mix(&se),
        "ratio",
    )?;
    report.emit(
        "decode_ratio_confluent_to_single_object",
        mix(&cd) / mix(&sd),
        "ratio",
    )?;
    Ok(())
}

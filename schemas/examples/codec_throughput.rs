//! Measures encode and decode throughput of every event type (run with `--release`):
//! `cargo run --release -p callstream-schemas --example codec_throughput`.
//! Prints JSON lines like the project's benchmarks: bench, metric, value, unit.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Instant;

use callstream_schemas::{decode_any, EventKind};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const N: u32 = 20_000;
    for &kind in EventKind::ALL {
        let raw = support::written_by(kind.schema(), kind.fingerprint(), support::sample(kind));
        let event = decode_any(&raw)?;
        let bytes = event.encode()?;
        let start = Instant::now();
        for _ in 0..N {
            std::hint::black_box(event.encode()?);
        }
        let encode = f64::from(N) / start.elapsed().as_secs_f64();
        let start = Instant::now();
        for _ in 0..N {
            std::hint::black_box(decode_any(&bytes)?);
        }
        let decode = f64::from(N) / start.elapsed().as_secs_f64();
        let stem = kind.file_stem();
        println!(
            r#"{{"bench":"schemas","metric":"{stem}_encode_per_s","value":{encode:.0},"unit":"1/s"}}"#
        );
        println!(
            r#"{{"bench":"schemas","metric":"{stem}_decode_per_s","value":{decode:.0},"unit":"1/s"}}"#
        );
        println!(
            r#"{{"bench":"schemas","metric":"{stem}_bytes","value":{},"unit":"bytes"}}"#,
            bytes.len()
        );
    }
    Ok(())
}

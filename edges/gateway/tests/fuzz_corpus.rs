//! Replays the checked-in fuzz corpus (`fuzz/corpus/<target>/`) through the
//! very functions the cargo-fuzz targets call (`fuzz/src/lib.rs`, compiled
//! here as a module), so CI exercises every seed and every crash ever
//! found on stable, without nightly or libFuzzer. A file that panics is a
//! failure named by its path.

#[path = "../fuzz/src/lib.rs"]
mod harness;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// Every corpus file of `target`, in name order.
fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) => panic!("corpus {}: {e}", dir.display()),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn replay(target: &str, run: fn(&[u8]) -> harness::Reached) {
    let files = corpus(target);
    // The seeds cover each format's shapes; an emptied directory is a mistake.
    assert!(files.len() >= 10, "{target}: only {} seeds", files.len());
    let mut failures = Vec::new();
    let mut reached = Vec::new();
    for file in &files {
        let data = match std::fs::read(file) {
            Ok(data) => data,
            Err(e) => panic!("{}: {e}", file.display()),
        };
        match catch_unwind(AssertUnwindSafe(|| run(&data))) {
            Ok(r) => reached.push(r),
            Err(_) => failures.push(file.display().to_string()),
        }
    }
    assert!(failures.is_empty(), "{target}: failed on {failures:#?}");
    // Some seeds must get all the way through (signed and parsed) and some
    // must be refused at each step, or the corpus no longer covers the code.
    let count = |f: fn(&harness::Reached) -> bool| reached.iter().filter(|r| f(r)).count();
    assert!(
        count(|r| r.verified && r.parsed) > 0,
        "{target}: no seed is accepted"
    );
    assert!(
        count(|r| !r.verified) > 0,
        "{target}: no seed fails verification"
    );
    assert!(count(|r| !r.parsed) > 0, "{target}: no seed fails parsing");
}

#[test]
fn twilio_webhook_corpus() {
    replay("twilio_webhook", harness::twilio_webhook);
}

#[test]
fn standard_webhook_corpus() {
    replay("standard_webhook", harness::standard_webhook);
}

#[test]
fn launch_request_corpus() {
    replay("launch_request", harness::launch_request);
}

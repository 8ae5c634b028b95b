//! Replaying a checked-in cargo-fuzz corpus on stable: every seed of a target through the
//! function the fuzz target calls, each under `catch_unwind`, so CI exercises every seed and
//! every crash ever found without nightly or libFuzzer. Shared by the gateway's and the
//! CRM dispatcher's `tests/fuzz_corpus.rs`, which then check what their seeds reached.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// Every file of `<crate_dir>/fuzz/corpus/<target>/`, in name order.
///
/// # Panics
/// When the directory cannot be read (the test fails, naming it).
pub fn seeds(crate_dir: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(crate_dir).join("fuzz/corpus").join(target);
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

/// Runs `run` on every seed of `target` (at least `min_seeds` of them) and returns what
/// each reached, in name order.
///
/// # Panics
/// When there are fewer seeds, a seed cannot be read, or `run` panicked on any seed (the
/// test fails, naming every such file).
pub fn replay<R>(
    crate_dir: &str,
    target: &str,
    min_seeds: usize,
    run: impl Fn(&[u8]) -> R,
) -> Vec<R> {
    let files = seeds(crate_dir, target);
    // The seeds cover the target's shapes; an emptied directory is a mistake.
    assert!(
        files.len() >= min_seeds,
        "{target}: only {} seeds",
        files.len()
    );
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
    reached
}

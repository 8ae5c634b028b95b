//! `cargo xtask fuzz`: every libFuzzer target of the workspace's cargo-fuzz crates, on the
//! nightly toolchain, for a bounded time each.
//!
//! - cargo-fuzz is installed from crates.io (`cargo install cargo-fuzz --locked`) when
//!   `cargo fuzz` is missing; nightly must already be there (`rustup toolchain install nightly`).
//! - The checked-in corpora (`<crate>/fuzz/corpus/<target>/`) are read, never written, unless
//!   `--keep-new`: libFuzzer writes what it finds to the first corpus directory it is given,
//!   which is a scratch one under the ignored `<crate>/fuzz/target/new-corpus/<target>/`.
//! - Both crates build into one target directory (`CARGO_TARGET_DIR`, else
//!   `<repo>/target/fuzz`), so librdkafka is compiled with the sanitizer flags once.
//! - A crash does not stop the other targets; the command then fails naming each artifact
//!   (`<crate>/fuzz/artifacts/<target>/crash-*`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::layout::Layout;

/// The cargo-fuzz crates, relative to the repository.
pub const FUZZ_CRATES: [&str; 2] = ["edges/gateway/fuzz", "processors/crm-dispatcher/fuzz"];

/// What `cargo xtask fuzz` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzOptions {
    /// Seconds per target (libFuzzer's `-max_total_time`).
    pub seconds: u64,
    /// Run only this target.
    pub target: Option<String>,
    /// Let libFuzzer add what it finds to the checked-in corpus.
    pub keep_new: bool,
    /// Further libFuzzer flags.
    pub libfuzzer_args: Vec<String>,
}

/// One fuzz target and the crate that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The cargo-fuzz crate directory (`.../fuzz`).
    pub fuzz_dir: PathBuf,
    pub name: String,
}

/// How one target's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    pub target: String,
    /// Executions libFuzzer reported (`Done N runs`), if it got that far.
    pub runs: Option<u64>,
    /// The crash input libFuzzer saved, if it found one.
    pub artifact: Option<String>,
    pub success: bool,
}

/// The targets of one cargo-fuzz crate: the files of its `fuzz_targets/` (each a `[[bin]]`
/// of the same name), in name order.
pub fn targets_of(fuzz_dir: &Path) -> Result<Vec<Target>> {
    let dir = fuzz_dir.join("fuzz_targets");
    let entries = std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_owned))
        .collect();
    names.sort();
    Ok(names
        .into_iter()
        .map(|name| Target {
            fuzz_dir: fuzz_dir.to_path_buf(),
            name,
        })
        .collect())
}

/// The libFuzzer arguments after `cargo fuzz run <target>`: corpus directories first (new
/// inputs go to the first), then `--` and the flags.
pub fn run_args(
    fuzz_dir: &Path,
    target: &str,
    options: &FuzzOptions,
) -> (Vec<PathBuf>, Vec<String>) {
    let seeds = fuzz_dir.join("corpus").join(target);
    let dirs = if options.keep_new {
        vec![seeds]
    } else {
        vec![
            fuzz_dir.join("target").join("new-corpus").join(target),
            seeds,
        ]
    };
    let mut flags = vec![
        format!("-max_total_time={}", options.seconds),
        "-print_final_stats=1".to_owned(),
    ];
    flags.extend(options.libfuzzer_args.iter().cloned());
    (dirs, flags)
}

/// libFuzzer's `Done 123 runs in 60 second(s)`.
pub fn runs_in(line: &str) -> Option<u64> {
    let rest = line.trim().strip_prefix("Done ")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// libFuzzer's `... Test unit written to ./fuzz/artifacts/t/crash-abc`.
pub fn artifact_in(line: &str) -> Option<String> {
    let (_, path) = line.split_once("Test unit written to ")?;
    Some(path.trim().to_owned())
}

/// A libFuzzer line too chatty to show (one per new or smaller input, one
/// per newly covered function); the `pulse` lines (at every power of two
/// executions) show the progress.
fn is_chatter(line: &str) -> bool {
    line.starts_with('#') && (line.contains("\tNEW ") || line.contains("\tREDUCE "))
        || line.trim_start().starts_with("NEW_FUNC[")
}

/// `cargo` as the rustup proxy, so `+nightly` picks the toolchain; the variables the outer
/// (stable) cargo set for xtask would otherwise steer the nightly one.
fn rustup_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    for var in ["CARGO", "RUSTC", "RUSTDOC", "RUSTUP_TOOLCHAIN", "RUSTFLAGS"] {
        cmd.env_remove(var);
    }
    cmd
}

fn ensure_tools() -> Result<()> {
    let nightly = rustup_cargo()
        .args(["+nightly", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !nightly {
        bail!("fuzzing needs the nightly toolchain: rustup toolchain install nightly");
    }
    let has_fuzz = rustup_cargo()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_fuzz {
        println!("fuzz: installing cargo-fuzz (cargo install cargo-fuzz --locked)");
        let status = rustup_cargo()
            .args(["install", "cargo-fuzz", "--locked"])
            .status()
            .context("running cargo install cargo-fuzz")?;
        if !status.success() {
            bail!("`cargo install cargo-fuzz --locked` failed ({status})");
        }
    }
    Ok(())
}

fn target_dir(layout: &Layout) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| layout.repo.join("target").join("fuzz"))
}

/// Runs one target, showing cargo's and libFuzzer's progress.
fn run_one(layout: &Layout, target: &Target, options: &FuzzOptions) -> Result<RunReport> {
    let (dirs, flags) = run_args(&target.fuzz_dir, &target.name, options);
    for dir in &dirs {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // cargo fuzz runs from the crate that holds the fuzz directory.
    let crate_dir = target.fuzz_dir.parent().unwrap_or(&target.fuzz_dir);
    let mut child = rustup_cargo()
        .args(["+nightly", "fuzz", "run", "--target-dir"])
        .arg(target_dir(layout))
        .arg(&target.name)
        .args(&dirs)
        .arg("--")
        .args(&flags)
        .current_dir(crate_dir)
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .context("running cargo +nightly fuzz run")?;
    let mut report = RunReport {
        target: target.name.clone(),
        runs: None,
        artifact: None,
        success: false,
    };
    if let Some(stderr) = child.stderr.take() {
        let mut reader = BufReader::new(stderr);
        let mut raw = Vec::new();
        // Lines may hold any bytes (a crash prints its input).
        while reader.read_until(b'\n', &mut raw).unwrap_or(0) > 0 {
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end();
            report.runs = runs_in(line).or(report.runs);
            if let Some(artifact) = artifact_in(line) {
                report.artifact = Some(crate_dir.join(artifact).display().to_string());
            }
            if !is_chatter(line) {
                eprintln!("  {line}");
            }
            raw.clear();
        }
    }
    report.success = child.wait().context("waiting for cargo fuzz")?.success();
    Ok(report)
}

/// `cargo xtask fuzz`: every target (or the one asked for) for `options.seconds` each.
pub fn fuzz(layout: &Layout, options: &FuzzOptions) -> Result<()> {
    let mut targets = Vec::new();
    for dir in FUZZ_CRATES {
        targets.extend(targets_of(&layout.repo.join(dir))?);
    }
    if let Some(only) = &options.target {
        let known: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        if !known.contains(&only.as_str()) {
            bail!(
                "there is no fuzz target `{only}`; there are: {}",
                known.join(", ")
            );
        }
        targets.retain(|t| &t.name == only);
    }
    ensure_tools()?;
    let mut reports = Vec::new();
    for (n, target) in targets.iter().enumerate() {
        println!(
            "fuzz: [{}/{}] {} ({}), {} s{}",
            n + 1,
            targets.len(),
            target.name,
            layout.show(&target.fuzz_dir),
            options.seconds,
            if options.keep_new {
                ", new inputs kept in the corpus"
            } else {
                ""
            }
        );
        reports.push(run_one(layout, target, options)?);
    }
    println!("fuzz: summary");
    for r in &reports {
        let runs = r.runs.map_or("?".to_owned(), |n| n.to_string());
        let verdict = match (&r.artifact, r.success) {
            (Some(artifact), _) => format!("CRASH, input saved in {artifact}"),
            (None, true) => "ok".to_owned(),
            (None, false) => "FAILED (see above)".to_owned(),
        };
        println!("  {:<18} {:>12} runs  {verdict}", r.target, runs);
    }
    let failed: Vec<String> = reports
        .iter()
        .filter(|r| !r.success || r.artifact.is_some())
        .map(|r| match &r.artifact {
            Some(artifact) => format!("{} (crash: {artifact})", r.target),
            None => r.target.clone(),
        })
        .collect();
    if !failed.is_empty() {
        bail!("fuzzing failed: {}", failed.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(keep_new: bool) -> FuzzOptions {
        FuzzOptions {
            seconds: 60,
            target: None,
            keep_new,
            libfuzzer_args: vec!["-jobs=1".into()],
        }
    }

    #[test]
    fn new_inputs_go_to_a_scratch_corpus_unless_asked_to_be_kept() {
        let dir = Path::new("/r/fuzz");
        let (dirs, flags) = run_args(dir, "t", &options(false));
        assert_eq!(
            dirs,
            [
                PathBuf::from("/r/fuzz/target/new-corpus/t"),
                PathBuf::from("/r/fuzz/corpus/t")
            ]
        );
        assert_eq!(
            flags,
            ["-max_total_time=60", "-print_final_stats=1", "-jobs=1"]
        );
        let (dirs, _) = run_args(dir, "t", &options(true));
        assert_eq!(dirs, [PathBuf::from("/r/fuzz/corpus/t")]);
    }

    #[test]
    fn libfuzzer_output_gives_the_runs_and_the_crash_artifact() {
        assert_eq!(
            runs_in("Done 1234567 runs in 61 second(s)"),
            Some(1_234_567)
        );
        assert_eq!(runs_in("#1024\tpulse  cov: 1 ft: 2"), None);
        assert_eq!(
            artifact_in(
                "artifact_prefix='/r/fuzz/artifacts/t/'; Test unit written to /r/fuzz/artifacts/t/crash-ab12"
            ),
            Some("/r/fuzz/artifacts/t/crash-ab12".to_owned())
        );
        assert!(is_chatter("#77\tNEW    cov: 10 ft: 12 corp: 3/40b"));
        assert!(is_chatter(
            "\tNEW_FUNC[1/2]: 0x55 in serde_json::read::error"
        ));
        assert!(!is_chatter("#65536\tpulse  cov: 10 ft: 12 corp: 3/40b"));
    }

    #[test]
    fn every_fuzz_crate_has_targets_and_a_seed_corpus_for_each() {
        let layout = Layout::discover();
        for dir in FUZZ_CRATES {
            let targets = targets_of(&layout.repo.join(dir)).unwrap();
            assert!(!targets.is_empty(), "{dir} has no targets");
            for t in targets {
                let seeds = t.fuzz_dir.join("corpus").join(&t.name);
                assert!(seeds.is_dir(), "{} has no corpus", t.name);
            }
        }
    }
}

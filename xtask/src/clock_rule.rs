//! The clock rule, checked at the start of `cargo xtask test`: no code outside the clock
//! module reads the system time for a business decision.
//!
//! Business time comes from `callstream_platform::clock` (the process clock, which a soak
//! scales); a place that must have real time says so by naming `SystemClock` (signature
//! freshness, token expiry). Tests, benches, the xtask and the fuzz harnesses are outside
//! the rule: they read time to measure or to set up, not to decide.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Folders whose code runs in the product's processes.
const PRODUCT_FOLDERS: [&str; 9] = [
    "processors",
    "edges",
    "sims",
    "projections",
    "runtime",
    "domain",
    "platform",
    "schemas",
    "cli",
];

/// What reads the system time directly.
const SYSTEM_TIME_READS: [&str; 4] = [
    "Utc::now(",
    "SystemTime::now(",
    "Local::now(",
    "OffsetDateTime::now_utc(",
];

/// Reads that are not business decisions, with why: (path suffix, needle, reason).
const ALLOWED: [(&str, &str, &str); 2] = [
    (
        "platform/src/clock.rs",
        "SystemTime::now(",
        "the clock itself",
    ),
    (
        "sims/sim-voice/src/state.rs",
        "SystemTime::now(",
        "a salt for call SIDs when none is configured, not a time",
    ),
];

/// One read of the system time outside the clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: PathBuf,
    pub line: usize,
    pub text: String,
}

/// Fails, naming each place, when product code reads the system time outside the clock.
pub fn check(repo: &Path) -> Result<()> {
    let mut findings = Vec::new();
    for folder in PRODUCT_FOLDERS {
        for file in rust_files(&repo.join(folder))? {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let relative = file.strip_prefix(repo).unwrap_or(&file).to_path_buf();
            findings.extend(scan(&relative, &text));
        }
    }
    if findings.is_empty() {
        println!("clock: no business code reads the system time outside the clock");
        return Ok(());
    }
    for f in &findings {
        println!("clock: {}:{}: {}", f.path.display(), f.line, f.text.trim());
    }
    bail!(
        "{} reads of the system time outside callstream_platform::clock; use \
         clock::now_utc()/now_ms() (business time) or name SystemClock (real time, say why)",
        findings.len()
    )
}

/// The reads in one file's product code: the text before its first `#[cfg(test)]`.
pub fn scan(path: &Path, text: &str) -> Vec<Finding> {
    let shown = path.to_string_lossy().replace('\\', "/");
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or_default();
        for needle in SYSTEM_TIME_READS {
            let allowed = ALLOWED
                .iter()
                .any(|(suffix, n, _)| shown.ends_with(suffix) && *n == needle);
            if code.contains(needle) && !allowed {
                found.push(Finding {
                    path: path.to_path_buf(),
                    line: index + 1,
                    text: line.to_owned(),
                });
            }
        }
    }
    found
}

/// Product `.rs` files under `dir`: not tests, benches, fuzz harnesses or build output.
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry
                .with_context(|| format!("listing {}", dir.display()))?
                .path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if path.is_dir() {
                if !matches!(name, "tests" | "benches" | "fuzz" | "target" | "examples") {
                    pending.push(path);
                }
            } else if name.ends_with(".rs") && !name.ends_with("_tests.rs") && name != "tests.rs" {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_business_read_of_the_system_time_is_found_and_tests_and_comments_are_not() {
        let text = "fn a() {\n    let t = Utc::now();\n    // Utc::now() in a comment\n}\n\
                    #[cfg(test)]\nmod tests { fn b() { Utc::now(); } }\n";
        let found = scan(Path::new("edges/gateway/src/launch.rs"), text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].line, 2);
    }

    #[test]
    fn the_clock_itself_and_the_allowed_reads_pass() {
        let clock = "fn now() { std::time::SystemTime::now() }\n";
        assert!(scan(Path::new("platform/src/clock.rs"), clock).is_empty());
        assert_eq!(scan(Path::new("platform/src/other.rs"), clock).len(), 1);
    }

    #[test]
    fn the_workspace_keeps_the_rule() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        check(&repo).unwrap();
    }
}

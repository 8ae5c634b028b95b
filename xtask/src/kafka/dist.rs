//! The Kafka distribution: a Java runtime that can run it, and its jars fetched from Maven
//! Central by `mvn` into `.stack/kafka/libs`.
//!
//! The fetch is all-or-nothing: jars land in a scratch directory that is renamed into place
//! only after Maven succeeds, and a stamp (a copy of the pom they came from) marks the set
//! complete. A later run with the same pom downloads nothing; a changed pom fetches again.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::layout::Layout;
use crate::procs::{tail_text, which};

/// The goal that copies the jars, fully qualified: with an empty ~/.m2 and no network, a bare
/// `dependency:` prefix fails with a confusing "no plugin found for prefix" instead of the
/// download error that says what is wrong.
const COPY_GOAL: &str = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies";

/// Kafka 4 brokers need Java 17 or newer.
const MIN_JAVA: u32 = 17;

/// The file, beside the jars, that holds the pom they were fetched from.
pub const STAMP: &str = ".fetched-from";

/// The `java` to run: $JAVA_HOME/bin/java when set, else the first on PATH.
pub fn java() -> Result<PathBuf> {
    let java = match std::env::var_os("JAVA_HOME") {
        Some(home) if PathBuf::from(&home).join("bin/java").is_file() => {
            PathBuf::from(home).join("bin/java")
        }
        _ => which("java").context(
            "no `java` found on PATH (nor in $JAVA_HOME): Kafka needs a Java 17+ runtime; \
             install one, e.g. `apt-get install openjdk-17-jre-headless`",
        )?,
    };
    let out = Command::new(&java)
        .arg("-version")
        .output()
        .with_context(|| format!("could not run {} -version", java.display()))?;
    let banner = String::from_utf8_lossy(&out.stderr);
    match java_major(&banner) {
        Some(v) if v >= MIN_JAVA => Ok(java),
        Some(v) => bail!(
            "{} is Java {v}; Kafka 4 needs Java {MIN_JAVA}+ (set JAVA_HOME to a newer JDK)",
            java.display()
        ),
        None => bail!(
            "could not read the Java version from `{} -version`:\n{banner}",
            java.display()
        ),
    }
}

/// The major version in a `java -version` banner: `openjdk version "17.0.9"` -> 17,
/// `java version "1.8.0_392"` -> 8.
pub fn java_major(banner: &str) -> Option<u32> {
    let quoted = banner.split('"').nth(1)?;
    let mut parts = quoted.split(['.', '-', '+', '_']);
    let first: u32 = parts.next()?.parse().ok()?;
    if first == 1 {
        parts.next()?.parse().ok()
    } else {
        Some(first)
    }
}

/// Makes sure `.stack/kafka/libs` holds the complete jar set of the committed pom.
pub fn ensure_libs(layout: &Layout) -> Result<()> {
    ensure_jars(
        layout,
        "kafka",
        "the broker jars",
        &layout.kafka_pom(),
        &layout.kafka_libs(),
    )
}

/// Makes sure `libs` holds every runtime jar of `pom`, fetched by Maven all or nothing: into
/// a scratch directory renamed into place when mvn succeeds, stamped with the pom they came
/// from (a changed pom fetches again, an unchanged one downloads nothing).
pub fn ensure_jars(
    layout: &Layout,
    label: &str,
    what: &str,
    pom: &Path,
    libs: &Path,
) -> Result<()> {
    let pom_text = fs::read_to_string(pom).with_context(|| format!("reading {}", pom.display()))?;
    let stamp = libs.join(STAMP);
    if fs::read_to_string(&stamp).ok().as_deref() == Some(pom_text.as_str()) {
        return Ok(());
    }
    let mvn = which("mvn").with_context(|| {
        format!(
            "no `mvn` found on PATH: xtask fetches {what} with Maven; \
             install it, e.g. `apt-get install maven`"
        )
    })?;
    let parent = libs.parent().context("a libs folder has a parent")?;
    let scratch = parent.join("libs.partial");
    if scratch.exists() {
        fs::remove_dir_all(&scratch)?;
    }
    fs::create_dir_all(&scratch)?;
    println!(
        "{label}: fetching {what} with Maven ({} -> {}) ...",
        layout.show(pom),
        layout.show(libs)
    );
    let out = Command::new(mvn)
        .args(["-B", "-q", "-Dstyle.color=never", "-f"])
        .arg(pom)
        .arg(COPY_GOAL)
        .arg("-DincludeScope=runtime")
        .arg(format!("-DoutputDirectory={}", scratch.display()))
        .output()
        .context("could not run mvn")?;
    if !out.status.success() {
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .replace("\u{1b}[0m", ""); // a colour reset Maven prints even with colours off
        bail!(
            "{}\n--- last lines of mvn's output ---\n{}",
            explain_mvn_failure(&log),
            tail_text(&log, 25)
        );
    }
    let jars = fs::read_dir(&scratch)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jar"))
        .count();
    if jars == 0 {
        bail!(
            "mvn succeeded but copied no jars into {}",
            scratch.display()
        );
    }
    if libs.exists() {
        fs::remove_dir_all(libs)?;
    }
    fs::rename(&scratch, libs)?;
    fs::write(&stamp, pom_text)?;
    println!("{label}: {jars} jars in {}", layout.show(libs));
    Ok(())
}

/// One sentence on what went wrong with mvn and what to do, from its output.
pub fn explain_mvn_failure(log: &str) -> &'static str {
    let unreachable = [
        "Could not transfer",
        "UnknownHostException",
        "Connection refused",
        "Connect to repo",
        "Network is unreachable",
        "timed out",
    ];
    if unreachable.iter().any(|needle| log.contains(needle)) {
        "mvn could not download the Kafka jars: Maven Central (repo.maven.apache.org) looks \
         unreachable; check the network or the proxy/mirror in ~/.m2/settings.xml, then rerun"
    } else if log.contains("Could not resolve dependencies")
        || log.contains("Could not find artifact")
    {
        "mvn could not resolve the Kafka artifacts named in xtask/kafka/pom.xml; check the \
         versions there (and that Maven Central is reachable)"
    } else {
        "mvn failed to fetch the Kafka jars (see its output below)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_java_major_versions() {
        let cases = [
            (
                "openjdk version \"17.0.13\" 2024-10-15\nOpenJDK Runtime",
                Some(17),
            ),
            ("openjdk version \"21\" 2023-09-19", Some(21)),
            ("java version \"1.8.0_392\"", Some(8)),
            ("openjdk version \"25-ea\" 2025-09-16", Some(25)),
            ("no quotes here", None),
        ];
        for (banner, expected) in cases {
            assert_eq!(java_major(banner), expected, "{banner}");
        }
    }

    #[test]
    fn explains_mvn_failures() {
        let offline = "[ERROR] Failed to execute goal ... Could not transfer artifact \
                       org.apache.kafka:kafka_2.13:pom:4.1.1 from/to central";
        assert!(explain_mvn_failure(offline).contains("unreachable"));
        let missing = "[ERROR] Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9";
        assert!(explain_mvn_failure(missing).contains("versions"));
        assert!(explain_mvn_failure("boom").contains("see its output"));
    }
}

//! What `cargo xtask test` runs, decided without running anything: which of its arguments go
//! to cargo and which to the test binaries, which test binaries the build produced (from
//! cargo's JSON messages), in what order to start them, and which tests need the stack to
//! themselves.
//!
//! Pure code, so the runner (`test_runner.rs`) only does I/O.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;

/// How many test binaries run at once, unless `--test-jobs` says otherwise. Most integration
/// tests wait on Kafka commits and Postgres round trips rather than on the CPU, so four at a
/// time keep two cores busy without starving the broker.
pub const DEFAULT_JOBS: usize = 4;

/// Tests that stop or restart a server of the shared stack: they run one at a time after
/// everything else, with `--ignored --exact`, when the whole workspace is tested.
pub const EXCLUSIVE: &[Exclusive] = &[
    Exclusive {
        package: "callstream-gateway",
        target: "outage",
        test: "the_gateway_refuses_while_the_broker_is_down_and_recovers_without_restart",
    },
    Exclusive {
        package: "callstream-projections",
        target: "postgres_restart",
        test: "postgres_restart_under_load_loses_nothing",
    },
    Exclusive {
        package: "callstream-e2e",
        target: "registry_outage",
        test: "the_registry_stops_and_nothing_is_lost_or_dead_lettered",
    },
];

/// Tests that need the three-broker SASL_SSL cluster and its TLS Postgres (`xtask up
/// --cluster`): with the whole suite, the cluster starts after the exclusive tests, these run
/// one at a time (`--ignored --exact`), and the cluster stops. `--no-cluster` skips them.
pub const ON_THE_CLUSTER: &[Exclusive] = &[
    Exclusive {
        package: "callstream-e2e",
        target: "kafka_connection_check",
        test: "on_the_cluster_credentials_certificates_and_acls_are_named",
    },
    Exclusive {
        package: "callstream-e2e",
        target: "postgres_roles",
        test: "on_the_cluster_postgres_takes_only_tls_with_the_right_password",
    },
    Exclusive {
        package: "callstream-e2e",
        target: "cluster_durability",
        test: "producers_and_topics_on_the_cluster_are_durable_as_read_back",
    },
    Exclusive {
        package: "xtask",
        target: "xtask",
        test: "cluster::check_tests::cluster_enforces_tls_scram_and_acls_and_survives_a_broker",
    },
    Exclusive {
        package: "callstream-e2e",
        target: "broker_death",
        test: "brokers_die_under_load_and_nothing_is_lost_or_repeated",
    },
];

/// One `#[ignore]`d test that needs the stack to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exclusive {
    pub package: &'static str,
    /// The integration-test target (its file name under `tests/`), or the binary whose unit
    /// tests hold it (`xtask`).
    pub target: &'static str,
    pub test: &'static str,
}

impl Exclusive {
    /// Whether `binary` is the test executable that holds this test.
    pub fn is_in(&self, binary: &TestBinary) -> bool {
        binary.package == self.package
            && binary.target == self.target
            && matches!(binary.kind.as_str(), "test" | "bin")
    }
}

/// `cargo xtask test ARGS` taken apart.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TestArgs {
    /// For `cargo test --no-run`: package and target selection, features, `--release`, ...
    pub cargo: Vec<String>,
    /// For every test binary (what follows `--`): a name filter, `--nocapture`, ...
    pub binary: Vec<String>,
    /// Test binaries running at once.
    pub jobs: usize,
    /// Whether to run the [`EXCLUSIVE`] tests at the end.
    pub exclusive: bool,
    /// Whether to end with a short soak (`cargo xtask soak --short`), alone.
    pub soak: bool,
    /// Whether to run the [`ON_THE_CLUSTER`] tests, with the cluster up.
    pub cluster: bool,
}

impl TestArgs {
    /// Splits the arguments. `--test-jobs N`, `--no-exclusive`, `--no-soak` and `--no-cluster`
    /// (before `--`) are ours;
    /// the rest is cargo's, and what follows `--` is the binaries'.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut parsed = TestArgs {
            jobs: DEFAULT_JOBS,
            exclusive: true,
            soak: true,
            cluster: true,
            ..TestArgs::default()
        };
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            match arg.as_str() {
                "--" => {
                    parsed.binary.extend(rest.by_ref().cloned());
                    break;
                }
                "--no-exclusive" => parsed.exclusive = false,
                "--no-soak" => parsed.soak = false,
                "--no-cluster" => parsed.cluster = false,
                "--test-jobs" => {
                    let n = rest.next().ok_or("--test-jobs needs a number")?;
                    parsed.jobs = parse_jobs(n)?;
                }
                other => match other.strip_prefix("--test-jobs=") {
                    Some(n) => parsed.jobs = parse_jobs(n)?,
                    None => parsed.cargo.push(other.to_string()),
                },
            }
        }
        // A selection of packages or tests leaves out what the exclusive tests belong to, or
        // asks for something narrower than the whole suite.
        if !parsed.selects_everything() {
            parsed.exclusive = false;
            parsed.soak = false;
            parsed.cluster = false;
        }
        Ok(parsed)
    }

    /// Whether no package, target or test-name selection narrows the run.
    pub fn selects_everything(&self) -> bool {
        let narrows_cargo = self.cargo.iter().any(|a| {
            [
                "-p",
                "--package",
                "--test",
                "--lib",
                "--bin",
                "--doc",
                "--exclude",
            ]
            .iter()
            .any(|flag| a == flag || a.starts_with(&format!("{flag}=")))
                || (a.starts_with("-p") && a.len() > 2)
        });
        let filters = self.binary.iter().any(|a| !a.starts_with('-'));
        !narrows_cargo && !filters
    }

    /// Whether cargo's arguments select packages themselves (else `--workspace` is added).
    pub fn selects_packages(&self) -> bool {
        self.cargo.iter().any(|a| {
            a.starts_with("-p") || a.starts_with("--package") || a == "--workspace" || a == "--all"
        })
    }
}

fn parse_jobs(n: &str) -> Result<usize, String> {
    match n.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("--test-jobs wants a positive number, not `{n}`")),
    }
}

/// A test executable cargo built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestBinary {
    pub package: String,
    /// `lib`, `bin`, `test`, ... (cargo's target kind).
    pub kind: String,
    /// The target's name: the crate for unit tests, the file name for integration tests.
    pub target: String,
    pub executable: PathBuf,
    /// The package's directory: cargo runs tests there, and some read files relative to it.
    pub manifest_dir: PathBuf,
}

impl TestBinary {
    /// How the run names it, e.g. `callstream-gateway tests/outage` or `callstream-domain (unit)`.
    pub fn label(&self) -> String {
        match self.kind.as_str() {
            "test" => format!("{} tests/{}", self.package, self.target),
            "lib" | "proc-macro" => format!("{} (unit)", self.package),
            kind => format!("{} {kind} {}", self.package, self.target),
        }
    }
}

/// The test binary of one `compiler-artifact` message of `cargo test --no-run
/// --message-format=json`, if the line is one.
pub fn parse_artifact(line: &str) -> Option<TestBinary> {
    let message: Value = serde_json::from_str(line).ok()?;
    if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
        return None;
    }
    let executable = PathBuf::from(message["executable"].as_str()?);
    let manifest = PathBuf::from(message["manifest_path"].as_str()?);
    let target = &message["target"];
    let package = package_name(message["package_id"].as_str()?)?;
    Some(TestBinary {
        package,
        kind: target["kind"][0].as_str()?.to_string(),
        target: target["name"].as_str()?.to_string(),
        executable,
        manifest_dir: manifest.parent()?.to_path_buf(),
    })
}

/// The package name in a package id: `path+file:///w/domain#callstream-domain@0.1.0`, or
/// `path+file:///w/xtask#0.1.0` when the name is the directory's.
pub fn package_name(package_id: &str) -> Option<String> {
    let (url, fragment) = package_id.rsplit_once('#')?;
    let name = match fragment.split_once('@') {
        Some((name, _version)) => name,
        None => url.rsplit('/').next()?,
    };
    (!name.is_empty()).then(|| name.to_string())
}

/// The order to start binaries in: longest first by the last run's durations (the run ends
/// no earlier than its longest binary, so that one must not start last); binaries never
/// timed count as long, and ties go by label so the order is stable.
pub fn schedule(mut binaries: Vec<TestBinary>, seconds: &HashMap<String, f64>) -> Vec<TestBinary> {
    const UNKNOWN: f64 = 60.0;
    binaries.sort_by(|a, b| {
        let time = |t: &TestBinary| seconds.get(&t.label()).copied().unwrap_or(UNKNOWN);
        time(b)
            .total_cmp(&time(a))
            .then_with(|| a.label().cmp(&b.label()))
    });
    binaries
}

/// Reads the durations file: `label<TAB>seconds` lines; anything else is skipped.
pub fn parse_durations(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter_map(|line| {
            let (label, secs) = line.rsplit_once('\t')?;
            Some((label.to_string(), secs.trim().parse().ok()?))
        })
        .collect()
}

/// Writes the durations file, sorted by label.
pub fn format_durations(seconds: &HashMap<String, f64>) -> String {
    let mut lines: Vec<String> = seconds
        .iter()
        .map(|(label, secs)| format!("{label}\t{secs:.1}"))
        .collect();
    lines.sort();
    lines.join("\n") + "\n"
}

/// The names of the tests a binary's output reports as failed (`test NAME ... FAILED`).
pub fn failed_tests(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix("test ")?.strip_suffix(" ... FAILED"))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
#[path = "test_plan_tests.rs"]
mod tests;

//! `cargo xtask test`: one build, then every test binary of the workspace against the one
//! stack, several binaries at a time.
//!
//! `cargo test` runs its binaries one after another, so a suite of integration tests that
//! mostly wait on Kafka commits takes the sum of their times. Here the binaries cargo built
//! run in a pool (longest first, by the last run's times), each in its package's directory
//! with the stack's addresses, its output kept in `.stack/test-logs/` and shown in full only
//! when it fails. Tests never share topics or databases (each makes its own names), so they
//! can run side by side; the few that stop a server of the stack run alone at the end.
//!
//! The run ends with `N passed, N failed` and fails when a build, a binary or a test does.
//! A passing run deletes the topics its tests made, on the dev broker and on the cluster (see
//! `kafka::topics`).

use std::collections::{BTreeSet, VecDeque};
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::cargo_cmds::{cargo, run_topics_create, stack_env};
use crate::kafka::topics::{self, Broker};
use crate::layout::Layout;
use crate::stack;
use crate::summary::Tally;
use crate::test_plan::{self, Exclusive, TestArgs, TestBinary, EXCLUSIVE, ON_THE_CLUSTER};

/// A test binary that runs longer than this is killed and counted as failed.
const BINARY_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// One thing the pool runs.
struct Job {
    label: String,
    command: Command,
}

/// How one job ended.
struct Outcome {
    label: String,
    status: Result<ExitStatus, String>,
    seconds: f64,
    output: String,
}

impl Outcome {
    fn ok(&self) -> bool {
        matches!(&self.status, Ok(s) if s.success())
    }
}

pub fn test(layout: &Layout, args: &[String]) -> Result<()> {
    let args = TestArgs::parse(args).map_err(|e| anyhow!(e))?;
    let started = Instant::now();
    // Before anything slow: a dependency that breaks the layering fails the run at once.
    crate::layering::check(&layout.repo)?;
    crate::clock_rule::check(&layout.repo)?;
    // The stack and the tools the tests use are fetched and started while cargo builds: on a
    // fresh machine both take minutes, one mostly waiting on the network, the other on the
    // CPU. The build runs here; what it needs nothing from runs beside it.
    let setup = {
        let layout = layout.clone();
        thread::spawn(move || set_up_for_tests(&layout))
    };
    let binaries = build(layout, &args)?;
    println!(
        "test: built {} test binaries in {:.0}s",
        binaries.len(),
        started.elapsed().as_secs_f64()
    );
    setup
        .join()
        .map_err(|_| anyhow!("setting up the stack panicked"))??;
    // The tests make their own topics; these are the ones `callstream` itself uses, for
    // tests that run it as it would run in production (the demo).
    if layout.callstream_bin().is_file() {
        if let Err(e) = run_topics_create(layout) {
            println!("topics: warning: {e:#}");
        }
    }

    let topics_before = topics_before_the_run(layout, &Broker::dev(layout));

    let durations_file = layout.stack.join("test-durations.tsv");
    let mut durations =
        test_plan::parse_durations(&fs::read_to_string(&durations_file).unwrap_or_default());
    let mut jobs: Vec<Job> = test_plan::schedule(binaries.clone(), &durations)
        .into_iter()
        .map(|b| binary_job(layout, &b, &args.binary, &[]))
        .collect();
    if let Some(doc) = doc_job(layout, &args) {
        jobs.insert(0, doc);
    }
    let logs = layout.stack.join("test-logs");
    fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    println!(
        "test: running {} jobs, {} at a time (logs in {})",
        jobs.len(),
        args.jobs,
        layout.show(&logs)
    );
    let mut outcomes = run_pool(jobs, args.jobs, &logs);

    // The cluster starts (three brokers and a Postgres, a minute or more) while the tests that
    // stop a server of the dev stack run one at a time, leaving a core to spare.
    let cluster = (args.cluster
        && !ignored_jobs(layout, &binaries, ON_THE_CLUSTER, &args.binary).is_empty())
    .then(|| {
        println!("test: starting the three-broker cluster and its Postgres, for its tests later");
        let layout = layout.clone();
        thread::spawn(move || crate::cargo_cmds::up_cluster(&layout))
    });
    let foreign = stack::not_ours(layout);
    let mut not_run = None;
    if args.exclusive && !foreign.is_empty() {
        let alone = ignored_jobs(layout, &binaries, EXCLUSIVE, &args.binary);
        if !alone.is_empty() {
            let why = format!(
                "NOT RUN: {} tests that stop a server of the stack, because {} here {} not \
                 started by this checkout (another checkout's, or installed otherwise) and may \
                 not be stopped from here; run them where `cargo xtask up` started the stack \
                 (`cargo xtask status` says whose each server is)",
                alone.len(),
                foreign.join(", "),
                if foreign.len() == 1 { "was" } else { "were" }
            );
            println!("test: {why}");
            not_run = Some(why);
        }
    } else if args.exclusive {
        let alone = ignored_jobs(layout, &binaries, EXCLUSIVE, &args.binary);
        if !alone.is_empty() {
            println!(
                "test: running {} tests that stop a server of the stack, one at a time",
                alone.len()
            );
            outcomes.extend(run_pool(alone, 1, &logs));
        }
    }

    if let Some(cluster) = cluster {
        let up = cluster
            .join()
            .unwrap_or_else(|_| Err(anyhow!("starting the cluster panicked")));
        outcomes.extend(cluster_phase(layout, &binaries, &args.binary, &logs, up));
    }

    if args.soak && layout.callstream_bin().is_file() {
        // The whole pipeline as processes, on the scaled clock, every role killed once: a
        // broken invariant fails CI. Alone, as it runs a dozen processes of its own.
        // A test that runs `cargo xtask` (to stop and start a server) may have rebuilt this
        // very binary meanwhile: then the one on disk is the one to start.
        let current = std::env::current_exe().map(|exe| {
            if exe.is_file() {
                exe
            } else {
                layout.repo.join("target").join("debug").join("xtask")
            }
        });
        match current {
            Ok(xtask) => {
                let mut command = Command::new(xtask);
                command.args(["soak", "--short"]).current_dir(&layout.repo);
                println!("test: a short soak (four business hours at 96x, every role killed once)");
                outcomes.extend(run_pool(
                    vec![Job {
                        label: "soak --short".into(),
                        command,
                    }],
                    1,
                    &logs,
                ));
            }
            Err(e) => println!("test: warning: no soak, the xtask binary is not found: {e}"),
        }
    }

    for o in &outcomes {
        durations.insert(o.label.clone(), o.seconds);
    }
    // Timings only steer the next run's order; failing to keep them changes nothing else.
    let _ = fs::write(&durations_file, test_plan::format_durations(&durations));
    if let Some(before) = topics_before {
        let passed = outcomes.iter().all(Outcome::ok);
        clean_up_topics(layout, &Broker::dev(layout), &before, passed);
    }
    report(&outcomes, not_run.as_deref(), started.elapsed())
}

/// The stack up, and every tool a test runs fetched or installed.
fn set_up_for_tests(layout: &Layout) -> Result<()> {
    stack::up(layout)?;
    // The console's browser tests drive Debian's Chromium; the alert rules' tests, promtool.
    crate::debian::ensure_chromium()?;
    // The notifier's tests send email to a real SMTP server (aiosmtpd).
    crate::venv::AIOSMTPD.ensure(layout)?;
    // Downstream readers: Confluent's Python deserializer reads every topic.
    crate::venv::CONFLUENT_KAFKA.ensure(layout)?;
    // ... and so do Apicurio's Java deserializer and a Kafka Connect worker.
    for jars in crate::java_tools::ALL {
        jars.ensure(layout)?;
    }
    crate::debian::ensure_promtool()?;
    println!("test: the stack is up and the tests' tools are in place");
    Ok(())
}

/// Deletes what a failed earlier run kept on `broker`, then lists the topics there are before
/// the tests make theirs. `None` when the broker's topics cannot be listed: then nothing is
/// cleaned up.
fn topics_before_the_run(layout: &Layout, broker: &Broker) -> Option<BTreeSet<String>> {
    match topics::delete_leftovers(layout, broker) {
        Ok(0) => {}
        Ok(n) => println!("topics: deleted {n} topics an earlier failed run kept"),
        Err(e) => println!("topics: warning: could not delete an earlier run's topics: {e:#}"),
    }
    match topics::list(layout, broker) {
        Ok(names) => Some(names),
        Err(e) => {
            println!("topics: warning: cannot list topics, so this run's stay: {e:#}");
            None
        }
    }
}

/// Deletes the topics the run made on `broker` when it passed; keeps them for inspection
/// when it failed. A failure to do either is a warning: the tests' outcome stands.
fn clean_up_topics(layout: &Layout, broker: &Broker, before: &BTreeSet<String>, passed: bool) {
    let cleaned = || -> Result<()> {
        let made: BTreeSet<String> = topics::list(layout, broker)?
            .difference(before)
            .cloned()
            .collect();
        if made.is_empty() {
            return Ok(());
        }
        if passed {
            topics::delete(layout, broker, &made)?;
            println!("topics: deleted the {} topics the tests made", made.len());
        } else {
            topics::keep_for_inspection(broker, &made)?;
            println!(
                "topics: kept the {} topics the tests made, for inspection (listed in {}); the \
                 next run deletes them",
                made.len(),
                layout.show(broker.leftovers_file())
            );
        }
        Ok(())
    };
    if let Err(e) = cleaned() {
        println!("topics: warning: could not clean up the run's topics: {e:#}");
    }
}

/// `cargo test --no-run`, reading the test executables from cargo's JSON messages while its
/// diagnostics and progress go to the terminal.
fn build(layout: &Layout, args: &TestArgs) -> Result<Vec<TestBinary>> {
    let mut cmd = cargo();
    cmd.args([
        "test",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    if !args.selects_packages() {
        cmd.arg("--workspace");
    }
    cmd.args(&args.cargo)
        .current_dir(&layout.repo)
        .stdout(Stdio::piped());
    println!(
        "test: building with {cmd:?}; {}",
        crate::cargo_cmds::FIRST_BUILD
    );
    let mut child = cmd.spawn().context("starting cargo test --no-run")?;
    let mut binaries = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.context("reading cargo's messages")?;
            binaries.extend(test_plan::parse_artifact(&line));
        }
    }
    let status = child.wait()?;
    if !status.success() {
        println!("0 passed, 0 failed");
        bail!("the tests do not build ({status}); cargo printed why above");
    }
    Ok(binaries)
}

/// A job per listed `#[ignore]`d test found among `binaries`, each run alone by its exact name.
fn ignored_jobs(
    layout: &Layout,
    binaries: &[TestBinary],
    tests: &[Exclusive],
    args: &[String],
) -> Vec<Job> {
    tests
        .iter()
        .filter_map(|x| {
            let binary = binaries.iter().find(|b| x.is_in(b))?;
            let extra = ["--ignored", "--exact", x.test].map(String::from);
            Some(binary_job(layout, binary, args, &extra))
        })
        .collect()
}

/// Runs the [`ON_THE_CLUSTER`] tests one at a time on the three-broker cluster and its
/// Postgres (`up`: how starting them went, begun beside the exclusive tests), and stops the
/// cluster (its logs stay in `.stack/cluster`). A cluster that does not start is a failed job:
/// these tests are part of the suite.
fn cluster_phase(
    layout: &Layout,
    binaries: &[TestBinary],
    args: &[String],
    logs: &Path,
    up: Result<()>,
) -> Vec<Outcome> {
    let jobs = ignored_jobs(layout, binaries, ON_THE_CLUSTER, args);
    if let Err(e) = up {
        let _ = crate::cluster::down(layout);
        return vec![Outcome {
            label: "the cluster (xtask up --cluster)".into(),
            status: Err(format!("{e:#}")),
            seconds: 0.0,
            output: String::new(),
        }];
    }
    println!(
        "test: the cluster is up; its {} tests run one at a time",
        jobs.len()
    );
    let dir = layout.cluster_dir();
    let jobs = jobs
        .into_iter()
        .map(|mut job| {
            job.command.env("CALLSTREAM_CLUSTER_DIR", &dir);
            job
        })
        .collect();
    // The cluster keeps its data between runs like the dev broker: its tests' topics are
    // cleaned up the same way.
    let broker = Broker::cluster(layout);
    let topics_before = topics_before_the_run(layout, &broker);
    let outcomes = run_pool(jobs, 1, logs);
    if let Some(before) = topics_before {
        let passed = outcomes.iter().all(Outcome::ok);
        clean_up_topics(layout, &broker, &before, passed);
    }
    // Stopped either way: the soak comes next and wants the machine; the logs stay.
    if let Err(e) = crate::cluster::down(layout) {
        println!("test: warning: the cluster did not stop: {e:#}");
    }
    outcomes
}

fn binary_job(layout: &Layout, binary: &TestBinary, args: &[String], extra: &[String]) -> Job {
    let mut command = Command::new(&binary.executable);
    command
        .args(extra)
        .args(args)
        .current_dir(&binary.manifest_dir)
        .envs(stack_env(layout))
        // What cargo test sets for a test binary at run time.
        .env("CARGO_MANIFEST_DIR", &binary.manifest_dir)
        .env("CARGO_PKG_NAME", &binary.package)
        // promtool is installed above: the alert rules' test must run, never skip.
        .env("CALLSTREAM_REQUIRE_PROMTOOL", "1");
    let label = if extra.is_empty() {
        binary.label()
    } else {
        format!("{} {}", binary.label(), extra.join(" "))
    };
    Job { label, command }
}

/// Doc tests, which cargo compiles when it runs them: one job, unless the arguments select
/// other targets only.
fn doc_job(layout: &Layout, args: &TestArgs) -> Option<Job> {
    let target_flags = [
        "--lib",
        "--bin",
        "--bins",
        "--test",
        "--tests",
        "--example",
        "--examples",
        "--bench",
        "--benches",
        "--all-targets",
        "--doc",
    ];
    if args.cargo.iter().any(|a| {
        target_flags
            .iter()
            .any(|f| a == f || a.starts_with(&format!("{f}=")))
    }) {
        return None;
    }
    let mut command = cargo();
    command.args(["test", "--doc", "--quiet"]);
    if !args.selects_packages() {
        command.arg("--workspace");
    }
    command
        .args(&args.cargo)
        .arg("--")
        .args(&args.binary)
        .current_dir(&layout.repo)
        .envs(stack_env(layout));
    Some(Job {
        label: "doc tests".to_string(),
        command,
    })
}

/// Runs the jobs, `width` at a time, printing a line as each ends (and its whole output when
/// it failed).
fn run_pool(jobs: Vec<Job>, width: usize, logs: &Path) -> Vec<Outcome> {
    let total = jobs.len();
    let queue = Arc::new(Mutex::new(jobs.into_iter().collect::<VecDeque<_>>()));
    let done = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let workers: Vec<_> = (0..width.min(total.max(1)))
        .map(|_| {
            let (queue, done, logs) = (queue.clone(), done.clone(), logs.to_path_buf());
            thread::spawn(move || loop {
                let Some(job) = queue.lock().ok().and_then(|mut q| q.pop_front()) else {
                    return;
                };
                let outcome = run_job(job, &logs);
                let Ok(mut done) = done.lock() else { return };
                done.push(outcome);
                print_outcome(done.len(), total, &done[done.len() - 1]);
            })
        })
        .collect();
    for worker in workers {
        let _ = worker.join();
    }
    Arc::try_unwrap(done)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .unwrap_or_default()
}

fn run_job(mut job: Job, logs: &Path) -> Outcome {
    let started = Instant::now();
    let log = logs.join(format!("{}.log", file_name(&job.label)));
    let status = spawn_logged(&mut job.command, &log).and_then(wait_bounded);
    Outcome {
        label: job.label,
        status,
        seconds: started.elapsed().as_secs_f64(),
        output: fs::read_to_string(&log).unwrap_or_default(),
    }
}

fn spawn_logged(command: &mut Command, log: &Path) -> Result<Child, String> {
    let file = File::create(log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| e.to_string())?;
    command
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("starting {:?}: {e}", command.get_program()))
}

fn wait_bounded(mut child: Child) -> Result<ExitStatus, String> {
    let deadline = Instant::now() + BINARY_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("killed after {BINARY_TIMEOUT:?}"));
            }
            Ok(None) => thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn file_name(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn print_outcome(n: usize, total: usize, o: &Outcome) {
    let mut tally = Tally::default();
    o.output.lines().for_each(|l| tally.add_line(l));
    let verdict = match &o.status {
        Ok(_) if o.ok() => "ok",
        Ok(_) => "FAILED",
        Err(_) => "ERROR",
    };
    println!(
        "[{n:>3}/{total}] {verdict:<6} {:>6.1}s  {}  ({} passed, {} failed, {} ignored)",
        o.seconds, o.label, tally.passed, tally.failed, tally.ignored
    );
    if !o.ok() {
        if let Err(e) = &o.status {
            println!("    {e}");
        }
        println!("──── output of {} ────", o.label);
        print!("{}", o.output);
        println!("──── end of {} ────", o.label);
    }
}

fn report(outcomes: &[Outcome], not_run: Option<&str>, elapsed: Duration) -> Result<()> {
    let mut tally = Tally::default();
    for o in outcomes {
        o.output.lines().for_each(|l| tally.add_line(l));
    }
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.ok()).collect();
    if !failed.is_empty() {
        println!("test: failed:");
        for o in &failed {
            let tests = test_plan::failed_tests(&o.output);
            if tests.is_empty() {
                println!("  {} ({})", o.label, describe(&o.status));
            }
            for name in tests {
                println!("  {}: {name}", o.label);
            }
        }
    }
    println!(
        "test: {} jobs in {:.0}s",
        outcomes.len(),
        elapsed.as_secs_f64()
    );
    if let Some(why) = not_run {
        println!("test: {why}");
    }
    println!("{} passed, {} failed", tally.passed, tally.failed);
    if !failed.is_empty() || tally.failed > 0 {
        bail!("tests failed");
    }
    Ok(())
}

fn describe(status: &Result<ExitStatus, String>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => e.clone(),
    }
}

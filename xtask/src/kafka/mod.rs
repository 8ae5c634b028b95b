//! The dev Kafka broker: one KRaft node (broker + controller) run from the official jars.
//!
//! `up` fetches the jars, writes server.properties, formats storage once and starts
//! `kafka.Kafka` in its own session so it outlives xtask; it returns only once the broker
//! answers protocol requests (see `protocol`). `down` signals only the pid in our pid file,
//! and only while that process is still our broker. A broker on 9092 that xtask did not start
//! is reused as it is and never stopped.

pub mod config;
pub mod dist;
pub mod protocol;
pub mod topics;

use std::fs::{self, OpenOptions};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::layout::{self, Layout, KAFKA_CONTROLLER_PORT, KAFKA_HOST, KAFKA_PORT};
use crate::procs;
use protocol::ClusterInfo;

/// A broker loads every partition's log before it answers; storage with many topics (old test
/// runs, a long demo) takes minutes, so the wait is long and says that it is still waiting.
const READY_TIMEOUT: Duration = Duration::from_secs(300);
const READY_PROGRESS_EVERY: Duration = Duration::from_secs(30);
const STOP_GRACE: Duration = Duration::from_secs(60);
/// Heap and GC of the dev broker: enough for tests, modest on a shared machine.
const JVM_OPTS: &[&str] = &[
    "-Xms256m",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
];

/// What runs on the Kafka port.
#[derive(Debug)]
pub enum State {
    /// Our broker (pid from our pid file); `info` is None while it does not answer yet.
    Ours {
        pid: u32,
        info: Option<ClusterInfo>,
    },
    /// Something xtask did not start; `info` is Some when it speaks Kafka.
    Foreign {
        info: Option<ClusterInfo>,
    },
    Stopped,
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn probe() -> Result<ClusterInfo> {
    protocol::probe(addr(KAFKA_PORT), Duration::from_secs(3))
}

/// The pid of our broker, if the pid file names a live `kafka.Kafka` run with our config.
fn our_pid(layout: &Layout) -> Option<u32> {
    let pid = procs::read_pid(&layout.kafka_pid())?;
    let cmd = procs::cmdline(pid)?;
    let props = layout.kafka_properties().display().to_string();
    (cmd.contains("kafka.Kafka") && cmd.contains(&props)).then_some(pid)
}

pub fn state(layout: &Layout) -> State {
    if let Some(pid) = our_pid(layout) {
        return State::Ours {
            pid,
            info: probe().ok(),
        };
    }
    if procs::port_taken(addr(KAFKA_PORT)) {
        return State::Foreign { info: probe().ok() };
    }
    State::Stopped
}

pub fn describe(layout: &Layout) -> String {
    let log = layout.show(&layout.kafka_log());
    match state(layout) {
        State::Ours { pid, info: Some(i) } => format!(
            "kafka: running (pid {pid}) at {}, cluster {}, log {log}",
            layout::kafka_bootstrap(),
            i.cluster_id.as_deref().unwrap_or("?")
        ),
        State::Ours { pid, info: None } => {
            format!("kafka: process {pid} is ours but does not answer yet; log {log}")
        }
        State::Foreign { info: Some(_) } => format!(
            "kafka: a broker not started by xtask answers at {} (reused, never stopped)",
            layout::kafka_bootstrap()
        ),
        State::Foreign { info: None } => {
            format!("kafka: port {KAFKA_PORT} is taken by something that is not a Kafka broker")
        }
        State::Stopped => "kafka: stopped".to_string(),
    }
}

pub fn up(layout: &Layout) -> Result<()> {
    match state(layout) {
        State::Ours { pid, info: Some(_) } => {
            println!("kafka: already running (pid {pid}); nothing to do");
            return Ok(());
        }
        State::Ours { pid, info: None } => {
            println!("kafka: pid {pid} is starting; waiting for it to answer ...");
            let log_start = fs::metadata(layout.kafka_log()).map_or(0, |m| m.len());
            return wait_ready(layout, pid, None, log_start).map(|_| ());
        }
        State::Foreign { info: Some(_) } => {
            println!(
                "kafka: reusing the broker already answering at {} (not started by xtask; \
                 `down` leaves it alone)",
                layout::kafka_bootstrap()
            );
            // The tests run Kafka's own tools (console consumer, kafka-topics, ...) from this
            // checkout's jars, whoever runs the broker: a second checkout has none yet.
            return dist::ensure_libs(layout);
        }
        State::Foreign { info: None } => bail!(
            "port {KAFKA_PORT} on {KAFKA_HOST} is taken by something that is not a Kafka broker \
             (see `ss -ltnp 'sport = :{KAFKA_PORT}'`); stop it and rerun `cargo xtask up`"
        ),
        State::Stopped => {}
    }
    if procs::port_taken(addr(KAFKA_CONTROLLER_PORT)) {
        bail!(
            "port {KAFKA_CONTROLLER_PORT} (the Kafka controller listener) is taken by another \
             process (see `ss -ltnp 'sport = :{KAFKA_CONTROLLER_PORT}'`); stop it and rerun"
        );
    }
    let started = Instant::now();
    let java = dist::java()?;
    fs::create_dir_all(layout.kafka_dir())?;
    dist::ensure_libs(layout)?;
    fs::write(
        layout.kafka_properties(),
        config::server_properties(&layout.kafka_data()),
    )?;
    format_storage(layout, &java)?;

    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(layout.kafka_log())
        .with_context(|| format!("opening {}", layout.kafka_log().display()))?;
    // Failure messages quote this run's part of the log only.
    let log_start = log.metadata()?.len();
    let mut cmd = detached(&java);
    cmd.args(JVM_OPTS)
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            layout.kafka_log4j().display()
        ))
        .arg("-cp")
        .arg(classpath(layout))
        .arg("kafka.Kafka")
        .arg(layout.kafka_properties())
        .current_dir(layout.kafka_dir())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let mut child = cmd.spawn().context("starting the Kafka broker")?;
    let pid = child.id();
    fs::write(layout.kafka_pid(), format!("{pid}\n"))?;
    println!(
        "kafka: started pid {pid}; waiting until it answers at {} ...",
        layout::kafka_bootstrap()
    );
    let info = wait_ready(layout, pid, Some(&mut child), log_start)?;
    println!(
        "kafka: ready at {} in {:.1?} (cluster {}); log {}",
        layout::kafka_bootstrap(),
        started.elapsed(),
        info.cluster_id.as_deref().unwrap_or("?"),
        layout.show(&layout.kafka_log())
    );
    Ok(())
}

/// `setsid java ...`: a new session, so the broker survives the terminal or CI step that ran
/// xtask. setsid(1) execs in place when its caller is not a group leader (our child never is),
/// so the pid we record is the JVM's.
pub(crate) fn detached(java: &std::path::Path) -> Command {
    match procs::which("setsid") {
        Some(setsid) => {
            let mut cmd = Command::new(setsid);
            cmd.arg(java);
            cmd
        }
        None => {
            use std::os::unix::process::CommandExt;
            let mut cmd = Command::new(java);
            cmd.process_group(0);
            cmd
        }
    }
}

pub(crate) fn classpath(layout: &Layout) -> String {
    format!("{}/*", layout.kafka_libs().display())
}

/// `java` on the fetched jars' classpath with the tools' quiet logging: add the main class
/// (or a single-file source program) and its arguments.
pub fn tool_command(layout: &Layout, java: &Path) -> Command {
    let mut cmd = Command::new(java);
    cmd.arg(format!(
        "-Dlog4j2.configurationFile={}",
        layout
            .kafka_assets()
            .join("tools-log4j2.properties")
            .display()
    ))
    .arg("-cp")
    .arg(classpath(layout));
    cmd
}

/// Runs one of Kafka's own command-line tools (`class`) from the fetched jars, quietly logged,
/// and returns its standard output, trimmed.
pub fn run_tool(layout: &Layout, java: &Path, class: &str, args: &[&str]) -> Result<String> {
    let mut cmd = tool_command(layout, java);
    cmd.arg(class).args(args);
    let out = procs::run_captured(&mut cmd, class)?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Formats the data directory once (a formatted one has meta.properties).
fn format_storage(layout: &Layout, java: &Path) -> Result<()> {
    if layout.kafka_data().join("meta.properties").exists() {
        return Ok(());
    }
    let tool = |args: &[&str]| run_tool(layout, java, "kafka.tools.StorageTool", args);
    let cluster_id = tool(&["random-uuid"])?;
    let props = layout.kafka_properties().display().to_string();
    let out = tool(&["format", "--standalone", "-t", &cluster_id, "-c", &props])?;
    println!("kafka: formatted storage, cluster {cluster_id} ({out})");
    Ok(())
}

/// Waits until the broker answers; fails early when the process dies, and on timeout shows the
/// end of its log, since that is where the reason is.
fn wait_ready(
    layout: &Layout,
    pid: u32,
    mut child: Option<&mut std::process::Child>,
    log_start: u64,
) -> Result<ClusterInfo> {
    let started = Instant::now();
    let deadline = started + READY_TIMEOUT;
    let mut next_progress = started + READY_PROGRESS_EVERY;
    let mut last_err = anyhow::anyhow!("not probed yet");
    while Instant::now() < deadline {
        if Instant::now() >= next_progress {
            println!(
                "kafka: still starting after {}s (it loads every partition first; log {})",
                started.elapsed().as_secs(),
                layout.show(&layout.kafka_log())
            );
            next_progress += READY_PROGRESS_EVERY;
        }
        let exited = match child.as_deref_mut() {
            Some(c) => c.try_wait()?.map(|s| s.to_string()),
            None => (!procs::is_alive(pid)).then(|| "gone".to_string()),
        };
        if let Some(status) = exited {
            let _ = fs::remove_file(layout.kafka_pid());
            bail!(
                "the Kafka broker (pid {pid}) exited ({status}) before it was ready\n{}",
                procs::log_excerpt(&layout.kafka_log(), log_start)
            );
        }
        match probe() {
            Ok(info) => return Ok(info),
            Err(e) => last_err = e,
        }
        sleep(Duration::from_millis(500));
    }
    bail!(
        "the Kafka broker (pid {pid}) did not answer within {READY_TIMEOUT:?} (last probe: \
         {last_err:#}); it is left running for you to inspect, `cargo xtask down` stops it\n{}",
        procs::log_excerpt(&layout.kafka_log(), log_start)
    )
}

pub fn down(layout: &Layout) -> Result<()> {
    let Some(pid) = our_pid(layout) else {
        let _ = fs::remove_file(layout.kafka_pid());
        if procs::port_taken(addr(KAFKA_PORT)) {
            println!("kafka: not started by xtask; leaving what runs on {KAFKA_PORT} alone");
        } else {
            println!("kafka: not running");
        }
        return Ok(());
    };
    println!("kafka: stopping pid {pid} ...");
    if !procs::signal_and_wait(pid, "TERM", STOP_GRACE)? {
        println!("kafka: pid {pid} ignored TERM for {STOP_GRACE:?}; killing it");
        if !procs::signal_and_wait(pid, "KILL", Duration::from_secs(10))? {
            bail!("kafka: pid {pid} survived KILL");
        }
    }
    fs::remove_file(layout.kafka_pid()).ok();
    println!("kafka: stopped");
    Ok(())
}

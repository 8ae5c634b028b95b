//! The processors' instances as their own OS processes (`callstream process NAME`), exactly as
//! a deployment runs them on the cluster: started with an instance id of their own, stopped
//! with SIGTERM (the open transaction commits), or SIGKILLed (it is aborted, and the group
//! moves the partitions once the session times out). Each instance logs JSON to a file of its
//! own, from which the restores are read afterwards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use callstream_platform::Topics;

/// The processors the benchmark scales out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Proc {
    Contact,
    Scheduler,
    Detector,
}

pub const PROCESSORS: [Proc; 3] = [Proc::Contact, Proc::Scheduler, Proc::Detector];

impl Proc {
    /// The subcommand of `callstream process`, which is also its app id behind the prefix.
    pub fn command(self) -> &'static str {
        match self {
            Self::Contact => callstream_contact::APP_ID,
            Self::Scheduler => callstream_scheduler::APP_ID,
            Self::Detector => callstream_completion_detector::APP_ID,
        }
    }

    /// The name in metrics and messages.
    pub fn label(self) -> &'static str {
        match self {
            Self::Contact => "contact",
            Self::Scheduler => "scheduler",
            Self::Detector => "detector",
        }
    }

    /// Its consumer group (= app id) as `callstream process` names it.
    pub fn group(self, topics: &Topics) -> String {
        topics.name(self.command())
    }

    /// The topics its group consumes (the global tables are read without the group).
    pub fn inputs(self, topics: &Topics) -> Vec<String> {
        let app = self.group(topics);
        match self {
            Self::Contact => callstream_contact::spec(topics, &app).inputs,
            Self::Scheduler => callstream_scheduler::spec(topics, &app).inputs,
            Self::Detector => callstream_completion_detector::spec(topics, &app).inputs,
        }
    }
}

/// One running instance.
struct Instance {
    child: Child,
}

/// Every instance the benchmark started, by processor and instance id; the logs stay.
pub struct Fleet {
    bin: PathBuf,
    topics: Topics,
    logs: PathBuf,
    running: BTreeMap<(Proc, u32), Instance>,
}

impl Fleet {
    pub fn new(bin: PathBuf, topics: Topics, logs: PathBuf) -> Result<Self> {
        if !bin.exists() {
            bail!(
                "{} is not built (`cargo xtask bench scale` builds it; or set CALLSTREAM_BIN)",
                bin.display()
            );
        }
        std::fs::create_dir_all(&logs)
            .with_context(|| format!("creating the log directory {}", logs.display()))?;
        Ok(Self {
            bin,
            topics,
            logs,
            running: BTreeMap::new(),
        })
    }

    /// How many instances of `proc` run.
    pub fn count(&self, proc: Proc) -> usize {
        self.running.keys().filter(|(p, _)| *p == proc).count()
    }

    /// Starts instance `id` of `proc`; its environment is the benchmark's (the cluster's
    /// client settings) plus its topics, instance id and a metrics port of its own.
    pub fn start(&mut self, proc: Proc, id: u32) -> Result<()> {
        let log_path = self.log_path(proc, id);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?;
        let port = free_port()?;
        let mut command = Command::new(&self.bin);
        command
            .args(["process", proc.command()])
            .env("CALLSTREAM_TOPIC_PREFIX", &self.topics.prefix)
            .env(
                "CALLSTREAM_TOPIC_PARTITIONS",
                self.topics.partitions.to_string(),
            )
            .env(
                "CALLSTREAM_REPLICATION_FACTOR",
                self.topics.replication_factor.to_string(),
            )
            .env(
                "CALLSTREAM_MIN_INSYNC_REPLICAS",
                self.topics.min_insync_replicas.to_string(),
            )
            .env("CALLSTREAM_INSTANCE_ID", id.to_string())
            .env("CALLSTREAM_METRICS_ADDR", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "warn,callstream_runtime=info")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = command
            .spawn()
            .with_context(|| format!("starting {} process {}", self.bin.display(), proc.label()))?;
        tracing::info!(
            processor = proc.label(),
            instance = id,
            pid = child.id(),
            "started"
        );
        self.running.insert((proc, id), Instance { child });
        Ok(())
    }

    /// Stops instance `id` of `proc` with SIGTERM and waits for it (at most a minute).
    pub fn stop(&mut self, proc: Proc, id: u32) -> Result<()> {
        self.signal(proc, id, "-TERM", Duration::from_secs(60))
    }

    /// SIGKILLs instance `id` of `proc`: its open transaction is left for the broker to abort.
    pub fn kill(&mut self, proc: Proc, id: u32) -> Result<()> {
        self.signal(proc, id, "-KILL", Duration::from_secs(10))
    }

    fn signal(&mut self, proc: Proc, id: u32, signal: &str, wait: Duration) -> Result<()> {
        let mut instance = self
            .running
            .remove(&(proc, id))
            .with_context(|| format!("{} instance {id} does not run", proc.label()))?;
        let pid = instance.child.id().to_string();
        let sent = Command::new("kill").args([signal, &pid]).status()?;
        if !sent.success() {
            bail!("kill {signal} {pid} failed");
        }
        let started = Instant::now();
        loop {
            if let Some(status) = instance.child.try_wait()? {
                tracing::info!(processor = proc.label(), instance = id, %status, signal, "stopped");
                return Ok(());
            }
            if started.elapsed() > wait {
                let _ = instance.child.kill();
                let _ = instance.child.wait();
                bail!(
                    "{} instance {id} did not stop within {wait:?} of {signal}",
                    proc.label()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops every instance (SIGTERM), all at once, then waits for them.
    pub fn stop_all(&mut self) -> Result<()> {
        for instance in self.running.values() {
            let _ = Command::new("kill")
                .args(["-TERM", &instance.child.id().to_string()])
                .status();
        }
        let keys: Vec<(Proc, u32)> = self.running.keys().copied().collect();
        for (proc, id) in keys {
            if let Some(mut instance) = self.running.remove(&(proc, id)) {
                let started = Instant::now();
                while instance.child.try_wait()?.is_none() {
                    if started.elapsed() > Duration::from_secs(60) {
                        let _ = instance.child.kill();
                        bail!("{} instance {id} did not stop within 60 s", proc.label());
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        Ok(())
    }

    /// Fails when an instance stopped on its own (naming its log).
    pub fn check_alive(&mut self) -> Result<()> {
        for ((proc, id), instance) in &mut self.running {
            if let Some(status) = instance.child.try_wait()? {
                bail!(
                    "{} instance {id} stopped on its own ({status}); see {}",
                    proc.label(),
                    self.logs
                        .join(format!("{}-{id}.log", proc.label()))
                        .display()
                );
            }
        }
        Ok(())
    }

    fn log_path(&self, proc: Proc, id: u32) -> PathBuf {
        self.logs.join(format!("{}-{id}.log", proc.label()))
    }

    /// Every restore the instances logged, in the order of their logs.
    pub fn restores(&self) -> Result<Vec<Restore>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.logs)? {
            let path = entry?.path();
            let Some(proc) = PROCESSORS.into_iter().find(|p| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{}-", p.label())))
            }) else {
                continue;
            };
            out.extend(restores_in(&path, proc)?);
        }
        Ok(out)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for instance in self.running.values_mut() {
            let _ = instance.child.kill();
            let _ = instance.child.wait();
        }
    }
}

/// One restore an instance logged (`restore finished`): the partitions it took on, the
/// changelog records it read, and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Restore {
    pub proc: Proc,
    pub partitions: usize,
    pub records: u64,
    pub seconds: f64,
}

fn restores_in(path: &Path, proc: Proc) -> Result<Vec<Restore>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|line| restore_of(line, proc))
        .collect())
}

/// The restore a JSON log line reports, if it is one (`partitions` is the runtime's debug
/// list, `[0, 3, 7]`).
fn restore_of(line: &str, proc: Proc) -> Option<Restore> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if value["message"] != "restore finished" {
        return None;
    }
    let partitions = value["partitions"]
        .as_str()?
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .count();
    Some(Restore {
        proc,
        partitions,
        records: value["restored"].as_u64().unwrap_or(0),
        seconds: value["seconds"].as_f64()?,
    })
}

/// A loopback port nobody listens on now.
fn free_port() -> Result<u16> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(listener.local_addr()?.port())
}

/// The design's topics behind `prefix` as on the cluster: 3 replicas, 2 in sync (the
/// processors' changelogs follow them).
pub fn cluster_topics(prefix: &str, partitions: i32) -> Topics {
    Topics {
        prefix: prefix.to_owned(),
        partitions,
        replication_factor: 3,
        min_insync_replicas: 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restore_line_is_read_and_other_lines_are_not() {
        let line = r#"{"timestamp":"2026-12-06T03:00:00Z","level":"INFO","message":"restore finished","app":"x-contact","partitions":"[0, 3, 7]","restored":120,"seconds":0.25}"#;
        assert_eq!(
            restore_of(line, Proc::Contact),
            Some(Restore {
                proc: Proc::Contact,
                partitions: 3,
                records: 120,
                seconds: 0.25
            })
        );
        let empty = line.replace("[0, 3, 7]", "[]");
        assert_eq!(
            restore_of(&empty, Proc::Contact).map(|r| r.partitions),
            Some(0)
        );
        assert_eq!(
            restore_of(r#"{"message":"restoring"}"#, Proc::Contact),
            None
        );
        assert_eq!(restore_of("not json", Proc::Contact), None);
    }
}

//! The run's roles as child processes of this very binary: each with its
//! environment, its log file, a readiness probe, and a clean stop.
//!
//! Guarantees: every child started is stopped when `stop` runs, or killed
//! when the `Children` is dropped (`kill_on_drop`), so an orchestrator that
//! fails half-way leaves nothing behind. A stop is SIGTERM first (the roles
//! finish their open transaction and flush), then SIGKILL after the grace.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::process::{Child, Command};
use tokio::time::{sleep, timeout, Instant};

/// One role to start.
#[derive(Debug, Clone)]
pub struct Role {
    pub name: String,
    /// Arguments after the binary (`["process", "contact"]`).
    pub args: Vec<String>,
    /// Environment on top of the run's.
    pub env: Vec<(String, String)>,
    /// How to tell the role is ready.
    pub ready: Ready,
}

/// How the orchestrator tells a role is ready.
#[derive(Debug, Clone)]
pub enum Ready {
    /// A URL that answers 200 (the roles' `/readyz`).
    Http(String),
    /// A query on the run's database that returns `true` (the projections
    /// serve no HTTP: they are ready once their first batch committed).
    Sql {
        pool: sqlx::PgPool,
        query: &'static str,
    },
}

struct Running {
    role: Role,
    child: Child,
    log: PathBuf,
    exited: Option<ExitStatus>,
}

/// The children of one run.
pub struct Children {
    exe: PathBuf,
    log_dir: PathBuf,
    env: BTreeMap<String, String>,
    running: Vec<Running>,
    http: reqwest::Client,
}

/// How one child ended.
#[derive(Debug, Clone)]
pub struct Stopped {
    pub name: String,
    /// Whether it needed SIGKILL after the grace.
    pub killed: bool,
    pub status: Option<ExitStatus>,
}

impl Children {
    pub fn new(exe: PathBuf, log_dir: PathBuf, env: BTreeMap<String, String>) -> Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .context("building the HTTP client")?;
        Ok(Self {
            exe,
            log_dir,
            env,
            running: Vec::new(),
            http,
        })
    }

    /// Starts `role`, its output appended to `<log dir>/<name>.log`.
    pub fn spawn(&mut self, role: Role) -> Result<()> {
        let log = self.log_dir.join(format!("{}.log", role.name));
        let out = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("opening {}", log.display()))?;
        let err = out.try_clone().context("sharing the log file")?;
        let child = Command::new(&self.exe)
            .args(&role.args)
            .envs(&self.env)
            .envs(role.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} ({})", role.name, role.args.join(" ")))?;
        self.running.push(Running {
            role,
            child,
            log,
            exited: None,
        });
        Ok(())
    }

    /// Waits until every child answers its readiness URL; fails (with the
    /// end of its log) when one exits or stays unready past `limit`.
    pub async fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        let mut pending: Vec<usize> = (0..self.running.len()).collect();
        while !pending.is_empty() {
            let mut still = Vec::new();
            for i in pending {
                if let Some(status) = self.poll_exit(i) {
                    let r = &self.running[i];
                    bail!(
                        "{} exited while starting ({status}); the end of {}:\n{}",
                        r.role.name,
                        r.log.display(),
                        tail(&r.log, 15)
                    );
                }
                if !self.is_ready(&self.running[i].role.ready).await {
                    still.push(i);
                }
            }
            pending = still;
            if pending.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                let names: Vec<_> = pending
                    .iter()
                    .map(|&i| self.running[i].role.name.clone())
                    .collect();
                bail!(
                    "not ready after {limit:?}: {} (logs in {})",
                    names.join(", "),
                    self.log_dir.display()
                );
            }
            sleep(Duration::from_millis(250)).await;
        }
        Ok(())
    }

    async fn is_ready(&self, ready: &Ready) -> bool {
        match ready {
            Ready::Http(url) => self
                .http
                .get(url)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success()),
            Ready::Sql { pool, query } => sqlx::query_scalar::<_, bool>(query)
                .fetch_one(pool)
                .await
                .unwrap_or(false),
        }
    }

    fn poll_exit(&mut self, i: usize) -> Option<ExitStatus> {
        let r = &mut self.running[i];
        if r.exited.is_none() {
            r.exited = r.child.try_wait().ok().flatten();
        }
        r.exited
    }

    /// Children that have exited on their own since they started.
    pub fn exited(&mut self) -> Vec<(String, ExitStatus, String)> {
        (0..self.running.len())
            .filter_map(|i| {
                self.poll_exit(i).map(|status| {
                    let r = &self.running[i];
                    (r.role.name.clone(), status, tail(&r.log, 10))
                })
            })
            .collect()
    }

    /// SIGKILLs the running child `name` (a crash: no grace, no flush) and starts its role
    /// again at once. `false` when no child by that name is running.
    pub async fn kill_and_restart(&mut self, name: &str) -> Result<bool> {
        let Some(i) = self.running.iter().position(|r| r.role.name == name) else {
            return Ok(false);
        };
        let mut r = self.running.remove(i);
        if r.exited.is_none() {
            let _ = r.child.start_kill();
            let _ = r.child.wait().await;
        }
        self.spawn(r.role)?;
        Ok(true)
    }

    /// The readiness URL of the running child `name`, if it serves one.
    pub fn ready_url(&self, name: &str) -> Option<String> {
        self.running
            .iter()
            .find(|r| r.role.name == name)
            .and_then(|r| match &r.role.ready {
                Ready::Http(url) => Some(url.clone()),
                Ready::Sql { .. } => None,
            })
    }

    /// The role of the running child `name`, to start a second member of its kind.
    pub fn role(&self, name: &str) -> Option<Role> {
        self.running
            .iter()
            .find(|r| r.role.name == name)
            .map(|r| r.role.clone())
    }

    /// The names of the running roles, in start order.
    pub fn names(&self) -> Vec<String> {
        self.running.iter().map(|r| r.role.name.clone()).collect()
    }

    /// Stops the children whose names `select` accepts: SIGTERM to all of
    /// them at once, then SIGKILL to any still running after `grace`.
    pub async fn stop(&mut self, grace: Duration, select: impl Fn(&str) -> bool) -> Vec<Stopped> {
        let (chosen, kept): (Vec<Running>, Vec<Running>) = std::mem::take(&mut self.running)
            .into_iter()
            .partition(|r| select(&r.role.name));
        self.running = kept;
        for r in &chosen {
            if r.exited.is_none() {
                if let Some(pid) = r.child.id() {
                    terminate(pid);
                }
            }
        }
        let deadline = Instant::now() + grace;
        let mut stopped = Vec::new();
        for mut r in chosen {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut killed = false;
            let status = match r.exited {
                Some(status) => Some(status),
                None => match timeout(left, r.child.wait()).await {
                    Ok(status) => status.ok(),
                    Err(_) => {
                        killed = true;
                        let _ = r.child.start_kill();
                        r.child.wait().await.ok()
                    }
                },
            };
            stopped.push(Stopped {
                name: r.role.name,
                killed,
                status,
            });
        }
        stopped
    }
}

/// SIGTERM through `kill(1)`: this crate forbids `unsafe`, and the roles
/// handle SIGTERM as their graceful stop.
fn terminate(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The last `lines` lines of a log, for error messages.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

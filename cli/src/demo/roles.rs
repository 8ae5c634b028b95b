//! Which roles a run starts, with what, and which topics it watches.
//!
//! The roles of the design that this binary cannot run yet (their
//! subcommand is missing) are probed for, left out, and named in the
//! summary, so the demo grows with the binary without a change here.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Result;
use callstream_platform::topics;

use super::children::{Children, Role};
use super::setup::{free_port, Run};

/// The processors, in start order (`callstream process <name>`).
const PROCESSORS: &[&str] = &[
    "contact",
    "scheduler",
    "launch-dispatcher",
    "completion-detector",
    "crm-dispatcher",
    "recovery",
];

/// Which of the optional roles this binary has.
#[derive(Debug, Clone, Default)]
pub struct Available {
    pub recovery: bool,
    names: Vec<String>,
}

fn has_subcommand(exe: &Path, args: &[&str]) -> bool {
    Command::new(exe)
        .args(args)
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Available {
    pub fn probe(exe: &Path) -> Self {
        let mut names = vec!["sim-voice".to_string(), "sim-crm".into(), "gateway".into()];
        let mut recovery = false;
        for p in PROCESSORS {
            if has_subcommand(exe, &["process", p]) {
                names.push((*p).to_string());
                recovery |= *p == "recovery";
            }
        }
        Self { recovery, names }
    }

    /// The roles a run starts.
    pub fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// Roles of the design this binary cannot run yet.
    pub fn missing(&self) -> Vec<String> {
        let mut missing: Vec<String> = PROCESSORS
            .iter()
            .filter(|p| !self.names.iter().any(|n| n == *p))
            .map(|p| format!("process {p}"))
            .collect();
        missing.extend(["projections".to_string(), "operator-api".into()]);
        missing
    }

    fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}

/// Whether `name` is one of the stream processors (stopped before the
/// simulators and the gateway, so their last calls still get answers).
pub fn is_processor(name: &str) -> bool {
    PROCESSORS.contains(&name)
}

/// Every role to start, simulators first.
pub fn all(run: &Run, available: &Available) -> Result<Vec<Role>> {
    let mut roles = vec![
        Role {
            name: "sim-voice".into(),
            args: vec!["sim".into(), "voice".into()],
            env: Vec::new(),
            ready_url: format!("{}/healthz", run.voice_url),
        },
        Role {
            name: "sim-crm".into(),
            args: vec!["sim".into(), "crm".into()],
            env: Vec::new(),
            ready_url: format!("{}/healthz", run.crm_url),
        },
        Role {
            name: "gateway".into(),
            args: vec!["gateway".into()],
            env: Vec::new(),
            ready_url: format!("{}/readyz", run.gateway_url),
        },
    ];
    for name in PROCESSORS.iter().filter(|p| available.has(p)) {
        let port = free_port()?;
        roles.push(Role {
            name: (*name).to_string(),
            args: vec!["process".into(), (*name).to_string()],
            env: vec![
                (
                    "CALLSTREAM_METRICS_ADDR".into(),
                    format!("127.0.0.1:{port}"),
                ),
                ("CALLSTREAM_INSTANCE_ID".into(), "0".into()),
            ],
            ready_url: format!("http://127.0.0.1:{port}/readyz"),
        });
    }
    Ok(roles)
}

/// The topics the summary is read from (every design topic but `control`).
pub fn observed_topics(run: &Run) -> Vec<String> {
    topics::ALL
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| *name != topics::CONTROL && *name != topics::DELIVERY_PARTIALS)
        .map(|name| run.topic(name))
        .collect()
}

/// What `--keep-running` leaves up, and how to look at it.
pub fn print_running(run: &Run, children: &Children) {
    println!(
        "\ndemo: still running (Ctrl-C stops everything): {}",
        children.names().join(", ")
    );
    println!("  gateway            {}/metrics", run.gateway_url);
    println!("  voice platform     curl -s {}/_sim/stats", run.voice_url);
    println!("  CRM                curl -s {}/_sim/stats", run.crm_url);
    println!(
        "  control            CALLSTREAM_TOPIC_PREFIX={} callstream control show",
        run.prefix
    );
    println!("  logs               {}", run.log_dir.display());
}

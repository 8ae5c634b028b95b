//! Which roles a run starts, with what, and which topics it watches.
//!
//! The roles of the design that this binary cannot run yet (their
//! subcommand is missing) are probed for, left out, and named in the
//! summary, so the demo grows with the binary without a change here.
//!
//! The projections and the operator API use the run's own database
//! (`DATABASE_URL` of the run's environment); the API listens on a free
//! loopback port and is ready on `/readyz`, the projections (no HTTP) once
//! their first batch has committed.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Result;
use callstream_platform::topics;

use super::children::{Children, Ready, Role};
use super::setup::{free_port, Run};

/// The processors, in start order (`callstream process <name>`).
const PROCESSORS: &[&str] = &[
    "contact",
    "scheduler",
    "launch-dispatcher",
    "completion-detector",
    "crm-dispatcher",
    "recovery",
    "notifier",
];

/// The Postgres side: the views, and the API that serves them.
pub const PROJECTIONS: &str = "projections";
pub const OPERATOR_API: &str = "operator-api";

/// Which of the optional roles this binary has.
#[derive(Debug, Clone, Default)]
pub struct Available {
    pub recovery: bool,
    pub projections: bool,
    pub operator_api: bool,
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
        let projections = has_subcommand(exe, &[PROJECTIONS]);
        // The API reads the views: without the projections it has nothing to serve.
        let operator_api = projections && has_subcommand(exe, &[OPERATOR_API]);
        names.extend(
            [(projections, PROJECTIONS), (operator_api, OPERATOR_API)]
                .iter()
                .filter(|(has, _)| *has)
                .map(|(_, name)| (*name).to_string()),
        );
        Self {
            recovery,
            projections,
            operator_api,
            names,
        }
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
        for (has, name) in [
            (self.projections, PROJECTIONS),
            (self.operator_api, OPERATOR_API),
        ] {
            if !has {
                missing.push(name.to_string());
            }
        }
        missing
    }

    fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}

/// Whether `name` is one of the stream processors (stopped before the
/// simulators and the gateway, so their last calls still get answers).
pub fn is_processor(name: &str) -> bool {
    PROCESSORS.contains(&super::chaos::kind_of(name))
}

/// Ready once the projections committed a batch: the run's `control`
/// topic always holds the settings applied before any role starts.
const PROJECTIONS_READY: &str = "SELECT EXISTS (SELECT 1 FROM projection_offsets)";

/// Every role to start, simulators first; `views` is a pool on the run's
/// database (none: no projections, so no API either).
pub fn all(run: &Run, available: &Available, views: Option<&sqlx::PgPool>) -> Result<Vec<Role>> {
    let mut roles = vec![
        Role {
            name: "sim-voice".into(),
            args: vec!["sim".into(), "voice".into()],
            env: Vec::new(),
            ready: Ready::Http(format!("{}/healthz", run.voice_url)),
        },
        Role {
            name: "sim-crm".into(),
            args: vec!["sim".into(), "crm".into()],
            env: Vec::new(),
            ready: Ready::Http(format!("{}/healthz", run.crm_url)),
        },
        Role {
            name: "gateway".into(),
            args: vec!["gateway".into()],
            env: Vec::new(),
            ready: Ready::Http(format!("{}/readyz", run.gateway_url)),
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
            ready: Ready::Http(format!("http://127.0.0.1:{port}/readyz")),
        });
    }
    let Some(views) = views.filter(|_| available.projections) else {
        return Ok(roles);
    };
    {
        roles.push(Role {
            name: PROJECTIONS.into(),
            args: vec![PROJECTIONS.into()],
            env: Vec::new(),
            ready: Ready::Sql {
                pool: views.clone(),
                query: PROJECTIONS_READY,
            },
        });
    }
    if available.operator_api {
        roles.push(Role {
            name: OPERATOR_API.into(),
            args: vec![OPERATOR_API.into()],
            env: Vec::new(),
            ready: Ready::Http(format!("{}/readyz", run.api_url)),
        });
    }
    Ok(roles)
}

/// The topics the summary is read from (every design topic but `control`).
pub fn observed_topics(run: &Run) -> Vec<String> {
    topics::ALL
        .iter()
        .map(|(name, _)| *name)
        // The internal repartition topics with JSON values are the processors' own.
        .filter(|name| {
            ![
                topics::CONTROL,
                topics::DELIVERY_PARTIALS,
                topics::NOTIFIER_SIGNALS,
            ]
            .contains(name)
        })
        .map(|name| run.topic(name))
        .collect()
}

/// What `--keep-running` leaves up, and how to look at it.
pub fn print_running(run: &Run, children: &Children) {
    println!(
        "\ndemo: still running (Ctrl-C stops everything): {}",
        children.names().join(", ")
    );
    for (role, url) in &run.admin_urls {
        if children.names().iter().any(|n| n == role) {
            println!("  {role:<18} {url}/metrics");
        }
    }
    println!("  voice platform     curl -s {}/_sim/stats", run.voice_url);
    println!("  CRM                curl -s {}/_sim/stats", run.crm_url);
    println!(
        "  control            CALLSTREAM_TOPIC_PREFIX={} callstream control show",
        run.prefix
    );
    if children.names().iter().any(|n| n == OPERATOR_API) {
        println!(
            "  operator API       {} (the viewer token and calls above; /openapi.json)",
            run.api_url
        );
    }
    println!(
        "  views (Postgres)   psql {}",
        super::database::redact(&run.database_url)
    );
    println!("  logs               {}", run.log_dir.display());
}

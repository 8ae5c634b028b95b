//! The commands that build and run the workspace against the stack: `test`, `demo`, `bench`,
//! and creating the topics with the `callstream` binary.
//!
//! Every one brings the stack up first (a no-op when it runs) and hands the stack's addresses
//! to what it runs through the environment, so tests and tools never hard-code them.

use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::layout::{self, Layout};
use crate::stack;

pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The stack's addresses, as every test, tool and benchmark reads them.
pub fn stack_env(layout: &Layout) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("KAFKA_BOOTSTRAP_SERVERS", layout::kafka_bootstrap()),
        ("DATABASE_URL", layout::database_url()),
        ("CALLSTREAM_STACK_REGISTRY_URL", crate::registry::url()),
        (
            "CALLSTREAM_KAFKA_LIBS",
            layout.kafka_libs().display().to_string(),
        ),
        // The python of aiosmtpd's venv (see `venv`): the notifier's tests start an SMTP
        // server with it.
        (
            "CALLSTREAM_SMTP_SINK_PYTHON",
            crate::venv::AIOSMTPD.python(layout).display().to_string(),
        ),
        // The python of confluent-kafka's venv: the downstream-readers test reads the topics
        // with its Avro deserializer.
        (
            "CALLSTREAM_CONFLUENT_PYTHON",
            crate::venv::CONFLUENT_KAFKA
                .python(layout)
                .display()
                .to_string(),
        ),
    ];
    // The dev Postgres's data directory and pg_ctl: the test that restarts it, and the
    // projections bench that reads its CPU, find it there (outside the checkout when the
    // checkout is private, see `Layout::server_state`).
    env.push((
        "CALLSTREAM_PG_DATA",
        layout.postgres_data().display().to_string(),
    ));
    if let Some(bin) = crate::postgres::find_bin() {
        env.push((
            "CALLSTREAM_PG_CTL",
            bin.tool("pg_ctl").display().to_string(),
        ));
    }
    // The Java tools' jars: Apicurio's deserializer, the Connect worker and its converter.
    for jars in crate::java_tools::ALL {
        env.push((jars.env, jars.libs(layout).display().to_string()));
    }
    env
}

/// How creating the topics went, when it did not fail outright.
#[derive(Debug, PartialEq, Eq)]
pub enum Topics {
    Created,
    /// The `callstream` binary has no `topics create` subcommand (yet).
    Unsupported,
    /// `callstream` does not build; cargo has already printed why.
    BuildFailed,
}

/// What a first build costs, said before it starts: on a fresh machine the build is most of
/// the wait, and a silent one looks stuck.
pub const FIRST_BUILD: &str = "the first build on a fresh machine takes 8 minutes or more on 2 \
     cores (cargo shows its progress); later ones take seconds";

/// `cargo build -p callstream`, cargo's progress shown; its exit status (cargo has printed
/// why it failed).
fn build_callstream(layout: &Layout) -> Result<std::process::ExitStatus> {
    println!("build: `cargo build -p callstream`; {FIRST_BUILD}");
    cargo()
        .args(["build", "-p", "callstream"])
        .current_dir(&layout.repo)
        .status()
        .context("running cargo build -p callstream")
}

/// Builds `callstream` and runs `callstream topics create` against the stack. Fails only when
/// the command itself fails; a binary without the subcommand or a broken build is reported.
pub fn create_topics(layout: &Layout) -> Result<Topics> {
    let status = build_callstream(layout)?;
    if !status.success() {
        println!(
            "topics: warning: `cargo build -p callstream` failed ({status}); no topics created"
        );
        return Ok(Topics::BuildFailed);
    }
    run_topics_create(layout)
}

/// Builds `callstream` and creates the design's topics on the three-broker cluster, as its
/// admin, with the cluster defaults (3 replicas, 2 in sync).
fn create_cluster_topics(layout: &Layout) -> Result<()> {
    let status = build_callstream(layout)?;
    if !status.success() {
        bail!("`cargo build -p callstream` failed ({status}); no topics created on the cluster");
    }
    println!("cluster: creating the topics (3 replicas, 2 in sync) as admin ...");
    let bin = layout.callstream_bin();
    let status = Command::new(&bin)
        .args(["topics", "create", "--bootstrap-servers"])
        .arg(crate::cluster::config::bootstrap())
        .envs(crate::cluster::client_env(layout, "admin"))
        .current_dir(&layout.repo)
        .status()
        .with_context(|| format!("running {}", bin.display()))?;
    if !status.success() {
        bail!("`callstream topics create` on the cluster failed ({status})");
    }
    Ok(())
}

/// `up --cluster`: the three brokers, the design's topics on them (which builds `callstream`),
/// then the cluster's Postgres with its roles (which runs it).
pub fn up_cluster(layout: &Layout) -> Result<()> {
    crate::cluster::up(layout)?;
    create_cluster_topics(layout)?;
    crate::cluster::postgres::up(layout, &layout.callstream_bin())
}

/// Runs `callstream topics create` against the stack with the binary already built.
pub fn run_topics_create(layout: &Layout) -> Result<Topics> {
    let bin = layout.callstream_bin();
    let supported = Command::new(&bin)
        .args(["topics", "create", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !supported {
        println!(
            "topics: warning: {} has no `topics create` subcommand yet; no topics created",
            layout.show(&bin)
        );
        return Ok(Topics::Unsupported);
    }
    let status = Command::new(&bin)
        // One broker: one replica, and nothing to lose a broker to.
        .args([
            "topics",
            "create",
            "--replication-factor",
            "1",
            "--min-insync-replicas",
            "1",
            "--allow-single-replica",
            "--bootstrap-servers",
        ])
        .arg(layout::kafka_bootstrap())
        .envs(stack_env(layout))
        .current_dir(&layout.repo)
        .status()
        .with_context(|| format!("running {}", bin.display()))?;
    if !status.success() {
        bail!("`callstream topics create` failed ({status})");
    }
    Ok(Topics::Created)
}

/// The main job: the stack up, `callstream` built, then `callstream demo ARGS...`, which runs
/// the whole pipeline on a simulated workload and ends with a summary. Fails when the demo
/// does (a role that would not start, an error); a run that did not settle still prints its
/// summary and fails its `settled` invariant.
pub fn demo(layout: &Layout, args: &[String]) -> Result<()> {
    // The stack starts (and on a fresh machine is fetched) while `callstream` builds: one
    // waits mostly on the network, the other on the CPU.
    let stack_up = {
        let layout = layout.clone();
        std::thread::spawn(move || stack::up(&layout))
    };
    // Debug, as the tests build it: one build serves both README commands.
    let status = build_callstream(layout)?;
    stack_up
        .join()
        .map_err(|_| anyhow::anyhow!("starting the stack panicked"))??;
    if !status.success() {
        bail!("`callstream` does not build ({status}), so the demo cannot run");
    }
    run_topics_create(layout)?;
    // The main job is a soak's short form: a morning on the scaled clock with production
    // settings; the user's arguments win over the preset's.
    crate::soak::run_built(
        layout,
        &crate::soak::SoakArgs {
            plan: crate::soak::demo(),
            broken: None,
            demo_args: args.to_vec(),
        },
    )
}

/// The benchmark that runs on the three-broker cluster rather than the dev stack.
const SCALE: &str = "scale";

/// The benchmarks there are: the binaries of the `callstream-bench` package.
fn benchmarks(layout: &Layout) -> Result<Vec<String>> {
    let out = cargo()
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(&layout.repo)
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!("`cargo metadata` failed ({})", out.status);
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("reading cargo metadata's output")?;
    let mut names: Vec<String> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["name"] == "callstream-bench")
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        })
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    Ok(names)
}

/// `cargo run --release -p callstream-bench --bin NAME -- ARGS...` against the stack.
pub fn bench(layout: &Layout, name: &str, args: &[String]) -> Result<()> {
    let known = benchmarks(layout)?;
    if !known.iter().any(|k| k == name) {
        bail!(
            "there is no benchmark `{name}`; there are: {}",
            known.join(", ")
        );
    }
    let mut command = cargo();
    println!("build: the benchmark in release; {FIRST_BUILD}");
    command.args(["run", "--release", "-p", "callstream-bench", "--bin"]);
    if name == SCALE {
        // Instances of the processors as their own processes, on the three-broker cluster
        // as its admin: the release `callstream` beside the benchmark, and the cluster up.
        let status = cargo()
            .args(["build", "--release", "-p", "callstream"])
            .current_dir(&layout.repo)
            .status()
            .context("running cargo build --release -p callstream")?;
        if !status.success() {
            bail!("`cargo build --release -p callstream` failed ({status})");
        }
        up_cluster(layout)?;
        command
            .envs(crate::cluster::client_env(layout, "admin"))
            .env(
                "CALLSTREAM_BIN",
                layout.target_dir().join("release").join("callstream"),
            );
    } else {
        stack::up(layout)?;
        command.envs(stack_env(layout));
    }
    let status = command
        .arg(name)
        .arg("--")
        .args(args)
        .current_dir(&layout.repo)
        .status()
        .context("running cargo run -p callstream-bench")?;
    if !status.success() {
        bail!("benchmark `{name}` failed ({status})");
    }
    Ok(())
}

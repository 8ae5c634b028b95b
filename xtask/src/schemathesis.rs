//! `cargo xtask schemathesis`: the operator API's OpenAPI document checked by schemathesis
//! (PyPI), property-based, against the dev stack.
//!
//! Installs a pinned schemathesis into a venv under `.stack/schemathesis/` (once; pip from
//! PyPI), brings the stack up, and runs the ignored end-to-end test
//! `tests/tests/operator_api_schemathesis.rs` (crate `callstream-e2e`), which seeds a world
//! through the real processors and projections, serves the API with an admin token on a
//! loopback port, and runs `schemathesis run --checks all` against `/openapi.json`.
//! Arguments go to `schemathesis run` as well.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::cargo_cmds::{cargo, stack_env};
use crate::layout::Layout;
use crate::stack;

/// The version the README's result was recorded with; bump both together.
const VERSION: &str = "4.32.5";

fn venv(layout: &Layout) -> PathBuf {
    layout.stack.join("schemathesis").join("venv")
}

/// The schemathesis CLI of the venv, installed (or upgraded to [`VERSION`]) when missing.
fn install(layout: &Layout) -> Result<PathBuf> {
    let venv = venv(layout);
    let bin = venv.join("bin").join("schemathesis");
    let installed = Command::new(&bin)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(VERSION));
    if installed {
        return Ok(bin);
    }
    println!(
        "schemathesis: installing {VERSION} into {}",
        layout.show(&venv)
    );
    if !venv.join("bin").join("pip").exists() {
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("running python3 -m venv (is Python 3 installed?)")?;
        if !status.success() {
            bail!("python3 -m venv failed ({status})");
        }
    }
    let status = Command::new(venv.join("bin").join("pip"))
        .args(["install", "--quiet", &format!("schemathesis=={VERSION}")])
        .status()
        .context("running pip")?;
    if !status.success() {
        bail!("pip install schemathesis=={VERSION} failed ({status})");
    }
    Ok(bin)
}

/// Installs schemathesis, brings the stack up and runs the check; fails when schemathesis
/// finds anything.
pub fn run(layout: &Layout, args: &[String]) -> Result<()> {
    let bin = install(layout)?;
    stack::up(layout)?;
    let status = cargo()
        .args([
            "test",
            "-p",
            "callstream-e2e",
            "--test",
            "operator_api_schemathesis",
        ])
        .args(["--", "--ignored", "--nocapture"])
        .envs(stack_env(layout))
        .env("SCHEMATHESIS", &bin)
        .env("SCHEMATHESIS_ARGS", args.join(" "))
        .current_dir(&layout.repo)
        .status()
        .context("running cargo test")?;
    if !status.success() {
        bail!("the schemathesis check failed ({status})");
    }
    println!("schemathesis: no failures");
    Ok(())
}

//! `cargo xtask schemathesis`: the operator API's OpenAPI document checked by schemathesis
//! (PyPI), property-based, against the dev stack.
//!
//! Installs a pinned schemathesis into a venv under `.stack/schemathesis/` (once; pip from
//! PyPI, see `venv`), brings the stack up, and runs the ignored end-to-end test
//! `tests/tests/operator_api_schemathesis.rs` (crate `callstream-e2e`), which seeds a world
//! through the real processors and projections, serves the API with an admin token on a
//! loopback port, and runs `schemathesis run --checks all` against `/openapi.json`.
//! Arguments go to `schemathesis run` as well.

use anyhow::{bail, Context, Result};

use crate::cargo_cmds::{cargo, stack_env};
use crate::layout::Layout;
use crate::stack;
use crate::venv::Tool;

/// The version the README's result was recorded with; bump both together.
const SCHEMATHESIS: Tool = Tool {
    name: "schemathesis",
    package: "schemathesis",
    version: "4.32.5",
    extras: "",
    also: &[],
};

/// Installs schemathesis, brings the stack up and runs the check; fails when schemathesis
/// finds anything.
pub fn run(layout: &Layout, args: &[String]) -> Result<()> {
    SCHEMATHESIS.ensure(layout)?;
    let bin = SCHEMATHESIS.bin(layout, "schemathesis");
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

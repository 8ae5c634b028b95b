//! Debian's packages the stack and the tests need (PostgreSQL, Chromium, promtool), installed with
//! apt-get as root, or through sudo, when they are missing.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::procs;

pub fn running_as_root() -> bool {
    fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// Installs `packages` (`apt-get update`, then `apt-get install --no-install-recommends`).
pub fn install(packages: &[&str]) -> Result<()> {
    let list = packages.join(" ");
    println!("debian: installing {list} from Debian's packages ...");
    let sudo = if running_as_root() {
        None
    } else {
        Some(procs::which("sudo").with_context(|| {
            format!(
                "{list} is not installed and xtask is not root (and has no sudo); run \
                 `apt-get update && apt-get install -y {list}` as root, then rerun"
            )
        })?)
    };
    let apt = |args: &[&str]| -> Result<()> {
        let mut cmd = match &sudo {
            Some(sudo) => {
                let mut c = Command::new(sudo);
                c.arg("apt-get");
                c
            }
            None => Command::new("apt-get"),
        };
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        let status = cmd.status().context("could not run apt-get")?;
        if !status.success() {
            bail!(
                "`apt-get {}` failed ({status}); are Debian's package mirrors reachable?",
                args.join(" ")
            );
        }
        Ok(())
    };
    apt(&["update"])?;
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend_from_slice(packages);
    apt(&install)
}

/// Debian's Chromium, which the console's browser tests drive (a test tool's own browser
/// download fails on machines without the open internet).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Installs Chromium when it is missing.
pub fn ensure_chromium() -> Result<()> {
    if Path::new(CHROMIUM).is_file() {
        return Ok(());
    }
    install(&["chromium"])
}

/// Debian's promtool (package `prometheus`), which checks the scrape config and the alert
/// rules in `deploy/prometheus/` and runs their unit tests.
pub const PROMTOOL: &str = "/usr/bin/promtool";

/// Installs promtool when it is missing.
pub fn ensure_promtool() -> Result<()> {
    if Path::new(PROMTOOL).is_file() {
        return Ok(());
    }
    install(&["prometheus"])
}

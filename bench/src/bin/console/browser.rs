//! The browser-side timing: `tests/browser/bench.mjs` in Node, driving
//! Debian's Chromium (headless, through playwright-core; no browser is ever
//! downloaded), which logs in once and loads each page `loads` times, timing
//! each from just before the navigation until the page's content region is
//! filled. It prints `{"today": [ms...], "schedule": [...], "exceptions": [...]}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tracing::info;

/// How long the whole browser run may take.
const BROWSER_RUN: Duration = Duration::from_secs(900);

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/browser")
}

/// The Chromium the script launches (`$CHROMIUM`, else Debian's).
fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// Fails plainly when node or Chromium is missing; installs playwright-core
/// (`npm ci`, which downloads no browser) when it is not there yet.
async fn prepare(dir: &Path) -> Result<()> {
    let browser = chromium();
    if !browser.exists() {
        bail!(
            "no Chromium at {} (install Debian's `chromium`, or set CHROMIUM to one); \
             the browser figures are missing",
            browser.display()
        );
    }
    let node = tokio::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .await;
    if !matches!(node, Ok(s) if s.success()) {
        bail!(
            "no working `node` on the PATH (install Node.js ≥ 18); the browser figures are missing"
        );
    }
    if !dir
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        info!(dir = %dir.display(), "installing playwright-core: npm ci --no-audit --no-fund");
        let status = tokio::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(dir)
            .stdout(Stdio::null())
            .status()
            .await
            .context("running npm (is Node.js installed?)")?;
        if !status.success() {
            bail!("npm ci in {} failed: {status}", dir.display());
        }
    }
    Ok(())
}

/// Runs the script against `base_url`; the load times in ms of each page.
pub async fn measure(
    base_url: &str,
    token: &str,
    loads: usize,
) -> Result<BTreeMap<String, Vec<f64>>> {
    let dir = browser_dir();
    prepare(&dir).await?;
    let run = tokio::process::Command::new("node")
        .arg("bench.mjs")
        .arg(base_url)
        .arg(token)
        .arg(loads.to_string())
        .current_dir(&dir)
        .env("CHROMIUM", chromium())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // The script's progress goes straight to ours.
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        // Not `output()`, which would capture stderr too.
        .spawn()
        .context("starting node bench.mjs")?
        .wait_with_output();
    let out = tokio::time::timeout(BROWSER_RUN, run)
        .await
        .with_context(|| format!("the browser run took longer than {BROWSER_RUN:?}"))?
        .context("running node bench.mjs")?;
    if !out.status.success() {
        bail!(
            "node bench.mjs failed ({}); see its output above",
            out.status
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .with_context(|| format!("node bench.mjs printed no JSON: {stdout:?}"))?;
    let times: BTreeMap<String, Vec<f64>> =
        serde_json::from_str(line).with_context(|| format!("node bench.mjs printed {line:?}"))?;
    Ok(times)
}

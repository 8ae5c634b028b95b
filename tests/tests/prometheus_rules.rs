//! The Prometheus files in `deploy/prometheus/` through promtool (Debian's `prometheus`
//! package, which `cargo xtask test` installs): the scrape config and the alert rules
//! check, and the rules' unit tests (`alerts_test.yml`) pass.
//!
//! Without promtool the test says so and passes, unless `CALLSTREAM_REQUIRE_PROMTOOL` is
//! set (as `cargo xtask test` sets it), so CI never skips it by accident.

use std::path::{Path, PathBuf};
use std::process::Command;

fn promtool() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("promtool"))
        .find(|candidate| candidate.is_file())
}

fn deploy_prometheus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/prometheus")
}

#[test]
fn the_scrape_config_and_the_alert_rules_pass_promtool() {
    let Some(promtool) = promtool() else {
        assert!(
            std::env::var_os("CALLSTREAM_REQUIRE_PROMTOOL").is_none(),
            "promtool is not on PATH but CALLSTREAM_REQUIRE_PROMTOOL is set; \
             install Debian's prometheus package (cargo xtask test does)"
        );
        eprintln!(
            "SKIPPED: promtool is not on PATH (apt-get install prometheus, or run \
             `cargo xtask test`, which installs it); the alert rules were not tested"
        );
        return;
    };
    let dir = deploy_prometheus();
    for args in [
        ["check", "config", "prometheus.yml"],
        ["check", "rules", "alerts.yml"],
        ["test", "rules", "alerts_test.yml"],
    ] {
        let output = Command::new(&promtool)
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap_or_else(|e| panic!("running promtool {}: {e}", args.join(" ")));
        assert!(
            output.status.success(),
            "promtool {} failed ({}):\n{}{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

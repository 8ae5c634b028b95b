//! The layering rule, checked from `cargo metadata` at the start of `cargo xtask test`: a
//! service never depends on another service.
//!
//! Services are the crates under `processors/`, `edges/` and `sims/`, except the processors'
//! kit (`processors/kit`), which holds what they share. What two services must agree on lives
//! in a shared crate (domain, schemas, platform, runtime, the kit), so a service can change,
//! deploy and scale without dragging another along. Dev-dependencies are allowed: a test may
//! start a simulator or a neighbouring service to check a contract.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The folders whose crates are services, relative to the workspace root.
pub const SERVICE_FOLDERS: [&str; 3] = ["processors", "edges", "sims"];

/// Service crates that are shared contracts rather than services.
pub const SHARED_SERVICE_CRATES: [&str; 1] = ["callstream-kit"];

/// One dependency that breaks the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub from: String,
    pub to: String,
    /// `normal` or `build`.
    pub kind: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} depends on {} ({} dependency)",
            self.from, self.to, self.kind
        )
    }
}

/// Runs `cargo metadata` for the workspace at `repo` and fails, naming every offending
/// dependency, when a service depends on another service outside dev-dependencies.
pub fn check(repo: &Path) -> Result<()> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(repo)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).context("reading cargo metadata's JSON")?;
    let violations = violations(&metadata, repo)?;
    if violations.is_empty() {
        println!("layering: no service depends on another service");
        return Ok(());
    }
    for violation in &violations {
        println!("layering: {violation}");
    }
    bail!(
        "{} service-to-service dependencies; move what they share to a shared crate \
         (domain, schemas, platform, runtime, callstream-kit)",
        violations.len()
    )
}

/// The service-to-service dependencies (outside dev-dependencies) in `metadata`, the
/// output of `cargo metadata --format-version 1` for the workspace at `root`.
pub fn violations(metadata: &Value, root: &Path) -> Result<Vec<Violation>> {
    let packages = metadata["packages"]
        .as_array()
        .context("cargo metadata has no packages")?;
    // Every workspace package's name, and whether it is a service.
    let mut is_service = BTreeMap::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default().to_string();
        let manifest = Path::new(package["manifest_path"].as_str().unwrap_or_default());
        is_service.insert(name, is_service_manifest(manifest, root));
    }
    let mut found = Vec::new();
    for package in packages {
        let from = package["name"].as_str().unwrap_or_default();
        if is_service.get(from) != Some(&true) {
            continue;
        }
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let to = dependency["name"].as_str().unwrap_or_default();
            // `kind` is null for normal dependencies, "dev" or "build" otherwise.
            let kind = dependency["kind"].as_str().unwrap_or("normal");
            if kind != "dev" && to != from && is_service.get(to) == Some(&true) {
                found.push(Violation {
                    from: from.to_string(),
                    to: to.to_string(),
                    kind: kind.to_string(),
                });
            }
        }
    }
    Ok(found)
}

fn is_service_manifest(manifest: &Path, root: &Path) -> bool {
    let Ok(relative) = manifest.strip_prefix(root) else {
        return false;
    };
    let mut parts = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy());
    let (Some(folder), Some(crate_dir), Some(file)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    SERVICE_FOLDERS.contains(&folder.as_ref())
        && file == "Cargo.toml"
        && parts.next().is_none()
        && !SHARED_SERVICE_CRATES
            .iter()
            .any(|shared| shared.strip_prefix("callstream-") == Some(crate_dir.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn package(name: &str, dir: &str, deps: &[(&str, Option<&str>)]) -> Value {
        json!({
            "name": name,
            "manifest_path": format!("/w/{dir}/Cargo.toml"),
            "dependencies": deps.iter().map(|(n, k)| json!({"name": n, "kind": k})).collect::<Vec<_>>(),
        })
    }

    #[test]
    fn a_service_may_use_shared_crates_and_dev_depend_on_services() {
        let metadata = json!({"packages": [
            package("callstream-contact", "processors/contact", &[
                ("callstream-kit", None),
                ("callstream-domain", None),
                ("callstream-scheduler", Some("dev")),
            ]),
            package("callstream-kit", "processors/kit", &[("callstream-runtime", None)]),
            package("callstream-scheduler", "processors/scheduler", &[]),
            package("callstream-domain", "domain", &[]),
            package("callstream-runtime", "runtime", &[]),
        ]});
        assert_eq!(violations(&metadata, Path::new("/w")).unwrap(), vec![]);
    }

    #[test]
    fn a_service_depending_on_another_service_is_named() {
        let metadata = json!({"packages": [
            package("callstream-recovery", "processors/recovery", &[
                ("callstream-gateway", None),
                ("callstream-sim-voice", Some("build")),
            ]),
            package("callstream-gateway", "edges/gateway", &[]),
            package("callstream-sim-voice", "sims/sim-voice", &[]),
            // Not a service: its dependencies are its own business.
            package("callstream", "cli", &[("callstream-gateway", None)]),
        ]});
        let found = violations(&metadata, Path::new("/w")).unwrap();
        let names: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            [
                "callstream-recovery depends on callstream-gateway (normal dependency)",
                "callstream-recovery depends on callstream-sim-voice (build dependency)",
            ]
        );
    }

    #[test]
    fn only_crates_directly_under_the_service_folders_are_services() {
        let root = Path::new("/w");
        assert!(is_service_manifest(
            Path::new("/w/edges/gateway/Cargo.toml"),
            root
        ));
        assert!(!is_service_manifest(
            Path::new("/w/processors/kit/Cargo.toml"),
            root
        ));
        assert!(!is_service_manifest(
            Path::new("/w/edges/gateway/fuzz/Cargo.toml"),
            root
        ));
        assert!(!is_service_manifest(
            Path::new("/w/runtime/Cargo.toml"),
            root
        ));
        assert!(!is_service_manifest(
            Path::new("/elsewhere/edges/x/Cargo.toml"),
            root
        ));
    }
}

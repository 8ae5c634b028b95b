//! One build for both README commands: `cargo xtask demo` builds `callstream` alone,
//! `cargo xtask test` the whole workspace with its tests. Cargo compiles a dependency once per
//! feature set, and the test build turns on features (through dev-dependencies and the bench
//! crate) that `callstream` alone would not, which made the first test run after a demo
//! rebuild those dependencies and every crate of ours above them. `workspace-hack/` turns
//! them on for `callstream` too; this compares the two builds' features (from
//! `cargo tree -e features`) and names what the hack is missing.
//!
//! Blind spot: `cargo tree` names a package built for the host (under a proc macro or build
//! script) and for the target alike, so a feature one of them has hides the other's lack (it
//! missed regex-syntax). Cargo's unit graph tells them apart, on nightly:
//! `cargo +nightly build -p callstream --unit-graph -Z unstable-options` against
//! `cargo +nightly test --workspace --no-run --unit-graph -Z unstable-options`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Features per package (`name vX.Y.Z`) as `cargo tree` resolves them for `args`.
fn features(repo: &Path, args: &[&str]) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .arg("tree")
        .args(args)
        .args(["--format", "{p}|{f}", "--prefix", "none"])
        .current_dir(repo)
        .output()
        .context("running cargo tree")?;
    if !output.status.success() {
        bail!(
            "cargo tree {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(parse(&String::from_utf8_lossy(&output.stdout)))
}

/// `name vX.Y.Z (path) (*)|a,b` lines into features per `name vX.Y.Z`.
fn parse(tree: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut packages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in tree.lines() {
        let Some((package, features)) = line.split_once('|') else {
            continue;
        };
        let name: Vec<&str> = package.split_whitespace().take(2).collect();
        packages.entry(name.join(" ")).or_default().extend(
            features
                .split(',')
                .map(|f| f.trim_end_matches(" (*)").trim().to_string())
                .filter(|f| !f.is_empty()),
        );
    }
    packages
}

/// What the test build turns on in a package `callstream` alone also builds, per package.
fn differences(repo: &Path) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let demo = features(repo, &["-p", "callstream", "-e", "normal,build"])?;
    let test = features(repo, &["--workspace", "-e", "normal,build,dev"])?;
    Ok(demo
        .into_iter()
        .filter_map(|(package, theirs)| {
            let extra: BTreeSet<String> =
                test.get(&package)?.difference(&theirs).cloned().collect();
            (!extra.is_empty()).then_some((package, extra))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_lines_give_features_per_package_without_repeat_marks() {
        let tree = "typenum v1.20.1|const-generics\nfoo v0.1.0 (/w/foo) (*)|a,b (*)\nfoo v0.1.0 (/w/foo)|c\nno bar here\n";
        let parsed = parse(tree);
        assert_eq!(
            parsed["typenum v1.20.1"],
            BTreeSet::from(["const-generics".to_string()])
        );
        assert_eq!(
            parsed["foo v0.1.0"],
            ["a", "b", "c"].into_iter().map(String::from).collect()
        );
    }

    #[test]
    fn the_demo_and_the_tests_build_dependencies_alike() {
        let repo = crate::layout::Layout::discover().repo;
        let differences = differences(&repo).unwrap();
        assert!(
            differences.is_empty(),
            "the test build turns on features `callstream` alone does not, so `cargo xtask \
             test` after `cargo xtask demo` rebuilds them and everything above: add them to \
             workspace-hack/Cargo.toml ([build-dependencies] for proc macros' and build \
             scripts' dependencies): {differences:#?}"
        );
    }
}

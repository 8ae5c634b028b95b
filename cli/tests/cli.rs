//! The `callstream` binary as its users first meet it: `--version`, `--help`, and a clear
//! refusal of a subcommand it does not have.
//!
//! Being an integration test of the cli package, this also makes `cargo test --workspace`
//! build the `callstream` binary itself, with the workspace's features, so the end-to-end
//! tests and `cargo xtask test` use the binary of the same build rather than a second one.
#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is the failure report

use std::process::{Command, Output};

fn callstream(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_callstream"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn version_names_the_package_version() {
    let out = callstream(&["--version"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.trim(),
        format!("callstream {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn help_lists_every_role() {
    let out = callstream(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for role in [
        "gateway",
        "process",
        "projections",
        "operator-api",
        "topics",
        "control",
        "sim",
        "demo",
    ] {
        assert!(
            text.contains(role),
            "`--help` does not mention {role}:\n{text}"
        );
    }
}

#[test]
fn an_unknown_subcommand_is_refused_with_a_usage_error() {
    let out = callstream(&["no-such-role"]);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8(out.stderr).unwrap();
    assert!(text.contains("no-such-role"), "{text}");
}

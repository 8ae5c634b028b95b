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

/// `topics create` refuses replication a producer's `acks=all` cannot rest on before it
/// connects anywhere (the address here answers nothing), and says how to mean it.
#[test]
fn topics_create_refuses_single_replica_durability_unless_told() {
    let unreachable = ["--bootstrap-servers", "127.0.0.1:1"];
    let refused = |extra: &[&str], says: &str| {
        let mut args = vec!["topics", "create"];
        args.extend_from_slice(&unreachable);
        args.extend_from_slice(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_callstream"))
            .args(&args)
            .env_remove("CALLSTREAM_REPLICATION_FACTOR")
            .env_remove("CALLSTREAM_MIN_INSYNC_REPLICAS")
            .env_remove("CALLSTREAM_ALLOW_SINGLE_REPLICA")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let text = String::from_utf8(out.stderr).unwrap();
        assert!(text.contains(says), "{args:?}: {text}");
    };
    refused(
        &["--replication-factor", "1", "--min-insync-replicas", "1"],
        "--allow-single-replica",
    );
    refused(
        &["--replication-factor", "2", "--min-insync-replicas", "3"],
        "no write",
    );
}

/// A `KAFKA_<PROPERTY>` variable naming what the guarantees rest on stops a command that
/// connects, naming the variable.
#[test]
fn a_kafka_variable_that_would_change_acks_is_refused_by_name() {
    let out = Command::new(env!("CARGO_BIN_EXE_callstream"))
        .args([
            "topics",
            "create",
            "--allow-single-replica",
            "--bootstrap-servers",
            "127.0.0.1:1",
        ])
        .env("KAFKA_ACKS", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8(out.stderr).unwrap();
    assert!(
        text.contains("KAFKA_ACKS") && text.contains("acks"),
        "{text}"
    );
}

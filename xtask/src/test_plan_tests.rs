use super::*;

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Arguments, then what goes to cargo, to the binaries, the job count, exclusive tests or not.
type Case<'a> = (&'a [&'a str], &'a [&'a str], &'a [&'a str], usize, bool);

#[test]
fn arguments_split_between_cargo_the_binaries_and_the_runner() {
    let cases: &[Case] = &[
        (&[], &[], &[], DEFAULT_JOBS, true),
        (&["--release"], &["--release"], &[], DEFAULT_JOBS, true),
        (
            &["-p", "callstream-e2e", "--", "--nocapture"],
            &["-p", "callstream-e2e"],
            &["--nocapture"],
            DEFAULT_JOBS,
            false,
        ),
        (&["--test-jobs", "8"], &[], &[], 8, true),
        (&["--test-jobs=2", "--no-exclusive"], &[], &[], 2, false),
        // After `--`, everything is the binaries', even our own flags (and `3` is a filter).
        (
            &["--", "--test-jobs", "3"],
            &[],
            &["--test-jobs", "3"],
            DEFAULT_JOBS,
            false,
        ),
        // A name filter narrows the run: no exclusive tests.
        (&["--", "outage"], &[], &["outage"], DEFAULT_JOBS, false),
        (
            &["--test", "demo"],
            &["--test", "demo"],
            &[],
            DEFAULT_JOBS,
            false,
        ),
        (
            &["-pcallstream-domain"],
            &["-pcallstream-domain"],
            &[],
            DEFAULT_JOBS,
            false,
        ),
    ];
    for (args, cargo, binary, jobs, exclusive) in cases {
        let parsed = TestArgs::parse(&strings(args)).unwrap();
        assert_eq!(parsed.cargo, strings(cargo), "{args:?}");
        assert_eq!(parsed.binary, strings(binary), "{args:?}");
        assert_eq!(parsed.jobs, *jobs, "{args:?}");
        assert_eq!(parsed.exclusive, *exclusive, "{args:?}");
        // The short soak goes with the whole suite, like the exclusive tests.
        assert_eq!(parsed.soak, parsed.selects_everything(), "{args:?}");
        assert_eq!(parsed.cluster, parsed.selects_everything(), "{args:?}");
    }
}

#[test]
fn bad_job_counts_are_refused() {
    for args in [
        &["--test-jobs"][..],
        &["--test-jobs", "0"],
        &["--test-jobs=x"],
    ] {
        assert!(TestArgs::parse(&strings(args)).is_err(), "{args:?}");
    }
}

#[test]
fn package_selection_is_recognised() {
    let selects = |args: &[&str]| TestArgs::parse(&strings(args)).unwrap().selects_packages();
    assert!(!selects(&[]));
    assert!(!selects(&["--release"]));
    assert!(selects(&["-p", "x"]));
    assert!(selects(&["--package=x"]));
    assert!(selects(&["--workspace"]));
}

#[test]
fn package_names_come_from_package_ids() {
    let cases = [
        (
            "path+file:///w/domain#callstream-domain@0.1.0",
            Some("callstream-domain"),
        ),
        ("path+file:///w/xtask#0.1.0", Some("xtask")),
        ("no fragment", None),
    ];
    for (id, name) in cases {
        assert_eq!(package_name(id).as_deref(), name, "{id}");
    }
}

#[test]
fn artifacts_of_test_builds_become_binaries_and_the_rest_is_skipped() {
    let test = r#"{"reason":"compiler-artifact","package_id":"path+file:///w/edges/gateway#callstream-gateway@0.1.0","manifest_path":"/w/edges/gateway/Cargo.toml","target":{"kind":["test"],"crate_types":["bin"],"name":"outage","src_path":"/w/edges/gateway/tests/outage.rs"},"profile":{"test":true},"executable":"/w/target/debug/deps/outage-abc","fresh":true}"#;
    let lib = r#"{"reason":"compiler-artifact","package_id":"path+file:///w/xtask#0.1.0","manifest_path":"/w/xtask/Cargo.toml","target":{"kind":["bin"],"name":"xtask"},"profile":{"test":true},"executable":"/w/target/debug/deps/xtask-1"}"#;
    let not_test = r#"{"reason":"compiler-artifact","package_id":"p#a@1","manifest_path":"/w/a/Cargo.toml","target":{"kind":["lib"],"name":"a"},"profile":{"test":false},"executable":null}"#;
    let other = r#"{"reason":"build-finished","success":true}"#;

    let outage = parse_artifact(test).unwrap();
    assert_eq!(outage.package, "callstream-gateway");
    assert_eq!(outage.label(), "callstream-gateway tests/outage");
    assert_eq!(outage.manifest_dir, PathBuf::from("/w/edges/gateway"));
    assert_eq!(
        outage.executable,
        PathBuf::from("/w/target/debug/deps/outage-abc")
    );
    assert_eq!(parse_artifact(lib).unwrap().label(), "xtask bin xtask");
    for line in [not_test, other, "", "Compiling foo", "{}"] {
        assert_eq!(parse_artifact(line), None, "{line}");
    }
}

fn binary(package: &str, target: &str) -> TestBinary {
    TestBinary {
        package: package.into(),
        kind: "test".into(),
        target: target.into(),
        executable: PathBuf::from(target),
        manifest_dir: PathBuf::from(package),
    }
}

#[test]
fn the_longest_binaries_start_first_and_unknown_ones_count_as_long() {
    let binaries = vec![
        binary("a", "quick"),
        binary("a", "slow"),
        binary("b", "new"),
        binary("a", "medium"),
    ];
    let seconds = parse_durations(
        "a tests/quick\t0.1\na tests/slow\t300.0\na tests/medium\t20\nbroken line\n",
    );
    let order: Vec<String> = schedule(binaries, &seconds)
        .iter()
        .map(|b| b.target.clone())
        .collect();
    assert_eq!(order, ["slow", "new", "medium", "quick"]);
}

#[test]
fn durations_round_trip_through_their_file() {
    let seconds: HashMap<String, f64> = [
        ("a tests/x".to_string(), 1.5),
        ("b (unit)".to_string(), 0.0),
    ]
    .into_iter()
    .collect();
    assert_eq!(parse_durations(&format_durations(&seconds)), seconds);
}

#[test]
fn failed_test_names_are_read_from_the_output() {
    let output =
        "running 3 tests\ntest a::one ... ok\ntest a::two ... FAILED\ntest three ... FAILED\n";
    assert_eq!(failed_tests(output), ["a::two", "three"]);
}

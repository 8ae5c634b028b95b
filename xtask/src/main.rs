//! `cargo xtask`: every developer command of callstream (the matklad "cargo xtask" pattern).
//!
//! The dev stack it runs is a real Kafka broker (official jars from Maven Central, KRaft) and a
//! real Postgres, both on loopback, with all their state under `<repo>/.stack/`. Commands are
//! idempotent: `up` twice starts things once, `down` stops only what `up` started.

mod area_codes;
#[cfg(test)]
mod build_sharing;
mod cargo_cmds;
mod clock_rule;
mod cluster;
mod debian;
mod fuzz;
mod java_tools;
mod kafka;
mod layering;
mod layout;
mod postgres;
mod procs;
mod registry;
mod schemathesis;
mod soak;
mod stack;
mod summary;
mod test_plan;
mod test_runner;
mod venv;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use layout::Layout;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Developer commands of callstream: the local Kafka + Postgres stack, tests, demo, benchmarks, fuzzing",
    after_help = "State lives in <repo>/.stack/. Kafka: 127.0.0.1:9092 (log .stack/kafka/kafka.log). \
                  Postgres: postgres://postgres@127.0.0.1:5432/callstream (log .stack/postgres/postgres.log). \
                  The three-broker cluster (`up --cluster`): 127.0.0.1:19094-19096, SASL_SSL, state in .stack/cluster/."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start Kafka (KRaft, 127.0.0.1:9092), Postgres (127.0.0.1:5432, database `callstream`) and
    /// the schema registry (Apicurio, 127.0.0.1:8085/apis/ccompat/v7), wait until each answers,
    /// and create the topics. Does nothing for what already runs.
    ///
    /// Fetches the Kafka jars and the registry with mvn on first use (cached in .stack/kafka/libs,
    /// .stack/registry and ~/.m2), installs PostgreSQL from Debian's packages when missing, and
    /// reuses a Kafka, Postgres or registry that already answers on those ports (without ever
    /// stopping it). The registry needs Java 21 or newer (CALLSTREAM_REGISTRY_JAVA_HOME,
    /// JAVA_HOME, PATH, then /usr/lib/jvm).
    ///
    /// `--cluster` starts instead a three-broker KRaft cluster from the same jars, beside the
    /// single broker and apart from it: clients on 127.0.0.1:19094-19096 with SASL_SSL and
    /// SCRAM-SHA-512 (a user per service, passwords in .stack/cluster/secrets/), mutual TLS
    /// between brokers (19194-19196) and controllers (19294-19296), ACLs from
    /// xtask/src/cluster/acls.rs, replication factor 3 and min.insync.replicas 2. Certificates,
    /// passwords and client settings (.stack/cluster/clients/<user>.properties) are made at
    /// first start. Needs a JDK (ClusterAdmin.java runs from source). With it comes a second
    /// Postgres on 127.0.0.1:5433 that takes only TLS with SCRAM passwords, holding callstream's
    /// database with the roles of `callstream db roles` (none a superuser).
    Up {
        /// Do not build `callstream` and run `callstream topics create`.
        #[arg(long)]
        no_topics: bool,
        /// Start the three-broker cluster and its Postgres (and nothing else), and create the
        /// design's topics on it (3 replicas, 2 in sync).
        #[arg(long, conflicts_with = "no_topics")]
        cluster: bool,
    },
    /// Stop what `up` started (by pid); servers that xtask did not start are left alone.
    Down {
        /// Stop the three-broker cluster instead of the single-broker stack.
        #[arg(long)]
        cluster: bool,
    },
    /// Say what runs: each service, its address, pid and log; the cluster's brokers and where
    /// its clients' settings are.
    Status,
    /// Stop the stack and delete its data (Kafka logs, the Postgres cluster); the fetched jars
    /// stay, so the next `up` starts from empty storage without downloading.
    Reset {
        /// Stop the three-broker cluster and delete .stack/cluster (data, certificates,
        /// passwords); the jars stay.
        #[arg(long)]
        cluster: bool,
    },
    /// Check the layering (no service under processors/, edges/ or sims/ depends on another
    /// one outside dev-dependencies; `test` checks it first), then bring the stack up, build
    /// every test of the workspace once, run the test binaries
    /// against the stack several at a time, and end with `N passed, N failed`. Exits non-zero
    /// when anything fails.
    ///
    /// Arguments before `--` go to `cargo test --no-run` (`-p callstream-e2e`, `--test demo`),
    /// after it to every test binary (`-- --nocapture`, a name filter). Ours: `--test-jobs N`
    /// (binaries at once, default 4), `--no-soak` (skip the short soak that ends a whole-workspace
    /// run, see `soak`) and `--no-exclusive` (skip the tests that stop a server of
    /// the stack, which otherwise run alone at the end of a whole-workspace run). Each binary's
    /// output is kept in .stack/test-logs/ and printed when it fails. Tests get
    /// KAFKA_BOOTSTRAP_SERVERS, DATABASE_URL and CALLSTREAM_KAFKA_LIBS. A passing run
    /// deletes the topics its tests made; a failing one keeps them (listed in
    /// .stack/test-topics.txt) until the next run.
    Test {
        /// Arguments for `cargo test` (a `-p` replaces the default `--workspace`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The main job: the stack up, then `callstream demo`, the whole pipeline on a simulated
    /// workload (simulators with faults, every processor as a process), ending in a summary.
    ///
    /// Extra arguments go to `callstream demo`: `cargo xtask demo --contacts 500`,
    /// `cargo xtask demo --keep-running` (see `callstream demo --help`).
    Demo {
        /// Arguments for `callstream demo`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// A whole simulated day under fire: `callstream demo` on a scaled clock (96x real time,
    /// midnight to midnight in US Central in about 15 minutes) with production settings
    /// (demo/soak-control.toml), every role SIGKILLed at random three times, a second
    /// processor member for part of the day, a paused campaign, a CRM outage, the broker
    /// stopped for 30 s and Postgres restarted. Exits non-zero when an invariant fails.
    ///
    /// `--short`: four business hours, one kill of each role, no stack faults (what
    /// `cargo xtask test` runs). Other arguments go to `callstream demo` (`--seed 9`).
    Soak {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Bring the stack up and run one benchmark (release build), which prints JSON lines:
    /// `cargo run --release -p callstream-bench --bin NAME -- ARGS`.
    ///
    /// Benchmarks: runtime, gateway, scheduler, launch, detector, crm, projections, console,
    /// http_serve; `scale` runs on the three-broker cluster instead (`up --cluster`, and a
    /// release `callstream` for its processes).
    /// `cargo xtask bench NAME --help` lists a benchmark's own options.
    Bench {
        /// Which benchmark to run (a binary of bench/src/bin/).
        name: String,
        /// Further arguments for the benchmark.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Check the layering alone: no service under processors/, edges/ or sims/ depends on
    /// another one outside dev-dependencies (read from `cargo metadata`).
    Layering,
    /// Check the operator API against its OpenAPI document with schemathesis (PyPI, pinned,
    /// installed into .stack/schemathesis/venv): the stack up, a seeded world, `--checks all`.
    Schemathesis {
        /// Further arguments for `schemathesis run` (`--max-examples 100`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Fuzz every cargo-fuzz target (edges/gateway/fuzz, processors/crm-dispatcher/fuzz) on
    /// the nightly toolchain, one after the other: `cargo +nightly fuzz run TARGET`.
    ///
    /// Installs cargo-fuzz from crates.io when missing (`cargo install cargo-fuzz --locked`).
    /// The checked-in seed corpora are read but not written: new inputs go to the ignored
    /// `<crate>/fuzz/target/new-corpus/TARGET/` unless `--keep-new`. Exits non-zero if a target
    /// crashes, naming the saved input (`<crate>/fuzz/artifacts/TARGET/crash-*`). Arguments
    /// after `--` go to libFuzzer. Not part of `cargo xtask test`; CI replays the corpora on
    /// stable with each crate's `fuzz_corpus` test.
    Fuzz {
        /// Seconds to fuzz each target (libFuzzer's -max_total_time).
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Fuzz only this target (`twilio_webhook`, `crm_answer`, ...).
        #[arg(long)]
        target: Option<String>,
        /// Add the new inputs libFuzzer finds to the checked-in corpus (review before
        /// committing them).
        #[arg(long)]
        keep_new: bool,
        /// Further libFuzzer flags (`-- -jobs=2`).
        #[arg(last = true, allow_hyphen_values = true)]
        libfuzzer_args: Vec<String>,
    },
    /// Compare the NANP area-code table (domain/data/nanp_area_codes.txt) with Google's
    /// libphonenumber: region and time zones of every code, codes either side lacks.
    ///
    /// Installs libphonenumber's Python port `phonenumbers` from PyPI (pinned, into
    /// .stack/area-codes/venv) and runs domain/data/refresh_area_codes.py with it. Prints one
    /// JSON line per difference on stdout (kinds missing_from_ours, region_differs,
    /// zone_not_covered, unknown_to_libphonenumber, non_geographic_not_listed,
    /// geographic_in_libphonenumber; a reviewed one carries its reason), then a summary line
    /// with the counts and the phonenumbers version; progress on stderr. Zones the table lists
    /// beyond libphonenumber's, or that keep the same clock under another name, are not
    /// differences. Not part of `cargo xtask test`.
    AreaCodes {
        /// Exit non-zero when a code is missing from the table or a region differs.
        #[arg(long, conflicts_with = "write")]
        check: bool,
        /// Append the geographic codes the table lacks (region and zones from
        /// libphonenumber, under a comment naming its version and the date); existing rows
        /// are never rewritten.
        #[arg(long)]
        write: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let layout = Layout::discover();
    let result = match cli.command {
        Cmd::Up { cluster: true, .. } => cargo_cmds::up_cluster(&layout),
        Cmd::Up { no_topics, .. } => stack::up(&layout).map(|()| {
            // The stack is up either way; a broken build must not make `up` fail.
            if !no_topics {
                if let Err(e) = cargo_cmds::create_topics(&layout) {
                    println!("topics: warning: {e:#}");
                }
            }
        }),
        Cmd::Down { cluster: true } => cluster::down(&layout),
        Cmd::Down { cluster: false } => stack::down(&layout),
        Cmd::Status => {
            stack::status(&layout);
            cluster::print_status(&layout);
            Ok(())
        }
        Cmd::Reset { cluster: true } => cluster::reset(&layout),
        Cmd::Reset { cluster: false } => stack::reset(&layout),
        Cmd::Test { args } => test_runner::test(&layout, &args),
        Cmd::Demo { args } => cargo_cmds::demo(&layout, &args),
        Cmd::Soak { args } => soak::run(&layout, &args),
        Cmd::Bench { name, args } => cargo_cmds::bench(&layout, &name, &args),
        Cmd::Schemathesis { args } => schemathesis::run(&layout, &args),
        Cmd::Layering => layering::check(&layout.repo),
        Cmd::AreaCodes { check, write } => {
            let mode = match (check, write) {
                (true, _) => area_codes::Mode::Check,
                (_, true) => area_codes::Mode::Write,
                _ => area_codes::Mode::Report,
            };
            area_codes::run(&layout, mode)
        }
        Cmd::Fuzz {
            seconds,
            target,
            keep_new,
            libfuzzer_args,
        } => fuzz::fuzz(
            &layout,
            &fuzz::FuzzOptions {
                seconds,
                target,
                keep_new,
                libfuzzer_args,
            },
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_args(argv: &[&str]) -> Vec<String> {
        let mut full = vec!["xtask", "test"];
        full.extend_from_slice(argv);
        match Cli::try_parse_from(full).unwrap().command {
            Cmd::Test { args } => args,
            _ => panic!("not the test command"),
        }
    }

    #[test]
    fn test_arguments_reach_cargo_test_verbatim() {
        let cases: &[(&[&str], &[&str])] = &[
            (&[], &[]),
            (&["-p", "callstream-e2e"], &["-p", "callstream-e2e"]),
            (
                &["-p", "callstream-e2e", "--", "--nocapture"],
                &["-p", "callstream-e2e", "--", "--nocapture"],
            ),
            (&["--", "-p", "xtask"], &["-p", "xtask"]),
        ];
        for (argv, expected) in cases {
            assert_eq!(test_args(argv), *expected, "{argv:?}");
        }
    }

    #[test]
    fn demo_arguments_reach_callstream_demo_verbatim() {
        let cases: &[&[&str]] = &[
            &[],
            &["--contacts", "500"],
            &["--keep-running", "--timeout", "5m"],
        ];
        for argv in cases {
            let mut full = vec!["xtask", "demo"];
            full.extend_from_slice(argv);
            match Cli::try_parse_from(full).unwrap().command {
                Cmd::Demo { args } => assert_eq!(args, *argv),
                _ => panic!("not the demo command"),
            }
        }
    }

    #[test]
    fn fuzz_options_default_to_a_minute_a_target_and_a_read_only_corpus() {
        let parse = |argv: &[&str]| {
            let mut full = vec!["xtask", "fuzz"];
            full.extend_from_slice(argv);
            match Cli::try_parse_from(full).unwrap().command {
                Cmd::Fuzz {
                    seconds,
                    target,
                    keep_new,
                    libfuzzer_args,
                } => (seconds, target, keep_new, libfuzzer_args),
                _ => panic!("not the fuzz command"),
            }
        };
        assert_eq!(parse(&[]), (60, None, false, vec![]));
        assert_eq!(
            parse(&[
                "--seconds",
                "5",
                "--target",
                "crm_answer",
                "--keep-new",
                "--",
                "-jobs=2"
            ]),
            (5, Some("crm_answer".into()), true, vec!["-jobs=2".into()])
        );
    }

    #[test]
    fn area_codes_takes_check_or_write_not_both() {
        let parse = |argv: &[&str]| {
            let mut full = vec!["xtask", "area-codes"];
            full.extend_from_slice(argv);
            Cli::try_parse_from(full).map(|cli| match cli.command {
                Cmd::AreaCodes { check, write } => (check, write),
                _ => panic!("not the area-codes command"),
            })
        };
        assert_eq!(parse(&[]).unwrap(), (false, false));
        assert_eq!(parse(&["--check"]).unwrap(), (true, false));
        assert_eq!(parse(&["--write"]).unwrap(), (false, true));
        assert!(parse(&["--check", "--write"]).is_err());
    }

    #[test]
    fn every_subcommand_has_help() {
        use clap::CommandFactory;
        let cli = Cli::command();
        for sub in cli.get_subcommands() {
            assert!(sub.get_about().is_some(), "{} has no help", sub.get_name());
        }
        cli.debug_assert();
    }
}

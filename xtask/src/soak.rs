//! `cargo xtask soak`: a whole simulated day under fire. `callstream demo` on a scaled clock
//! (96 times real time, so yesterday's midnight to midnight in US Central takes about fifteen
//! minutes; business time stays behind real time, as Kafka refuses records from the future)
//! with production settings (`demo/soak-control.toml`: three tenants, two sharing contact ids,
//! whose CRMs send through the day), every role but the simulators
//! SIGKILLed at random three times, a second member of one processor kind for part of the
//! day, a campaign paused for a business hour, a CRM outage of ten business minutes, the voice
//! platform answering 502/504 after placing 1% of calls, and,
//! from here (the demo does not own the stack), the broker stopped for 30 s and Postgres
//! restarted. The demo's invariants decide the exit status.
//!
//! `--short` is the form `cargo xtask test` runs: four business hours from 08:00, one kill of
//! each role, no stack faults.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cargo_cmds::{create_topics, stack_env, Topics};
use crate::layout::Layout;
use crate::{kafka, postgres, stack};

/// What one soak runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What the run is called in its own lines (`soak`, `demo`).
    pub name: &'static str,
    /// Environment on top of demo/demo.env (the demo's own environment wins over the file).
    pub env: Vec<(&'static str, &'static str)>,
    /// Arguments for `callstream demo`.
    pub demo_args: Vec<String>,
    /// (after, for): when the broker is stopped, real time after the demo starts, and for how long.
    pub broker_stop: Option<(Duration, Duration)>,
    /// When Postgres is restarted, real time after the demo starts.
    pub postgres_restart: Option<Duration>,
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// The whole day.
pub fn full() -> Plan {
    Plan {
        name: "soak",
        // The voice platform also answers 502/504 after it placed the call (1%).
        env: vec![("SIM_VOICE_CREATE_ACCEPTED_THEN_ERROR_SHARE", "0.01")],
        demo_args: args(&[
            "--control",
            "demo/soak-control.toml",
            "--clock-rate",
            "96",
            "--clock-start",
            "yesterday 00:00",
            "--business-span",
            "24h",
            "--contacts",
            "300",
            "--burst",
            "100",
            "--kill-rounds",
            "3",
            "--kill-every",
            "25s",
            "--extra-member",
            "contact",
            "--restart-exited",
            // a business hour's pause of the weekday campaign, mid-morning in Chicago
            "--pause-campaign",
            "spring-intake",
            "--pause-after",
            "380s",
            "--pause-for",
            "38s",
            // ten business minutes without the CRM
            "--crm-outage-after",
            "420s",
            "--crm-outage-for",
            "7s",
            // the CRM says opted-out leads may be called again, mid-afternoon
            "--contradict-after",
            "570s",
            "--timeout",
            "40m",
            "--progress-every",
            "20s",
        ]),
        broker_stop: Some((Duration::from_secs(330), Duration::from_secs(30))),
        postgres_restart: Some(Duration::from_secs(600)),
    }
}

/// Four business hours from 08:00 Central: what CI runs.
pub fn short() -> Plan {
    Plan {
        name: "soak",
        env: Vec::new(),
        demo_args: args(&[
            "--control",
            "demo/soak-control.toml",
            "--clock-rate",
            "96",
            "--clock-start",
            "yesterday 08:00",
            "--business-span",
            "4h",
            "--contacts",
            "60",
            "--burst",
            "60",
            "--kill-rounds",
            "1",
            "--kill-every",
            "10s",
            "--restart-exited",
            "--pause-campaign",
            "spring-intake",
            "--pause-after",
            "40s",
            "--pause-for",
            "20s",
            "--crm-outage-after",
            "60s",
            "--crm-outage-for",
            "7s",
            "--contradict-after",
            "100s",
            "--timeout",
            "15m",
            "--progress-every",
            "15s",
        ]),
        broker_stop: None,
        postgres_restart: None,
    }
}

/// The main job (`cargo xtask demo`): a working morning on the scaled clock with production
/// settings, every role killed once, no stack faults; about as long as the old compressed demo.
pub fn demo() -> Plan {
    Plan {
        name: "demo",
        env: Vec::new(),
        demo_args: args(&[
            "--control",
            "demo/soak-control.toml",
            "--clock-rate",
            "96",
            "--clock-start",
            "yesterday 07:00",
            "--business-span",
            "8h",
            "--contacts",
            "400",
            "--burst",
            "200",
            "--kill-rounds",
            "1",
            "--kill-every",
            "20s",
            "--restart-exited",
            "--pause-campaign",
            "spring-intake",
            "--pause-after",
            "120s",
            "--pause-for",
            "38s",
            "--crm-outage-after",
            "170s",
            "--crm-outage-for",
            "7s",
            "--contradict-after",
            "150s",
            "--timeout",
            "25m",
            "--progress-every",
            "15s",
        ]),
        broker_stop: None,
        postgres_restart: None,
    }
}

/// `preset` with the user's own arguments after it; a preset option the user gives again
/// is left out (clap refuses an option given twice).
pub fn merge(preset: &[String], user: &[String]) -> Vec<String> {
    let given = |flag: &str| {
        user.iter()
            .any(|u| u == flag || u.starts_with(&format!("{flag}=")))
    };
    let mut out = Vec::new();
    let mut items = preset.iter().peekable();
    while let Some(item) = items.next() {
        let value = items.next_if(|v| !v.starts_with("--"));
        if given(item) {
            continue;
        }
        out.push(item.clone());
        out.extend(value.cloned());
    }
    out.extend(user.iter().cloned());
    out
}

/// Promises a debug build can be told to break (`CALLSTREAM_TEST_BREAK`), with the
/// invariant of the demo's summary that must then fail.
pub const BREAKS: [(&str, &str); 1] = [("ignore_pauses", "no_call_while_paused")];

/// `cargo xtask soak`'s own arguments: `--short`, `--break <promise>`; the rest goes to
/// the demo.
#[derive(Debug, Clone, PartialEq)]
pub struct SoakArgs {
    pub plan: Plan,
    /// (what to break, the invariant that must fail).
    pub broken: Option<(String, String)>,
    pub demo_args: Vec<String>,
}

/// Parses `cargo xtask soak`'s arguments.
pub fn parse(given: &[String]) -> Result<SoakArgs> {
    let mut short = false;
    let mut broken = None;
    let mut rest = Vec::new();
    let mut items = given.iter();
    while let Some(arg) = items.next() {
        match arg.as_str() {
            "--short" => short = true,
            "--break" => {
                let what = items.next().context("--break needs a promise to break")?;
                let Some((_, invariant)) = BREAKS.iter().find(|(name, _)| name == what) else {
                    let known: Vec<_> = BREAKS.iter().map(|(n, _)| *n).collect();
                    bail!("--break {what}: known are {}", known.join(", "));
                };
                broken = Some((what.clone(), (*invariant).to_owned()));
            }
            _ => rest.push(arg.clone()),
        }
    }
    Ok(SoakArgs {
        plan: if short { self::short() } else { full() },
        broken,
        demo_args: rest,
    })
}

/// Brings the stack up and runs the soak.
pub fn run(layout: &Layout, given: &[String]) -> Result<()> {
    let args = parse(given)?;
    stack::up(layout)?;
    if create_topics(layout)? == Topics::BuildFailed {
        bail!("`callstream` does not build, so the soak cannot run");
    }
    run_built(layout, &args)
}

/// Runs the soak with the `callstream` binary already built and the stack up.
pub fn run_built(layout: &Layout, args: &SoakArgs) -> Result<()> {
    let plan = &args.plan;
    let demo_args = merge(&plan.demo_args, &args.demo_args);
    let bin = layout.callstream_bin();
    let started = Instant::now();
    let mut cmd = Command::new(&bin);
    cmd.arg("demo")
        .args(&demo_args)
        .envs(stack_env(layout))
        // The demo as production runs: every role registers its schemas with the stack's
        // registry and writes the Confluent wire format, which downstream readers expect.
        .env("CALLSTREAM_SCHEMA_REGISTRY_URL", crate::registry::url())
        .envs(plan.env.iter().copied())
        .current_dir(&layout.repo)
        .stdout(Stdio::piped());
    if std::env::var_os("RUST_LOG").is_none() {
        // The orchestrator's own reader would log every broker error of the outage; the
        // roles log at info to their files whatever this says.
        cmd.env("RUST_LOG", "warn,librdkafka=off,rdkafka::client=off");
    }
    if let Some((what, invariant)) = &args.broken {
        println!(
            "{}: breaking {what} on purpose (debug build); {invariant} must fail",
            plan.name
        );
        cmd.env("CALLSTREAM_TEST_BREAK", what);
    }
    println!(
        "{}: running {} demo {}",
        plan.name,
        layout.show(&bin),
        demo_args.join(" ")
    );
    let mut child = cmd
        .spawn()
        .with_context(|| format!("running {}", bin.display()))?;
    // Echoed as it comes; the invariants line is kept to judge a deliberately broken run.
    let stdout = child.stdout.take().context("the soak's output")?;
    let echo = std::thread::spawn(move || {
        let mut invariants = None;
        for line in BufReader::new(stdout)
            .lines()
            .map_while(std::io::Result::ok)
        {
            println!("{line}");
            if line.starts_with(r#"{"summary":"invariants""#) {
                invariants = serde_json::from_str::<serde_json::Value>(&line).ok();
            }
        }
        invariants
    });
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let faults = {
        let layout = layout.clone();
        let plan = plan.clone();
        std::thread::spawn(move || stack_faults(&layout, &plan, &done_rx))
    };
    let status = child.wait().context("waiting for the soak")?;
    let invariants = echo.join().ok().flatten();
    let _ = done_tx.send(());
    let fault_result = faults
        .join()
        .map_err(|_| anyhow::anyhow!("the stack-fault thread panicked"))?;
    // Whatever happened, the stack is left up for the next command.
    if let Err(e) = stack::up(layout) {
        println!("{}: could not bring the stack back up: {e:#}", plan.name);
    }
    fault_result?;
    let seconds = started.elapsed().as_secs_f64();
    if let Some((what, invariant)) = &args.broken {
        let caught = invariants
            .as_ref()
            .and_then(|i| i.get(invariant))
            .and_then(serde_json::Value::as_bool)
            == Some(false);
        if !status.success() && caught {
            println!(
                "{}: {what} was broken on purpose and {invariant} failed, as it must ({seconds:.0} s)",
                plan.name
            );
            return Ok(());
        }
        bail!("{what} was broken on purpose but {invariant} did not fail ({status}): the soak would miss it");
    }
    println!(
        "{}: {} after {seconds:.0} s",
        plan.name,
        if status.success() { "passed" } else { "FAILED" }
    );
    if !status.success() {
        bail!(
            "the {} failed ({status}); its summary above says which invariant",
            plan.name
        );
    }
    Ok(())
}

/// The broker's stop and Postgres' restart at their times, unless the run ends first.
fn stack_faults(layout: &Layout, plan: &Plan, done: &mpsc::Receiver<()>) -> Result<()> {
    let started = Instant::now();
    let mut events: Vec<(Duration, &str)> = Vec::new();
    if let Some((after, _)) = plan.broker_stop {
        events.push((after, "broker"));
    }
    if let Some(after) = plan.postgres_restart {
        events.push((after, "postgres"));
    }
    events.sort();
    for (at, what) in events {
        let wait = at.saturating_sub(started.elapsed());
        if done.recv_timeout(wait).is_ok() {
            return Ok(());
        }
        let t = started.elapsed().as_secs();
        match what {
            "broker" => {
                let length = plan.broker_stop.map_or(Duration::ZERO, |(_, l)| l);
                println!(
                    "soak: +{t} s: stopping the Kafka broker for {} s",
                    length.as_secs()
                );
                kafka::down(layout)?;
                let _ = done.recv_timeout(length);
                kafka::up(layout)?;
                println!(
                    "soak: +{} s: the broker is back",
                    started.elapsed().as_secs()
                );
            }
            _ => {
                println!("soak: +{t} s: restarting Postgres");
                postgres::down(layout)?;
                postgres::up(layout)?;
                println!("soak: +{} s: Postgres is back", started.elapsed().as_secs());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_form_and_a_break_are_chosen_by_flag_and_the_rest_reaches_the_demo() {
        let parsed = parse(&args(&[
            "--short",
            "--seed",
            "9",
            "--break",
            "ignore_pauses",
        ]))
        .unwrap();
        assert_eq!(parsed.plan, short());
        assert_eq!(parsed.demo_args, args(&["--seed", "9"]));
        assert_eq!(
            parsed.broken,
            Some(("ignore_pauses".into(), "no_call_while_paused".into()))
        );
        let parsed = parse(&[]).unwrap();
        assert_eq!(parsed.plan, full());
        assert!(parsed.demo_args.is_empty() && parsed.broken.is_none());
        assert!(full().broker_stop.is_some() && full().postgres_restart.is_some());
        let merged = merge(
            &args(&["--contacts", "300", "--restart-exited", "--seed", "1"]),
            &args(&["--seed", "9", "--keep-running"]),
        );
        assert_eq!(
            merged,
            args(&[
                "--contacts",
                "300",
                "--restart-exited",
                "--seed",
                "9",
                "--keep-running"
            ])
        );
        let refused = parse(&args(&["--break", "everything"]))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("ignore_pauses"), "{refused}");
    }
}

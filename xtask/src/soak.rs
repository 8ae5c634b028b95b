//! `cargo xtask soak`: a whole simulated day under fire. `callstream demo` on a scaled clock
//! (96 times real time, so yesterday's midnight to midnight in US Central takes about fifteen
//! minutes; business time stays behind real time, as Kafka refuses records from the future)
//! with production settings (`demo/soak-control.toml`), every role but the simulators
//! SIGKILLed at random three times, a second member of one processor kind for part of the
//! day, a campaign paused for a business hour, a CRM outage of ten business minutes, and,
//! from here (the demo does not own the stack), the broker stopped for 30 s and Postgres
//! restarted. The demo's invariants decide the exit status.
//!
//! `--short` is the form `cargo xtask test` runs: four business hours from 08:00, one kill of
//! each role, no stack faults.

use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cargo_cmds::{create_topics, stack_env, Topics};
use crate::layout::Layout;
use crate::{kafka, postgres, stack};

/// What one soak runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
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
            "--timeout",
            "15m",
            "--progress-every",
            "15s",
        ]),
        broker_stop: None,
        postgres_restart: None,
    }
}

/// Parses `cargo xtask soak`'s own arguments: `--short`, the rest goes to the demo.
pub fn plan_for(given: &[String]) -> (Plan, Vec<String>) {
    let short = given.iter().any(|a| a == "--short");
    let rest = given.iter().filter(|a| *a != "--short").cloned().collect();
    (if short { self::short() } else { full() }, rest)
}

/// Brings the stack up and runs the soak.
pub fn run(layout: &Layout, given: &[String]) -> Result<()> {
    let (plan, extra) = plan_for(given);
    stack::up(layout)?;
    if create_topics(layout)? == Topics::BuildFailed {
        bail!("`callstream` does not build, so the soak cannot run");
    }
    run_built(layout, &plan, &extra)
}

/// Runs `plan` with the `callstream` binary already built and the stack up.
pub fn run_built(layout: &Layout, plan: &Plan, extra: &[String]) -> Result<()> {
    let bin = layout.callstream_bin();
    let started = Instant::now();
    let mut cmd = Command::new(&bin);
    cmd.arg("demo")
        .args(&plan.demo_args)
        .args(extra)
        .envs(stack_env(layout))
        .current_dir(&layout.repo);
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
    println!(
        "soak: running {} demo {} {}",
        layout.show(&bin),
        plan.demo_args.join(" "),
        extra.join(" ")
    );
    let mut child = cmd
        .spawn()
        .with_context(|| format!("running {}", bin.display()))?;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let faults = {
        let layout = layout.clone();
        let plan = plan.clone();
        std::thread::spawn(move || stack_faults(&layout, &plan, &done_rx))
    };
    let status = child.wait().context("waiting for the soak")?;
    let _ = done_tx.send(());
    let fault_result = faults
        .join()
        .map_err(|_| anyhow::anyhow!("the stack-fault thread panicked"))?;
    // Whatever happened, the stack is left up for the next command.
    if let Err(e) = stack::up(layout) {
        println!("soak: could not bring the stack back up: {e:#}");
    }
    fault_result?;
    println!(
        "soak: {} after {:.0} s",
        if status.success() { "passed" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if !status.success() {
        bail!("the soak failed ({status}); its summary above says which invariant");
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
    fn the_short_form_is_chosen_by_flag_and_the_rest_reaches_the_demo() {
        let given = args(&["--short", "--seed", "9"]);
        let (plan, rest) = plan_for(&given);
        assert_eq!(plan, short());
        assert_eq!(rest, args(&["--seed", "9"]));
        let (plan, rest) = plan_for(&[]);
        assert_eq!(plan, full());
        assert!(rest.is_empty());
        assert!(full().broker_stop.is_some() && full().postgres_restart.is_some());
    }
}

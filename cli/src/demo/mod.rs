//! `callstream demo`: the whole pipeline on a simulated workload, as child
//! processes of this binary, ending in a summary.
//!
//! A run gets its own topic prefix and database (see `setup`), applies the
//! demo control file, starts the simulators, the gateway, every processor
//! this binary has, the projections and the operator API, sends the
//! workload in bursts, injects faults (dropped completions and burst drops
//! at the voice platform, CRM timeouts and an outage, an operator pausing a
//! campaign), lets the pipeline run until it settles (bounded), and prints
//! what happened: read from the views, cross-checked against the topics and
//! the simulators' own counters, with the pipeline's invariants checked;
//! then a viewer token and example calls of the operator API.
//!
//! Guarantee: whatever happens (an error, Ctrl-C, a role crashing), every
//! child is stopped before `run` returns.

mod api;
mod args;
mod by_launch;
mod chaos;
mod children;
mod database;
mod finish;
mod notify_sink;
mod promises;
mod reader;
mod records;
mod render;
mod roles;
mod sections;
mod settle;
mod setup;
mod sims;
mod slots;
mod summary;
mod tally;
mod views;
mod zones;

use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::time::Instant;

pub use args::DemoArgs;
use children::Children;
use setup::Run;

/// How long the topics must be quiet before the run counts as settled.
const QUIET: Duration = Duration::from_secs(4);
/// How long roles get to become ready.
const READY_LIMIT: Duration = Duration::from_secs(120);
/// How often a supervised role may stop on its own before the run fails (the broker's
/// 30 s outage in a soak may stop a role a few times while it is away).
const MAX_RESTARTS: u32 = 8;
/// How long a role gets to stop after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(15);

/// What the run produced before the children stopped.
pub(crate) struct Outcome {
    workload: callstream_workload::SendReport,
    stats: sims::SimStats,
    settled: bool,
    elapsed: Duration,
    /// The campaign pauses the run wrote, with when.
    pauses: Vec<promises::PauseWindow>,
    /// The zone each contact's CRM record named.
    zones: promises::ContactZones,
    /// What the kills did (empty without `--kill-rounds`).
    chaos: chaos::ChaosReport,
}

/// Runs the demo.
pub async fn run(args: DemoArgs) -> Result<()> {
    let mut run = setup::prepare(&args)?;
    let exe = std::env::current_exe().context("locating the callstream binary")?;
    let available = roles::Available::probe(&exe);
    println!(
        "demo: run {} (topics {}*, {} partitions), logs in {}",
        run.id,
        run.prefix,
        run.topics.partitions,
        run.log_dir.display()
    );
    // The notifier sends to a local sink the demo runs (its chat and webhook channels).
    let sink = notify_sink::NotifySink::start().await?;
    let tenants: Vec<String> = run.control.tenants.keys().cloned().collect();
    let channels = sink.channels_file(&run.log_dir, &tenants)?;
    run.env.insert(
        "CALLSTREAM_NOTIFIER_CHANNELS".into(),
        channels.display().to_string(),
    );
    run.env.insert(
        "CALLSTREAM_CONSOLE_URL".into(),
        format!("{}/console", run.api_url),
    );
    let run = run;
    let topics = setup::create_topics(&run).await?;
    let changes = setup::apply_control(&run, &run.control, "demo set-up").await?;
    println!(
        "demo: {topics} topics, {changes} control settings from {}",
        run.control_path.display()
    );
    let pool = if available.projections {
        let pool = database::create(&run.base_database_url, &run.database).await?;
        println!("demo: views in database {}", run.database);
        Some(pool)
    } else {
        None
    };
    let mut reader = reader::Reader::start(
        &run.kafka,
        &roles::observed_topics(&run),
        &run.topic(callstream_platform::topics::DEAD_LETTERS),
    )?;
    let mut children = Children::new(exe, run.log_dir.clone(), run.env.clone())?;
    let result = drive(
        &args,
        &run,
        &available,
        pool.as_ref(),
        &mut children,
        &reader,
    )
    .await;
    // Without --keep-running the processors stop first, so the topics hold
    // their last word before the summary reads them (and the views catch up
    // with it); the projections and the API stay up for the summary.
    let mut stopped = Vec::new();
    if !args.keep_running {
        stopped.extend(children.stop(STOP_GRACE, roles::is_processor).await);
    }
    let mut failed = Vec::new();
    if let Ok(outcome) = &result {
        failed = finish::print_summary(finish::Sources {
            args: &args,
            run: &run,
            available: &available,
            children: &children,
            reader: &reader,
            pool: pool.as_ref(),
            outcome,
            notify: &sink,
        })
        .await;
        if args.keep_running {
            roles::print_running(&run, &children);
            crate::signals::shutdown_signal().await;
        }
    }
    stopped.extend(children.stop(STOP_GRACE, roles::is_processor).await);
    stopped.extend(children.stop(STOP_GRACE, |_| true).await);
    report_stops(&stopped);
    if let Some(pool) = pool {
        pool.close().await;
    }
    // Before the topics go: a reader left running would log their deletion.
    reader.stop();
    result?;
    if !failed.is_empty() {
        bail!("invariants failed: {}", failed.join("; "));
    }
    if args.clean_up {
        let n = setup::delete_topics(&run).await?;
        if available.projections {
            database::drop(&run.base_database_url, &run.database).await?;
        }
        println!(
            "demo: deleted the run's {n} topics and dropped database {}",
            run.database
        );
    }
    Ok(())
}

fn report_stops(stopped: &[children::Stopped]) {
    let killed: Vec<_> = stopped
        .iter()
        .filter(|s| s.killed)
        .map(|s| s.name.as_str())
        .collect();
    if !killed.is_empty() {
        println!(
            "demo: killed after {STOP_GRACE:?} without stopping: {}",
            killed.join(", ")
        );
    }
    for s in stopped.iter().filter(|s| !s.killed) {
        if let Some(status) = s.status.filter(|st| !st.success()) {
            println!("demo: {} stopped with {status}", s.name);
        }
    }
}

async fn drive(
    args: &DemoArgs,
    run: &Run,
    available: &roles::Available,
    pool: Option<&sqlx::PgPool>,
    children: &mut Children,
    reader: &reader::Reader,
) -> Result<Outcome> {
    for role in roles::all(run, available, pool)? {
        children.spawn(role)?;
    }
    println!("demo: started {}", children.names().join(", "));
    children.wait_ready(READY_LIMIT).await?;
    println!("demo: every role is ready");

    let start = Instant::now();
    let business_end_ms = args.business_end_ms();
    let mut chaos = (args.kill_rounds > 0 || args.extra_member.is_some()).then(|| {
        let targets: Vec<String> = children
            .names()
            .into_iter()
            .filter(|n| !n.starts_with("sim-"))
            .collect();
        let chaos = chaos::Chaos::plan(
            args.seed,
            &targets,
            args.kill_rounds,
            args.kill_every,
            start,
            args.extra_member.as_deref(),
        );
        println!(
            "demo: chaos: {} SIGKILLs of each of {} over about {} s{}",
            args.kill_rounds,
            targets.join(", "),
            chaos
                .ends()
                .map_or(0, |end| end.saturating_duration_since(start).as_secs()),
            args.extra_member
                .as_deref()
                .map(|k| format!(", a second {k} member for part of it"))
                .unwrap_or_default()
        );
        chaos
    });
    // Every tenant of the control file sends its own workload, with its own token.
    let tenants: Vec<String> = run.control.tenants.keys().cloned().collect();
    let token = run
        .setting("DEMO_LAUNCH_TOKEN")
        .context("DEMO_LAUNCH_TOKEN is not in demo.env")?
        .to_owned();
    let tenant_tokens = tenants
        .iter()
        .filter_map(|t| {
            Some((
                t.clone(),
                run.setting(&setup::launch_token_setting(t))?.to_owned(),
            ))
        })
        .collect();
    let mut plan = callstream_workload::plan(&callstream_workload::PlanSettings {
        contacts: args.contacts,
        campaigns: vec![
            "spring-intake".into(),
            "fall-intake".into(),
            "reengage".into(),
        ],
        tenants: tenants.clone(),
        id_prefix: run.id.clone(),
        seed: args.seed,
    });
    if let Some(given) = &args.lead_zone {
        let zone = zones::resolve(given, callstream_platform::clock::now_utc())?;
        zones::apply(&mut plan, &zone);
        println!("demo: every lead in {zone}");
    }
    // A business span: the CRMs send through it, each office's burst when it opens.
    if let (Some(from), Some(to)) = (args.clock_start_ms, business_end_ms) {
        let homes = run
            .control
            .tenants
            .iter()
            .filter_map(|(t, c)| {
                Some((t.clone(), c.grid.as_ref()?.default_time_zone.parse().ok()?))
            })
            .collect();
        callstream_workload::schedule(
            &mut plan,
            &callstream_workload::Arrivals::day(from, to, homes),
        );
        println!(
            "demo: {} tenants ({}); each CRM sends half its leads when its office opens at 09:00 local, the rest through the day",
            tenants.len(),
            tenants.join(", ")
        );
    }
    let settings = callstream_workload::SendSettings {
        gateway: run.gateway_url.clone(),
        token,
        tenant_tokens,
        burst: args.burst,
        pause: Duration::from_secs(1),
    };
    // Polled by the loop below (its futures borrow the plan, so it is not spawned).
    let workload = callstream_workload::send(&plan, &settings);
    tokio::pin!(workload);
    let mut faults_until = start;
    if let Some(end) = chaos.as_ref().and_then(chaos::Chaos::ends) {
        faults_until = faults_until.max(end);
    }
    if !args.crm_outage_for.is_zero() {
        sims::crm_outage(run, args.crm_outage_after, args.crm_outage_for).await?;
        println!(
            "demo: the CRM will be down for {}s from {}s",
            args.crm_outage_for.as_secs(),
            args.crm_outage_after.as_secs()
        );
        faults_until = faults_until.max(start + args.crm_outage_after + args.crm_outage_for);
    }
    let mut pause = None;
    let pause_windows = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    if !args.pause_for.is_zero() {
        pause = Some(tokio::spawn(sims::pause_campaign(
            run.clone(),
            args.pause_campaign.clone(),
            args.pause_after,
            args.pause_for,
            pause_windows.clone(),
        )));
        faults_until = faults_until.max(start + args.pause_after + args.pause_for);
    }
    // A while after the start: the CRM's records of leads who opted out in a call say they
    // may be called (a new launch request each, with `do_not_call: false`); callstream must
    // not call them again. Polled by the loop (the workload's requests are not `Send`).
    let mut contradictions: Option<
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<usize>>>>,
    > = Some(Box::pin(sims::crm_contradicts_opt_outs(
        run.clone(),
        settings.clone(),
        plan.launches.clone(),
        args.contradict_after,
    )));
    faults_until = faults_until.max(start + args.contradict_after + Duration::from_secs(5));
    let zones: promises::ContactZones = plan
        .launches
        .iter()
        .map(|l| {
            (
                (l.tenant.clone(), l.contact_id.clone()),
                promises::LeadRecord {
                    zone: l.contact.time_zone.clone(),
                    state: l.contact.state.clone(),
                },
            )
        })
        .collect();

    let mut report = None;
    // Jobs due before the horizon hold the run; it is fixed when the
    // workload has been sent.
    let lookahead_ms = i64::try_from(args.lookahead.as_millis()).unwrap_or(i64::MAX);
    let mut horizon_ms: Option<i64> = None;
    let mut last_progress = Instant::now();
    // Roles a supervisor restarted after they stopped on their own (--restart-exited).
    let mut restarted: std::collections::BTreeMap<String, u32> = Default::default();
    let mut restart_due: std::collections::BTreeMap<String, Instant> = Default::default();
    let mut day_over = false;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let shutdown = crate::signals::shutdown_signal();
    tokio::pin!(shutdown);
    let settled = loop {
        tokio::select! {
            _ = &mut shutdown => {
                println!("demo: interrupted; stopping");
                break false;
            }
            sent = &mut workload, if report.is_none() => {
                let sent = sent.context("sending the workload")?;
                println!(
                    "demo: workload sent: {} launch requests, {} accepted, {} failed, {} retries, in {:.1} s",
                    sent.requests, sent.accepted, sent.failed, sent.retries, sent.seconds
                );
                report = Some(sent);
                horizon_ms = Some(
                    business_end_ms.unwrap_or_else(|| now_ms().saturating_add(lookahead_ms)),
                );
            }
            said = async { contradictions.as_mut().map(|f| f.as_mut()).expect("checked").await },
                if contradictions.is_some() => {
                contradictions = None;
                match said {
                    Ok(n) => println!(
                        "demo: the CRM said {n} leads who opted out in a call may be called (launch requests with do_not_call false)"
                    ),
                    Err(e) => println!("demo: the CRM's contradicting requests failed: {e:#}"),
                }
            }
            _ = tick.tick() => {}
        }
        // The end of the business span: a system pause, as at the end of a working day. No
        // call leaves from now on; calls under way finish and the pipeline settles.
        if let Some(end) = business_end_ms.filter(|end| !day_over && now_ms() >= *end) {
            day_over = true;
            let mut closed = run.control.clone();
            closed.system_paused = Some(true);
            setup::apply_control(run, &closed, "demo: the business span is over").await?;
            if let Ok(mut w) = pause_windows.lock() {
                w.push(promises::PauseWindow {
                    campaign: promises::EVERY_CAMPAIGN.into(),
                    from_ms: end.max(now_ms()),
                    to_ms: i64::MAX,
                });
            }
            println!(
                "demo: the business span ended ({}); system paused: no call leaves from now on",
                business_label()
            );
        }
        if let Some(chaos) = chaos.as_mut() {
            let label = format!("+{} s, {}", start.elapsed().as_secs(), business_label());
            chaos.tick(children, &label).await?;
        }
        for (name, status, log) in children.exited() {
            if restart_due.contains_key(&name) {
                continue;
            }
            let restarts = restarted.entry(name.clone()).or_insert(0u32);
            if !args.restart_exited || *restarts >= MAX_RESTARTS {
                bail!("{name} stopped on its own ({status}); the end of its log:\n{log}");
            }
            *restarts += 1;
            // A supervisor's backoff: 1, 2, 4, 8, 16 s.
            let delay = Duration::from_secs(1 << (*restarts - 1).min(4));
            let why = why_it_stopped(&run.log_dir.join(format!("{name}.log")));
            println!(
                "demo: {name} stopped on its own ({status}: {why}); starting it again in {} s (restart {restarts} of at most {MAX_RESTARTS}; log in {})",
                delay.as_secs(),
                run.log_dir.display()
            );
            restart_due.insert(name, Instant::now() + delay);
        }
        let due: Vec<String> = restart_due
            .iter()
            .filter(|(_, at)| **at <= Instant::now())
            .map(|(name, _)| name.clone())
            .collect();
        for name in due {
            restart_due.remove(&name);
            children.kill_and_restart(&name).await?;
        }
        let mut pending = match reader.tally.lock() {
            Ok(t) => settle::Pending::measure(
                &t,
                horizon_ms.unwrap_or_else(|| now_ms().saturating_add(lookahead_ms)),
                available.recovery,
            ),
            Err(_) => bail!("the reader thread panicked"),
        };
        pending.workload_running = report.is_none();
        pending.faults_running = Instant::now() < faults_until
            || contradictions.is_some()
            || chaos.as_ref().is_some_and(chaos::Chaos::active);
        // A run over a business span lasts at least that span; the jobs its closing pause
        // holds stay held.
        pending.workload_running |= business_end_ms.is_some_and(|end| now_ms() < end);
        if day_over {
            pending.held = 0;
        }
        pending.lag = reader.lag();
        pending.idle = reader.idle();
        if last_progress.elapsed() >= args.progress_every {
            last_progress = Instant::now();
            if let Ok(t) = reader.tally.lock() {
                let sent = report.as_ref().map_or(0, |r| r.accepted);
                let mut line = render::progress(start.elapsed().as_secs(), &t, sent, pending.lag);
                if args.clock_rate.is_some() {
                    line.push_str(&format!(" | {}", business_label()));
                }
                // A quiet pipeline that has not settled says what it waits for.
                if pending.idle >= Duration::from_secs(10) {
                    line.push_str(&format!(" | waiting for {}", pending.describe()));
                }
                println!("{line}");
            }
        }
        if pending.settled(QUIET) {
            println!("demo: settled after {} s", start.elapsed().as_secs());
            break true;
        }
        if start.elapsed() >= args.timeout {
            println!(
                "demo: not settled after {:?}; still waiting for {}",
                args.timeout,
                pending.describe()
            );
            break false;
        }
    };
    let workload = report.unwrap_or_default();
    if let Some(handle) = pause {
        // Over by now unless the run was cut short; its window says so.
        handle.abort();
    }
    let pauses = pause_windows.lock().map(|p| p.clone()).unwrap_or_default();
    let stats = match sims::stats(run).await {
        Ok(s) => s,
        Err(e) => {
            println!("demo: could not read the simulators' stats: {e:#}");
            sims::SimStats::default()
        }
    };
    Ok(Outcome {
        workload,
        stats,
        settled,
        elapsed: start.elapsed(),
        pauses,
        zones,
        chaos: chaos::ChaosReport {
            restarted_after_exit: restarted,
            ..chaos.map(chaos::Chaos::finish).unwrap_or_default()
        },
    })
}

/// The first cause of the last error a role's log ends with (`Caused by:` then `0: ...`).
fn why_it_stopped(log: &std::path::Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .iter()
        .rposition(|l| l.trim() == "Caused by:")
        .and_then(|i| lines.get(i + 1))
        .map_or_else(|| "no error in its log".to_owned(), |l| l.trim().to_owned())
}

/// The business time in US Central, for progress and fault lines.
fn business_label() -> String {
    callstream_platform::clock::now_utc()
        .with_timezone(&chrono_tz::America::Chicago)
        .format("%a %H:%M Central")
        .to_string()
}

fn now_ms() -> i64 {
    callstream_platform::clock::now_utc().timestamp_millis()
}

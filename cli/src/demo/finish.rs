//! The end of a run: wait until the topic reader and the views have caught
//! up with the pipeline's last commits, try the operator API, and print the
//! summary (text, then JSON lines) with the API's token and example calls.

use std::time::Duration;

use sqlx::PgPool;

use super::children::Children;
use super::reader::Reader;
use super::roles::Available;
use super::setup::Run;
use super::{api, promises, render, summary, views, DemoArgs, Outcome};

/// How long the views must stand still before a difference counts as real.
const VIEWS_QUIET: Duration = Duration::from_secs(5);
/// The longest the summary waits for the views.
const VIEWS_LIMIT: Duration = Duration::from_secs(60);

/// Everything the summary is made from.
pub struct Sources<'a> {
    pub args: &'a DemoArgs,
    pub run: &'a Run,
    pub available: &'a Available,
    pub children: &'a Children,
    pub reader: &'a Reader,
    pub pool: Option<&'a PgPool>,
    pub outcome: &'a Outcome,
    pub notify: &'a super::notify_sink::NotifySink,
}

/// Builds and prints the summary; returns the invariants that failed (or
/// that no summary could be made).
pub async fn print_summary(src: Sources<'_>) -> Vec<&'static str> {
    let Sources {
        args,
        run,
        available,
        children,
        reader,
        pool,
        outcome,
        notify,
    } = src;
    // The roles may have committed a last transaction while stopping.
    if !reader
        .drain(Duration::from_secs(1), Duration::from_secs(20))
        .await
    {
        println!("demo: the reader did not catch up with every partition; counts may be short");
    }
    let bucket_ms = run
        .setting("CALLSTREAM_DETECTOR_BUCKET_MS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(600_000);
    let mut roles = available.names();
    if roles.is_empty() {
        roles = children.names();
    }
    let info = summary::RunInfo {
        run_id: run.id.clone(),
        topic_prefix: run.prefix.clone(),
        database: run.database.clone(),
        contacts: args.contacts,
        seconds: outcome.elapsed.as_secs_f64(),
        settled: outcome.settled,
        roles,
        roles_missing: available.missing(),
        log_dir: run.log_dir.display().to_string(),
    };
    // The tally is final now (drained); taken out so no lock is held while
    // the views are awaited.
    let tally = match reader.tally.lock() {
        Ok(mut t) => std::mem::take(&mut *t),
        Err(_) => {
            println!("demo: the reader thread panicked; no summary");
            return vec!["a summary was made"];
        }
    };
    let views = match pool {
        Some(pool) if available.projections => {
            views::settle(pool, &run.database, &tally, VIEWS_QUIET, VIEWS_LIMIT).await
        }
        _ => views::Views {
            database: run.database.clone(),
            ..views::Views::default()
        },
    };
    let api = match pool {
        Some(pool) if available.operator_api => {
            Some(api::examples(pool, &run.api_url, &run.first_tenant()).await)
        }
        _ => None,
    };
    let promises = promises::check(
        &outcome.stats.calls,
        &run.control,
        &outcome.pauses,
        &outcome.zones,
        &tally,
    );
    let summary = summary::build(
        &tally,
        &outcome.stats,
        summary::Context {
            run: info,
            workload: &outcome.workload,
            control: &run.control,
            bucket_ms,
            recovery: available.recovery,
            views,
            api,
            promises,
            notifications: notify.summary(&tally.notifications_sent),
        },
    );
    print!("{}", render::text(&summary));
    println!();
    for line in render::json_lines(&summary) {
        println!("{line}");
    }
    if let Some(api) = &summary.api {
        print!("{}", api::text(api, args.keep_running));
    }
    println!("{}", latency_line(&tally.completion_to_plan_ms()));
    let mut failed = summary.invariants.failed();
    if !outcome.chaos.kills.is_empty()
        || outcome.chaos.extra_member.is_some()
        || !outcome.chaos.restarted_after_exit.is_empty()
    {
        println!("{}", chaos_line(&outcome.chaos));
        if !outcome.chaos.never_ready.is_empty() {
            println!(
                "[FAIL] every killed role serves again: not ready at the end: {}",
                outcome.chaos.never_ready.join(", ")
            );
            failed.push("every_killed_role_serves_again");
        }
    }
    failed
}

/// `{"summary":"latency",...}`: from a completion webhook's arrival at the gateway to the
/// next job it planned, in real ms (business time divided by the clock's rate).
fn latency_line(business_ms: &[i64]) -> String {
    let rate = callstream_platform::clock::process_clock().rate();
    let real = |q: f64| {
        let i = ((business_ms.len() as f64 - 1.0) * q).round() as usize;
        business_ms
            .get(i)
            .map(|ms| (*ms as f64 / rate * 10.0).round() / 10.0)
    };
    serde_json::json!({
        "summary": "latency",
        "completion_to_next_plan_real_ms": {
            "count": business_ms.len(),
            "p50": real(0.5),
            "p99": real(0.99),
            "max": real(1.0),
        },
        "clock_rate": rate,
    })
    .to_string()
}

/// `{"summary":"chaos",...}`: kills per role and how long each took to be ready again.
fn chaos_line(report: &super::chaos::ChaosReport) -> String {
    let ready: serde_json::Map<String, serde_json::Value> = report
        .ready_again_ms
        .iter()
        .map(|(role, times)| {
            let mut sorted = times.clone();
            sorted.sort_unstable();
            let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
            let max = sorted.last().copied().unwrap_or(0);
            (
                role.clone(),
                serde_json::json!({"restarts": times.len(), "median_ms": median, "max_ms": max}),
            )
        })
        .collect();
    serde_json::json!({
        "summary": "chaos",
        "kills": report.kills,
        "ready_again": ready,
        "never_ready": report.never_ready,
        "extra_member": report.extra_member,
        "restarted_after_exit": report.restarted_after_exit,
    })
    .to_string()
}

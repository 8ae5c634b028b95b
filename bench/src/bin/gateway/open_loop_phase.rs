//! The `open-loop` phase (issue 23, item 3): the gateway's latency at fixed
//! arrival rates, with coordinated omission corrected (`open_loop`), and the
//! highest rate it sustains within the p99 budget.
//!
//! A fresh gateway on fresh topics (so the closed-loop levels' records are
//! not in its loss check) takes `--open-loop-rates` (5,000, 10,000 and
//! 15,000 webhooks/s) in turn, each after `--warmup-seconds` at its rate and
//! measured over `--open-loop-seconds`. A rate *passes* with no errors and
//! p99 within `--p99-budget-ms`. Then a search over rates, at most
//! `--open-loop-search-steps` more levels: above the highest passing rate,
//! step up by `--open-loop-step` until one fails, then bisect between the
//! highest pass and the lowest failure above it, down to
//! `--open-loop-resolution` (`next_rate`). Last, the gateway stops (flushing
//! its producer) and `verify`'s `read_committed` reader matches the topic
//! against every 202 of every level: `open_loop_lost_at_<rate>` per level,
//! and the run fails if any is above 0. `open_loop_max_rate_p99_<budget>ms`
//! is the highest measured rate that passed with 0 lost (0 if none did).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use callstream_bench::report::{percentile, Report};
use callstream_platform::KafkaSettings;
use tracing::{info, warn};

use crate::open_loop::{self, Level, Plan};
use crate::server::Gateway;
use crate::{load_against, setup, verify, Args};

/// Runs the phase; topics it creates go to `made`.
pub fn run(
    args: &Args,
    settings: &KafkaSettings,
    report: &mut Report,
    made: &mut Vec<String>,
) -> Result<()> {
    let setup = setup(args);
    let gateway = Gateway::start(settings, setup, None, made)?;
    info!(url = %gateway.base_url, topic = %gateway.call_events, "gateway started (open loop)");
    let (load_runtime, target) = load_against(args, &gateway, &setup)?;
    let next = Arc::new(AtomicU64::new(0));
    let budget_ms = args.p99_budget_ms;

    let measure = |rate: u64, report: &mut Report| -> Result<Level> {
        let plan = Plan {
            rate,
            warmup: Duration::from_secs(args.warmup_seconds),
            measure: Duration::from_secs(args.open_loop_seconds),
            connections: args.open_loop_connections,
            max_in_flight: args.open_loop_max_in_flight,
        };
        info!(rate, "open-loop level");
        let level = load_runtime.block_on(open_loop::level(&target, &next, plan))?;
        gateway.check()?;
        emit_level(report, &level)?;
        Ok(level)
    };
    let mut levels: Vec<Level> = Vec::new();
    let mut passed: BTreeMap<u64, bool> = BTreeMap::new();
    let mut fixed = args.open_loop_rates.iter().copied();
    let mut search_steps = args.open_loop_search_steps;
    loop {
        // The fixed rates first, then the search's.
        let rate = match fixed.next() {
            Some(rate) => rate,
            None if search_steps > 0 => {
                search_steps -= 1;
                match next_rate(&passed, args.open_loop_step, args.open_loop_resolution) {
                    Some(rate) => rate,
                    None => break,
                }
            }
            None => break,
        };
        let level = measure(rate, report)?;
        passed.insert(rate, passes(&level, budget_ms));
        levels.push(level);
    }
    drop(load_runtime);
    let call_events = gateway.call_events.clone();
    gateway.stop()?;

    let mut acknowledged: HashSet<u128> = HashSet::new();
    let answered: usize = levels.iter().map(|l| l.accepted_ids.len()).sum();
    acknowledged.extend(levels.iter().flat_map(|l| l.accepted_ids.iter().copied()));
    if acknowledged.len() != answered {
        bail!("the gateway answered the same event id for two distinct calls");
    }
    let loss = verify::check(
        settings,
        &call_events,
        args.partitions,
        &acknowledged,
        Duration::from_secs(args.readback_timeout_s),
        None,
    )?;
    let mut best: Option<u64> = None;
    for level in &levels {
        let lost = level
            .accepted_ids
            .iter()
            .filter(|id| loss.missing.contains(id))
            .count();
        report.emit(
            &format!("open_loop_lost_at_{}", level.rate),
            lost as f64,
            "events",
        )?;
        if lost == 0 && passes(level, budget_ms) {
            best = best.max(Some(level.rate));
        }
    }
    report.emit("open_loop_lost", loss.lost as f64, "events")?;
    report.emit(
        "open_loop_accepted_total",
        acknowledged.len() as f64,
        "events",
    )?;
    if best.is_none() {
        warn!(
            budget_ms,
            "no open-loop rate kept p99 within budget without errors"
        );
    }
    report.emit(
        &format!("open_loop_max_rate_p99_{}ms", budget_label(budget_ms)),
        best.unwrap_or(0) as f64,
        "events/s",
    )?;
    loss.ensure_complete()?;
    Ok(())
}

/// No errors, and p99 (from intended send times) within budget.
fn passes(level: &Level, budget_ms: f64) -> bool {
    level.errors == 0 && percentile(&level.latencies_ms, 99.0).is_some_and(|p99| p99 <= budget_ms)
}

fn emit_level(report: &mut Report, level: &Level) -> Result<()> {
    let r = level.rate;
    report.emit(
        &format!("open_loop_accepted_per_s_at_{r}"),
        level.accepted_per_s(),
        "events/s",
    )?;
    for (name, q) in [("p50", 50.0), ("p99", 99.0), ("p999", 99.9)] {
        if let Some(ms) = percentile(&level.latencies_ms, q) {
            report.emit(&format!("open_loop_{name}_ms_at_{r}"), ms, "ms")?;
        }
    }
    report.emit(
        &format!("open_loop_errors_at_{r}"),
        level.errors as f64,
        "requests",
    )?;
    report.emit(
        &format!("open_loop_connections_at_{r}"),
        level.connections as f64,
        "connections",
    )?;
    report.emit(
        &format!("open_loop_pacer_lag_max_ms_at_{r}"),
        level.pacer_lag_max_ms,
        "ms",
    )?;
    if !level.failures.is_empty() {
        warn!(rate = r, failures = ?level.failures, "open-loop requests not answered 202");
    }
    Ok(())
}

/// `25` for 25 ms, `12_5` for 12.5 ms: the budget as it reads in a metric name.
fn budget_label(budget_ms: f64) -> String {
    if budget_ms.fract() == 0.0 {
        format!("{budget_ms:.0}")
    } else {
        budget_ms.to_string().replace('.', "_")
    }
}

/// The next rate to measure, given which rates passed (`true`) and failed
/// so far: with `lo` the highest pass (0 if none) and `hi` the lowest
/// failure above it, `lo + step` while there is no `hi`, else the multiple
/// of `resolution` nearest the middle of the two, until they are within
/// `resolution` of each other (`None`: the boundary is found). Never a rate
/// already measured: none lies strictly between `lo` and `hi`.
pub fn next_rate(passed: &BTreeMap<u64, bool>, step: u64, resolution: u64) -> Option<u64> {
    let resolution = resolution.max(1);
    let lo = passed
        .iter()
        .filter(|(_, ok)| **ok)
        .map(|(rate, _)| *rate)
        .max()
        .unwrap_or(0);
    let hi = passed
        .iter()
        .filter(|(rate, ok)| !**ok && **rate > lo)
        .map(|(rate, _)| *rate)
        .min();
    let Some(hi) = hi else {
        return Some(lo + step.max(1));
    };
    if hi - lo <= resolution {
        return None;
    }
    // An open interval longer than `resolution` holds one of its multiples.
    let nearest = ((lo + hi) / 2 + resolution / 2) / resolution * resolution;
    Some(if nearest <= lo {
        nearest + resolution
    } else if nearest >= hi {
        nearest - resolution
    } else {
        nearest
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Levels measured (rate, passed) and the next rate to try.
    type Case<'a> = (&'a [(u64, bool)], Option<u64>);

    #[test]
    fn the_search_steps_up_then_bisects() {
        let cases: &[Case] = &[
            // Nothing measured: the first step.
            (&[], Some(5_000)),
            // All passed: step above the highest.
            (
                &[(5_000, true), (10_000, true), (15_000, true)],
                Some(20_000),
            ),
            // A failure above the highest pass: its middle.
            (
                &[
                    (5_000, true),
                    (10_000, true),
                    (15_000, true),
                    (20_000, false),
                ],
                Some(17_500),
            ),
            (&[(15_000, true), (17_500, false)], Some(16_500)),
            (&[(16_000, true), (16_500, false)], None),
            // The first level failed: down from it.
            (&[(5_000, false), (10_000, false)], Some(2_500)),
            // A failure below a pass (noise) does not bound the search.
            (&[(10_000, false), (15_000, true)], Some(20_000)),
            (&[(5_000, true), (5_400, false)], None),
        ];
        for (measured, expected) in cases {
            let passed: BTreeMap<u64, bool> = measured.iter().copied().collect();
            assert_eq!(
                next_rate(&passed, 5_000, 500),
                *expected,
                "after {measured:?}"
            );
        }
    }

    /// Whatever the results, the search ends within the resolution and
    /// never repeats a rate.
    #[test]
    fn the_search_converges_on_any_boundary() {
        for boundary in [700, 4_999, 12_345, 15_000, 31_000] {
            let mut passed = BTreeMap::new();
            let mut steps = 0;
            while let Some(rate) = next_rate(&passed, 5_000, 500) {
                assert!(!passed.contains_key(&rate), "{rate} again");
                passed.insert(rate, rate <= boundary);
                steps += 1;
                assert!(steps < 30, "no end for boundary {boundary}");
            }
            let best = passed.iter().filter(|(_, ok)| **ok).map(|(r, _)| *r).max();
            assert!(boundary - best.unwrap_or(0) <= 500, "{boundary}: {best:?}");
        }
    }

    #[test]
    fn budget_labels() {
        assert_eq!(budget_label(25.0), "25");
        assert_eq!(budget_label(12.5), "12_5");
    }
}

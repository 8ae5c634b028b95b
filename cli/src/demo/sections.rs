//! The summary's sections counted on the topics (the tally) and on the
//! simulators' own counters: intake, jobs, calls, completions, CRM and
//! exceptions. `summary` puts them together with the views and the checks
//! by launch id, and decides the invariants.

use std::collections::BTreeMap;

use callstream_schemas::{JobState, LaunchStatus};
use serde::Serialize;

use super::sims::{count, counts};
use super::tally::Tally;

#[derive(Debug, Serialize)]
pub struct Exceptions {
    pub opened_by_type: BTreeMap<String, u64>,
    /// Exceptions whose latest status is still open.
    pub open_at_end: usize,
    /// Records a processor could not process (on `dead-letters`).
    pub dead_letters: u64,
    /// Records on the run's topics that are not callstream events.
    pub undecodable: u64,
}

#[derive(Debug, Serialize)]
pub struct Intake {
    pub requests: usize,
    pub accepted: usize,
    pub failed: usize,
    pub retries: usize,
    /// Distinct launch requests on `contact-commands`.
    pub on_topic: usize,
    /// Refused by the contact processor (barred leads), by reason.
    pub refused: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize)]
pub struct Jobs {
    pub planned: usize,
    pub planned_by_origin: BTreeMap<String, u64>,
    pub held: usize,
    pub held_by_reason: BTreeMap<String, u64>,
    pub cancelled: usize,
    pub cancelled_by_reason: BTreeMap<String, u64>,
    /// Jobs replaced at launch time by one in a later window (`window_move`).
    pub moved: usize,
    /// Jobs the scheduler placed in a later window than the time asked for,
    /// because that time was outside the lead's calling window.
    pub placed_in_later_window: usize,
    pub refused_by_reason: BTreeMap<String, u64>,
    /// Jobs still waiting for their slot when the run ended, by the lead's zone.
    pub waiting_after_run: usize,
    pub waiting_by_zone: Vec<ZoneWait>,
    pub final_states: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize)]
pub struct ZoneWait {
    pub zone: String,
    pub jobs: usize,
    /// The first of those slots (RFC 3339, UTC).
    pub next_slot: String,
}

#[derive(Debug, Serialize)]
pub struct Calls {
    /// Calls the voice simulator created.
    pub placed: u64,
    pub outcomes: BTreeMap<String, u64>,
    /// Completions the simulator never reported (the faults).
    pub completions_dropped: u64,
    /// Of those, calls the platform lost altogether.
    pub calls_lost: u64,
    pub launch_ids_called: usize,
    pub max_calls_per_launch: u64,
    pub creates_failed: u64,
    pub creates_answered_late: u64,
    pub max_creates_in_one_second: u64,
}

#[derive(Debug, Serialize)]
pub struct Completions {
    pub launch_commands: usize,
    pub launches_by_status: BTreeMap<String, u64>,
    pub reconciled: usize,
    pub delivered: usize,
    pub missing: usize,
    pub recovered: usize,
    pub advanced: usize,
    pub late: usize,
    pub unresolved: usize,
    pub still_open: usize,
    pub delivery_by_bucket: Vec<Bucket>,
    pub alerts_raised: usize,
    /// Launch to recovered, in business time (simulated on a scaled clock).
    pub recovery_ms_median: Option<i64>,
    pub recovery_ms_p90: Option<i64>,
    /// The same in business minutes, as a scaled run reads them.
    pub recovery_minutes_median: Option<f64>,
    pub recovery_minutes_p90: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct Bucket {
    pub start: String,
    pub launches: usize,
    pub delivered: usize,
    pub rate: f64,
}

#[derive(Debug, Serialize)]
pub struct Crm {
    pub commands: usize,
    pub by_action: BTreeMap<String, u64>,
    pub results: BTreeMap<String, u64>,
    pub retries: u64,
    pub applied: u64,
    pub suppressed: u64,
    pub failed: u64,
    pub writes_by_kind: BTreeMap<String, u64>,
    /// Objects the CRM holds twice for one operation (tasks, notes, calls created again).
    pub duplicates: u64,
    /// Operations that reached the CRM more than once in any form (a
    /// contact update sent again after a timeout is harmless: it sets the
    /// same values; a create sent again would be a duplicate above).
    pub ops_written_twice: u64,
    pub throttled: u64,
    pub max_requests_in_window: u64,
    pub rate_limit: u64,
}

pub fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    *map.entry(key.to_owned()).or_default() += 1;
}

pub fn tally_of<'a>(items: impl Iterator<Item = &'a str>) -> BTreeMap<String, u64> {
    let mut map = BTreeMap::new();
    for item in items {
        bump(&mut map, item);
    }
    map
}

/// The value at quantile `q` of sorted `values` (nearest rank).
pub fn quantile(values: &[i64], q: f64) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    let rank = (q * values.len() as f64).ceil() as usize;
    Some(values[rank.clamp(1, values.len()) - 1])
}

pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

pub fn jobs(t: &Tally) -> Jobs {
    let cancelled: BTreeMap<String, u64> = {
        let mut map = BTreeMap::new();
        for (id, (state, reason)) in &t.job_states {
            if *state == JobState::Cancelled {
                bump(&mut map, reason);
            } else if let Some(reason) = t.cancel_requests.get(id) {
                bump(&mut map, reason);
            }
        }
        for (id, reason) in &t.cancel_requests {
            if !t.job_states.contains_key(id) {
                bump(&mut map, reason);
            }
        }
        map
    };
    let mut by_zone: BTreeMap<String, (usize, i64)> = BTreeMap::new();
    for (_, a) in t.live_allocations() {
        let zone = a.time_zone.clone().unwrap_or_else(|| "unknown".into());
        let entry = by_zone.entry(zone).or_insert((0, i64::MAX));
        entry.0 += 1;
        entry.1 = entry.1.min(a.slot_at_ms);
    }
    let mut waiting_by_zone: Vec<ZoneWait> = by_zone
        .into_iter()
        .map(|(zone, (jobs, next))| ZoneWait {
            zone,
            jobs,
            next_slot: rfc3339(next),
        })
        .collect();
    waiting_by_zone.sort_by(|a, b| b.jobs.cmp(&a.jobs).then(a.zone.cmp(&b.zone)));
    Jobs {
        planned: t.plans.len(),
        planned_by_origin: tally_of(t.plans.values().map(|(o, _)| o.as_str())),
        held: t.held.len(),
        held_by_reason: tally_of(t.held.values().map(String::as_str)),
        cancelled: cancelled.values().sum::<u64>() as usize,
        cancelled_by_reason: cancelled,
        moved: t
            .plans
            .values()
            .filter(|(origin, _)| origin == "window_move")
            .count(),
        placed_in_later_window: t
            .allocations
            .values()
            .filter(|a| a.reason == "moved_out_of_window")
            .count(),
        refused_by_reason: tally_of(t.refused.values().map(String::as_str)),
        waiting_after_run: t.live_allocations().count(),
        waiting_by_zone,
        final_states: tally_of(t.job_states.values().map(|(s, _)| s.as_str())),
    }
}

pub fn exceptions(t: &Tally) -> Exceptions {
    Exceptions {
        opened_by_type: tally_of(t.exceptions.values().map(|(kind, _)| kind.as_str())),
        open_at_end: t
            .exceptions
            .values()
            .filter(|(_, status)| *status == callstream_schemas::ExceptionStatus::Open)
            .count(),
        dead_letters: t.dead_letters,
        undecodable: t.undecodable,
    }
}

pub fn intake(t: &Tally, workload: &callstream_workload::SendReport) -> Intake {
    Intake {
        requests: workload.requests,
        accepted: workload.accepted,
        failed: workload.failed,
        retries: workload.retries,
        on_topic: t.launch_requests.len(),
        refused: t.requests_refused.clone(),
    }
}

pub fn calls(voice: &serde_json::Value) -> Calls {
    let per_launch = counts(voice, "calls_by_launch");
    Calls {
        placed: count(voice, "calls_created"),
        outcomes: counts(voice, "outcomes").into_iter().collect(),
        completions_dropped: count(voice, "callbacks_dropped"),
        calls_lost: count(voice, "calls_lost"),
        launch_ids_called: per_launch.len(),
        max_calls_per_launch: per_launch.iter().map(|(_, n)| *n).max().unwrap_or(0),
        creates_failed: count(voice, "creates_failed"),
        creates_answered_late: count(voice, "creates_delayed"),
        max_creates_in_one_second: count(voice, "max_creates_in_burst_window"),
    }
}

pub fn completions(t: &Tally, bucket_ms: i64) -> Completions {
    let mut resolutions = BTreeMap::new();
    for (resolution, _) in t.resolved.values() {
        bump(&mut resolutions, resolution);
    }
    let resolved = |name: &str| resolutions.get(name).copied().unwrap_or(0) as usize;
    let mut recovery_ms: Vec<i64> = t
        .resolved
        .iter()
        .filter(|(_, (r, _))| r == "recovered")
        .filter_map(|(id, (_, at))| {
            let accepted = t.launches.get(id)?.accepted_at_ms?;
            Some(at - accepted)
        })
        .collect();
    recovery_ms.sort_unstable();
    let mut buckets: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    for (id, l) in &t.launches {
        if let Some(at) = l.accepted_at_ms {
            let b = buckets
                .entry(at.div_euclid(bucket_ms.max(1)) * bucket_ms)
                .or_default();
            b.0 += 1;
            if t.delivered.contains_key(id) {
                b.1 += 1;
            }
        }
    }
    let unresolved = t
        .missing
        .keys()
        .filter(|id| !t.resolved.contains_key(*id))
        .count();
    Completions {
        launch_commands: t.launch_commands.len(),
        launches_by_status: tally_of(t.launches.values().map(|l| l.status.as_str())),
        reconciled: t.launches.values().filter(|l| l.reconciled).count(),
        delivered: t
            .delivered
            .keys()
            .filter(|id| {
                t.launches
                    .get(*id)
                    .is_some_and(|l| l.status == LaunchStatus::Accepted)
            })
            .count(),
        missing: t.missing.len(),
        recovered: resolved("recovered"),
        advanced: resolved("advanced_no_answer") + resolved("advanced_voicemail"),
        late: resolved("late_completion"),
        unresolved,
        still_open: t.open_launches(true).saturating_sub(unresolved),
        delivery_by_bucket: buckets
            .into_iter()
            .map(|(start, (launches, delivered))| Bucket {
                start: rfc3339(start),
                launches,
                delivered,
                rate: if launches == 0 {
                    1.0
                } else {
                    delivered as f64 / launches as f64
                },
            })
            .collect(),
        alerts_raised: t.alerts.len(),
        recovery_ms_median: quantile(&recovery_ms, 0.5),
        recovery_ms_p90: quantile(&recovery_ms, 0.9),
        recovery_minutes_median: quantile(&recovery_ms, 0.5).map(minutes),
        recovery_minutes_p90: quantile(&recovery_ms, 0.9).map(minutes),
    }
}

/// Milliseconds as minutes, to a tenth.
fn minutes(ms: i64) -> f64 {
    (ms as f64 / 6_000.0).round() / 10.0
}

pub fn crm(t: &Tally, sim: &serde_json::Value) -> Crm {
    let results = tally_of(t.crm_results.values().map(|(_, s, _)| s.as_str()));
    let status = |name: &str| results.get(name).copied().unwrap_or(0);
    let mut writes_by_kind = BTreeMap::new();
    if let Some(types) = sim.get("writes").and_then(serde_json::Value::as_object) {
        for (kind, w) in types {
            for verb in ["created", "updated"] {
                let n = count(w, verb);
                if n > 0 {
                    writes_by_kind.insert(format!("{kind} {verb}"), n);
                }
            }
        }
    }
    Crm {
        commands: t.crm_commands.len(),
        by_action: tally_of(t.crm_commands.values().map(String::as_str)),
        retries: t
            .crm_results
            .values()
            .map(|(_, _, attempts)| u64::try_from(*attempts - 1).unwrap_or(0))
            .sum(),
        applied: status("applied") + status("already_applied") + status("skipped_stale"),
        suppressed: status("suppressed"),
        failed: status("failed"),
        results,
        writes_by_kind,
        duplicates: count(sim, "duplicate_creates_total"),
        ops_written_twice: sim
            .get("duplicate_op_ids")
            .and_then(serde_json::Value::as_array)
            .map_or(0, |a| a.len() as u64),
        throttled: count(sim, "throttled"),
        max_requests_in_window: count(sim, "max_requests_in_window"),
        rate_limit: sim.get("rate_limit").map_or(0, |r| count(r, "max")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let values = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
        let cases = [
            (0.5, Some(50)),
            (0.9, Some(90)),
            (0.0, Some(10)),
            (1.0, Some(100)),
        ];
        for (q, expected) in cases {
            assert_eq!(quantile(&values, q), expected, "q={q}");
        }
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[7], 0.9), Some(7));
    }
}

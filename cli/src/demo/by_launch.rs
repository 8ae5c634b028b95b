//! Checks by launch id, against the outside world's own records: every call
//! the voice platform dropped the completion of (its `/_sim/calls` list
//! names the launch id, whether the completion was dropped, and whether the
//! call was lost altogether) must have been recovered, or advanced when the
//! platform lost it; and the CRM must hold at most one call record and one
//! task per contact and launch, however often a completion was replayed.
//!
//! Counting by launch id, not by totals, is the point: "as many closed as
//! dropped" can hide a dropped completion left open behind one closed
//! twice, and "no op id written twice" cannot see a replay that came back
//! under a new operation id.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::tally::Tally;

/// One call of the voice simulator's `/_sim/calls`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimCall {
    pub sid: String,
    pub launch_id: Option<Uuid>,
    pub contact_id: Option<String>,
    pub completion_dropped: bool,
    pub lost: bool,
    /// The event ids the gateway named in its 2xx answers to this call's webhooks.
    pub accepted_event_ids: Vec<String>,
}

/// The calls of a `/_sim/calls` answer (entries it cannot read are skipped).
pub fn sim_calls(body: &Value) -> Vec<SimCall> {
    let text = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).map(str::to_owned);
    let flag = |c: &Value, k: &str| c.get(k).and_then(Value::as_bool).unwrap_or(false);
    body.get("calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| {
                    Some(SimCall {
                        sid: text(c, "sid")?,
                        launch_id: text(c, "launch_id").and_then(|l| l.parse().ok()),
                        contact_id: text(c, "contact_id"),
                        completion_dropped: flag(c, "completion_dropped"),
                        lost: flag(c, "lost"),
                        accepted_event_ids: c
                            .get("accepted_event_ids")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(|id| id.as_str().map(str::to_owned))
                            .collect(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What happened to the completions the platform dropped.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Dropped {
    /// Calls (with a launch id) whose completion the platform never sent.
    pub completions_dropped: usize,
    /// Of those, calls the platform lost altogether.
    pub calls_lost: usize,
    /// Dropped, found at the platform, and replayed through the pipeline.
    pub recovered: usize,
    /// Lost, and advanced as no-answer (or voicemail).
    pub advanced: usize,
    /// Dropped launches not closed the way they should be, with what
    /// happened to them (the first ten).
    pub not_closed: usize,
    pub examples: Vec<String>,
}

/// Checks each dropped completion by its launch id; with `recovery` off
/// (a binary without it), being reported missing is all that can happen.
pub fn dropped(calls: &[SimCall], t: &Tally, recovery: bool) -> Dropped {
    let mut d = Dropped::default();
    for call in calls.iter().filter(|c| c.completion_dropped) {
        let Some(launch) = call.launch_id else {
            continue;
        };
        d.completions_dropped += 1;
        d.calls_lost += usize::from(call.lost);
        let resolution = t.resolved.get(&launch).map(|(r, _)| r.as_str());
        let ok = match (recovery, call.lost, resolution) {
            (false, _, _) => t.missing.contains_key(&launch),
            (true, false, Some("recovered")) => {
                d.recovered += 1;
                true
            }
            (true, true, Some(r)) if r.starts_with("advanced") => {
                d.advanced += 1;
                true
            }
            _ => false,
        };
        if !ok {
            d.not_closed += 1;
            if d.examples.len() < 10 {
                d.examples.push(format!(
                    "launch {launch} (call {}, {}): {}, {}",
                    call.sid,
                    if call.lost { "lost" } else { "not lost" },
                    if t.missing.contains_key(&launch) {
                        "reported missing"
                    } else {
                        "never reported missing"
                    },
                    resolution.map_or("not resolved".into(), |r| format!("resolved {r}")),
                ));
            }
        }
    }
    d
}

/// CRM engagements per contact and launch.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct CrmPerLaunch {
    /// (contact, launch) pairs with at least one call record.
    pub launches_with_call_record: usize,
    pub launches_with_task: usize,
    pub max_call_records: u64,
    pub max_tasks: u64,
    /// Pairs holding more than one call record or task (the first ten).
    pub over_one: usize,
    pub examples: Vec<String>,
}

/// Counts the CRM's objects (its own writes per `callstream_op_id`, from
/// `/_sim/stats`) per contact and launch, the launch found from the call id
/// through the platform's calls (else the dispatcher's reports).
pub fn crm_per_launch(crm_stats: &Value, calls: &[SimCall], t: &Tally) -> CrmPerLaunch {
    let written: HashMap<&str, u64> = crm_stats
        .get("op_ids")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(op, n)| (op.as_str(), n.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    let by_sid: HashMap<&str, Uuid> = calls
        .iter()
        .filter_map(|c| Some((c.sid.as_str(), c.launch_id?)))
        .collect();
    // (contact, launch or call) -> (call records, tasks)
    let mut per: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for (op, action) in &t.crm_commands {
        let is_call = action == "log_call";
        if !is_call && action != "create_task" {
            continue;
        }
        let Some((contact, call)) = t.crm_targets.get(op) else {
            continue;
        };
        let n = written.get(op.to_string().as_str()).copied().unwrap_or(0);
        if n == 0 {
            continue;
        }
        let call = call.as_deref().unwrap_or("none");
        let launch = by_sid
            .get(call)
            .or_else(|| t.call_ids.get(call))
            .map_or_else(|| format!("call {call}"), |l| format!("launch {l}"));
        let entry = per.entry((contact.clone(), launch)).or_default();
        if is_call {
            entry.0 += n;
        } else {
            entry.1 += n;
        }
    }
    let mut c = CrmPerLaunch::default();
    for ((contact, launch), (calls, tasks)) in &per {
        c.launches_with_call_record += usize::from(*calls > 0);
        c.launches_with_task += usize::from(*tasks > 0);
        c.max_call_records = c.max_call_records.max(*calls);
        c.max_tasks = c.max_tasks.max(*tasks);
        if *calls > 1 || *tasks > 1 {
            c.over_one += 1;
            if c.examples.len() < 10 {
                c.examples.push(format!(
                    "contact {contact}, {launch}: {calls} call records, {tasks} tasks"
                ));
            }
        }
    }
    c
}

#[cfg(test)]
#[path = "by_launch_tests.rs"]
mod tests;

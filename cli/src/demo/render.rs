//! The summary for people (aligned text) and for tools (one JSON line a
//! section, each `{"summary": "<section>", ...}`), and the progress line.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::summary::Summary;
use super::tally::Tally;
use super::views::Views;

fn list(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    let mut items: Vec<_> = map.iter().collect();
    items.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    items
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A business-time span: seconds, or minutes from two minutes up (a scaled run's recoveries
/// take simulated minutes).
fn ms(value: Option<i64>) -> String {
    match value {
        None => "-".into(),
        Some(v) if v >= 120_000 => format!("{:.1} min", v as f64 / 60_000.0),
        Some(v) => format!("{:.1} s", v as f64 / 1000.0),
    }
}

/// `n`, and what the topics said when they disagree on `figure`.
fn checked(views: &Views, figure: &str, n: u64) -> String {
    match views.disagreements.iter().find(|c| c.figure == figure) {
        Some(c) => format!("{n} (topics: {})", c.topics),
        None => n.to_string(),
    }
}

/// One line of progress from the tally.
pub fn progress(elapsed_s: u64, t: &Tally, requests_sent: usize, unread: i64) -> String {
    let crm_pending = t.crm_commands.len().saturating_sub(t.crm_results.len());
    let unread = if unread > 0 && unread < i64::MAX {
        format!(" | {unread} records unread")
    } else {
        String::new()
    };
    format!(
        "[{elapsed_s:>4}s] requests {requests_sent} | jobs {} planned, {} waiting | calls {} launched, {} completed | missing {}, closed {} | CRM {} done, {crm_pending} pending{unread}",
        t.plans.len(),
        t.live_allocations().count(),
        t.accepted(),
        t.delivered.len() + t.recovered_events.len(),
        t.missing.len(),
        t.resolved.len(),
        t.crm_results.len(),
    )
}

/// The summary as text.
pub fn text(s: &Summary) -> String {
    let mut o = String::new();
    let r = &s.run;
    let _ = writeln!(o, "\n=== callstream demo {}: summary ===", r.run_id);
    let _ = writeln!(
        o,
        "run        {} contacts, {:.0} s, {}; topics {}*; database {}; logs {}",
        r.contacts,
        r.seconds,
        if r.settled {
            "settled"
        } else {
            "NOT settled (timed out)"
        },
        r.topic_prefix,
        r.database,
        r.log_dir
    );
    let _ = writeln!(o, "roles      {}", r.roles.join(", "));
    if !r.roles_missing.is_empty() {
        let _ = writeln!(
            o,
            "not run    {} (not in this binary yet)",
            r.roles_missing.join(", ")
        );
    }
    let i = &s.intake;
    let _ = writeln!(
        o,
        "\nintake     {} launch requests, {} accepted (202), {} failed, {} retried; {} on contact-commands",
        i.requests, i.accepted, i.failed, i.retries, i.on_topic
    );
    let _ = writeln!(
        o,
        "           refused at entry (barred leads): {}",
        list(&i.refused)
    );
    let j = &s.jobs;
    let v = &s.views;
    let _ = writeln!(
        o,
        "\njobs       {} planned: {}",
        checked(v, "jobs", v.figures.jobs_by_state.values().sum()),
        list(&j.planned_by_origin)
    );
    let _ = writeln!(
        o,
        "           by state (views): {}",
        list(&v.figures.jobs_by_state)
    );
    let _ = writeln!(o, "           held {}: {}", j.held, list(&j.held_by_reason));
    let _ = writeln!(
        o,
        "           cancelled {}: {}",
        j.cancelled,
        list(&j.cancelled_by_reason)
    );
    let _ = writeln!(
        o,
        "           moved at launch time to a later window: {}; placed past their asked time because it was outside the lead's window: {}",
        j.moved, j.placed_in_later_window
    );
    if !j.refused_by_reason.is_empty() {
        let _ = writeln!(
            o,
            "           refused by the grid: {}",
            list(&j.refused_by_reason)
        );
    }
    let _ = writeln!(o, "           final states: {}", list(&j.final_states));
    let _ = writeln!(
        o,
        "           still waiting for their slot when the run ended: {} (calling windows are the leads' local hours; federal 08:00-21:00 cannot be configured away)",
        j.waiting_after_run
    );
    for z in j.waiting_by_zone.iter().take(8) {
        let _ = writeln!(
            o,
            "             {:<22} {:>5} jobs, next slot {}",
            z.zone, z.jobs, z.next_slot
        );
    }
    for g in &s.slots {
        let _ = writeln!(
            o,
            "\nslots      tenant {}: {} s slots, {} a slot, cap {} in any 5 min",
            g.tenant, g.slot_seconds, g.launches_per_slot, g.cap_per_5_min
        );
        let _ = writeln!(
            o,
            "           {} jobs on {} slots, at most {} in a slot; busiest 5 min: {} allocated (from {}), {} launched  [{}]",
            g.jobs_on_grid,
            g.slots_used,
            g.max_in_a_slot,
            g.max_in_5_min,
            g.busiest_window_start.as_deref().unwrap_or("-"),
            g.max_launched_in_5_min,
            if g.cap_held() { "within the cap" } else { "OVER THE CAP" }
        );
    }
    let c = &s.calls;
    let _ = writeln!(
        o,
        "\ncalls      {} placed at the voice platform for {} launch ids (at most {} per launch id); outcomes: {}",
        c.placed, c.launch_ids_called, c.max_calls_per_launch, list(&c.outcomes)
    );
    let _ = writeln!(
        o,
        "           completions the platform dropped: {} (of which calls it lost: {}); creates failed {}, answered late {}; most creates in one second {}",
        c.completions_dropped, c.calls_lost, c.creates_failed, c.creates_answered_late, c.max_creates_in_one_second
    );
    let m = &s.completions;
    let _ = writeln!(
        o,
        "\nlaunches   {} commands; {} (reconciled {})",
        m.launch_commands,
        list(&m.launches_by_status),
        m.reconciled
    );
    let _ = writeln!(
        o,
        "           accepted launches (views): {} with a completion, {} without",
        checked(
            v,
            "accepted launches with a completion",
            v.figures.with_completion
        ),
        checked(
            v,
            "accepted launches without a completion",
            v.figures.without_completion
        ),
    );
    let _ = writeln!(
        o,
        "           completions delivered {}, missing {}, recovered {}, advanced {}, late {}, unresolved {}, still open {}",
        m.delivered, m.missing, m.recovered, m.advanced, m.late, m.unresolved, m.still_open
    );
    let _ = writeln!(
        o,
        "           recovery time (launch to recovered, business time): median {}, p90 {}; delivery alerts {}",
        ms(m.recovery_ms_median),
        ms(m.recovery_ms_p90),
        m.alerts_raised
    );
    let hhmm = |start: &str| start.get(11..16).unwrap_or(start).to_owned();
    let rate = |d: u64, n: u64| {
        if n == 0 {
            100.0
        } else {
            d as f64 * 100.0 / n as f64
        }
    };
    let buckets: Vec<String> = if v.read {
        v.figures
            .delivery
            .iter()
            .map(|b| {
                format!(
                    "{} {}/{} ({:.0}%; recovered {}, missing {})",
                    hhmm(&b.start),
                    checked(v, &format!("bucket {} delivered", b.start), b.delivered),
                    checked(v, &format!("bucket {} accepted", b.start), b.accepted),
                    rate(b.delivered, b.accepted),
                    b.recovered,
                    b.missing
                )
            })
            .collect()
    } else {
        m.delivery_by_bucket
            .iter()
            .map(|b| {
                format!(
                    "{} {}/{} ({:.0}%)",
                    hhmm(&b.start),
                    b.delivered,
                    b.launches,
                    b.rate * 100.0
                )
            })
            .collect()
    };
    let _ = writeln!(
        o,
        "           delivered by the platform per {} bucket: {}",
        if v.read {
            "10-minute (views)"
        } else {
            "detector (topics)"
        },
        buckets.join(", ")
    );
    let d = &s.by_launch.dropped;
    let _ = writeln!(
        o,
        "           by launch id: {} completions dropped ({} calls lost): {} recovered, {} advanced, {} not closed",
        d.completions_dropped, d.calls_lost, d.recovered, d.advanced, d.not_closed
    );
    for e in &d.examples {
        let _ = writeln!(o, "             NOT CLOSED {e}");
    }
    let k = &s.crm;
    let _ = writeln!(
        o,
        "\ncrm        {} commands: {}; results: {}",
        k.commands,
        list(&k.by_action),
        list(&k.results)
    );
    let _ = writeln!(
        o,
        "           retries {}, suppressed {}, failed {}; 429s {}, most requests in a window {} (limit {})",
        k.retries, k.suppressed, k.failed, k.throttled, k.max_requests_in_window, k.rate_limit
    );
    let _ = writeln!(
        o,
        "           writes in the CRM: {}; duplicates {}; ops that reached it twice (idempotent updates) {}",
        list(&k.writes_by_kind),
        k.duplicates,
        k.ops_written_twice
    );
    let p = &s.by_launch.crm;
    let _ = writeln!(
        o,
        "           per contact and launch: at most {} call record(s) and {} task(s) ({} launches with a call record, {} with a task)",
        p.max_call_records, p.max_tasks, p.launches_with_call_record, p.launches_with_task
    );
    for e in &p.examples {
        let _ = writeln!(o, "             TWICE {e}");
    }
    let x = &s.exceptions;
    let _ = writeln!(
        o,
        "\nexceptions {}; open at the end {} (views: {}); dead letters {}",
        list(&x.opened_by_type),
        x.open_at_end,
        checked(
            v,
            "exceptions open",
            v.figures
                .exceptions_by_status
                .get("open")
                .copied()
                .unwrap_or(0)
        ),
        x.dead_letters
    );
    let n = &s.notifications;
    let _ = writeln!(
        o,
        "\nnotified  {} messages ({} notifications) at the local sink {}: {}; by kind {}; \
         {} recorded sent by the notifier, {} of them lost, {} repeated under their id, {} unsigned",
        n.messages,
        n.notifications,
        n.sink,
        list(&n.by_channel),
        list(&n.by_kind),
        n.sent_by_notifier,
        n.lost,
        n.repeated_ids,
        n.unsigned_webhooks
    );
    v.write_text(&mut o);
    let p = &s.promises;
    let _ = writeln!(
        o,
        "\npromises to the people called (from the voice simulator's records)"
    );
    write_checks(
        &mut o,
        &[
            ("no call to an opted-out lead", &p.no_call_to_opted_out_lead),
            ("no call while paused", &p.no_call_while_paused),
            ("pace cap by send time", &p.cap_held_by_send_time),
            ("no call outside the window", &p.no_call_outside_window),
            (
                "no call against state rules",
                &p.no_call_against_state_rules,
            ),
            ("no contact stuck", &p.no_contact_stuck),
        ],
    );
    let r = &s.records;
    let _ = writeln!(o, "\nrecords kept (the simulator's answers and the topics)");
    write_checks(
        &mut o,
        &[
            ("webhooks 202 on call-events", &r.webhooks_on_call_events),
            ("failures with an exception", &r.failures_have_exceptions),
        ],
    );
    let _ = writeln!(o, "\ninvariants");
    for (name, ok) in s.invariants.all() {
        let _ = writeln!(o, "  [{}] {name}", if ok { "ok" } else { "FAIL" });
    }
    o
}

fn line<T: Serialize>(section: &str, value: &T) -> String {
    let head = serde_json::json!({ "summary": section }).to_string();
    let body = match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(fields)) if fields.is_empty() => return head,
        Ok(v @ serde_json::Value::Object(_)) => v.to_string(),
        Ok(other) => serde_json::json!({ "value": other }).to_string(),
        Err(e) => serde_json::json!({ "error": e.to_string() }).to_string(),
    };
    // The section name first, so `grep '"summary":"calls"'` finds a line.
    format!("{},{}", head.trim_end_matches('}'), &body[1..])
}

/// The summary as JSON lines, one a section.
pub fn json_lines(s: &Summary) -> Vec<String> {
    vec![
        line("run", &s.run),
        line("intake", &s.intake),
        line("jobs", &s.jobs),
        line("slots", &serde_json::json!({ "tenants": s.slots })),
        line("calls", &s.calls),
        line("completions", &s.completions),
        line("by_launch", &s.by_launch),
        line("crm", &s.crm),
        line("exceptions", &s.exceptions),
        line("views", &s.views),
        line("api", &serde_json::json!({ "api": s.api })),
        line("promises", &s.promises),
        line("records", &s.records),
        line("notifications", &s.notifications),
        line("invariants", &s.invariants),
    ]
}

fn write_checks(o: &mut String, checks: &[(&str, &super::promises::Check)]) {
    for (name, check) in checks {
        let _ = writeln!(
            o,
            "  {name:<30} {} checked, {} broken",
            check.checked, check.broken
        );
        for example in &check.examples {
            let _ = writeln!(o, "    e.g. {example}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_name_their_section_first() {
        let l = line("calls", &serde_json::json!({"placed": 3}));
        assert_eq!(l, r#"{"summary":"calls","placed":3}"#);
        let l = line("x", &5);
        assert_eq!(l, r#"{"summary":"x","value":5}"#);
    }

    #[test]
    fn lists_put_the_largest_first() {
        let map: BTreeMap<String, u64> = [("a".into(), 1), ("b".into(), 3), ("c".into(), 3)].into();
        assert_eq!(list(&map), "b 3, c 3, a 1");
        assert_eq!(list(&BTreeMap::new()), "none");
    }
}

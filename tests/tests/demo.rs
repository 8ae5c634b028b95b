//! The main job, small: `callstream demo` against the real stack, every role
//! a real process (the projections and the operator API included), with
//! the voice platform dropping 5% of completions (plus more in bursts) and
//! every launch request sent in one burst. Checked on the JSON summary it
//! prints:
//! - every launch request was accepted (202 only once Kafka had it), and
//!   launches went out: the leads are put where it is mid-afternoon now
//!   (`--lead-zone auto`) and the campaigns' windows are open all day, so
//!   federal quiet hours cannot leave the run without calls;
//! - at least one completion was dropped (required, not hoped for), and by
//!   launch id every dropped completion was recovered, or advanced when the
//!   platform lost the call; nothing is left open; recovery time (median,
//!   p90) is reported;
//! - one call per launch id at the voice platform, and at most one call
//!   record and one task per contact and launch in the CRM, through
//!   replays, timeouts and an outage;
//! - no slot over capacity and no 5-minute window over the cap;
//! - the views the projections built agree with the topics, and the
//!   operator API answers the example calls the demo prints;
//! - every invariant of the summary holds, none skipped.
//!
//! The binary is the workspace's `target/debug/callstream` (`cargo xtask
//! test` builds it first); when it is missing the test builds it.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;

/// The demo's settings without retries or campaign advances (one call a
/// lead), windows open all day (federal hours still bound them, and
/// `--lead-zone auto` puts the leads mid-afternoon), six launches a second
/// so the launches come in bursts the platform drops more of.
const CONTROL: &str = r#"
[tenants.acme]
[tenants.acme.grid]
slot_seconds = 1
launches_per_slot = 6
default_time_zone = "America/Chicago"
[tenants.acme.completion]
window_minutes = 1
grace_minutes = 0
[tenants.acme.notifications]
digest_seconds = 5
[[tenants.acme.notifications.routes]]
kinds = ["*"]
channel = "acme-hook"
[tenants.acme.campaigns.spring-intake]
windows = [{ days = "every_day", start = "00:00", end = "24:00" }]
retry_delays_minutes = [1]
max_attempts = 1
[tenants.acme.campaigns.fall-intake]
windows = [{ days = "every_day", start = "00:00", end = "24:00" }]
retry_delays_minutes = [1]
max_attempts = 1
[tenants.acme.campaigns.reengage]
windows = [{ days = "every_day", start = "00:00", end = "24:00" }]
retry_delays_minutes = [1]
max_attempts = 1
"#;

/// Enough contacts that a 5% drop share (plus the burst drops) leaves at
/// least one completion dropped: the simulator's draws are seeded per
/// call, so with this many calls the run has several.
const CONTACTS: u64 = 120;

/// The JSON summary lines, by section.
fn sections(stdout: &str) -> std::collections::BTreeMap<String, Value> {
    stdout
        .lines()
        .filter(|l| l.starts_with("{\"summary\":"))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| Some((v.get("summary")?.as_str()?.to_owned(), v)))
        .collect()
}

fn num(v: &Value, path: &[&str]) -> u64 {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no number at {path:?} in {v}"))
}

fn opt_num(v: &Value, path: &[&str]) -> Option<u64> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_u64)
}

#[test]
fn a_small_demo_recovers_every_dropped_completion_and_keeps_every_invariant() -> Result<()> {
    let bin = callstream_e2e::callstream_bin()?;
    let dir = std::env::temp_dir().join(format!("callstream-demo-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let control = dir.join("control.toml");
    std::fs::write(&control, CONTROL)?;
    let contacts = CONTACTS.to_string();
    let started = Instant::now();
    let output = Command::new(&bin)
        .args(["demo", "--contacts", &contacts, "--burst", &contacts])
        .args([
            "--timeout",
            "150s",
            "--lead-zone",
            "auto",
            "--pause-for",
            "0s",
        ])
        .args(["--crm-outage-after", "3s", "--crm-outage-for", "5s"])
        .arg("--control")
        .arg(&control)
        .arg("--log-dir")
        .arg(dir.join("logs"))
        .arg("--clean-up")
        .env("RUST_LOG", "warn")
        // Overrides demo/demo.env: 5% of completions dropped (plus bursts).
        .env("SIM_VOICE_COMPLETION_DROP_SHARE", "0.05")
        // No calls failing at the provider: their retries would launch a
        // minute later and add a completion window to the run's length.
        .env("SIM_VOICE_WEIGHT_FAILED", "0")
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .context("running callstream demo")?;
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    eprintln!("the demo took {elapsed:?}");
    assert!(
        output.status.success(),
        "callstream demo failed: {}",
        output.status
    );
    assert!(
        elapsed < Duration::from_secs(300),
        "the small demo took {elapsed:?}"
    );

    let s = sections(&stdout);
    for section in [
        "run",
        "intake",
        "jobs",
        "slots",
        "calls",
        "completions",
        "by_launch",
        "crm",
        "views",
        "api",
        "notifications",
        "invariants",
    ] {
        assert!(s.contains_key(section), "no {section} line in the summary");
    }
    let run = &s["run"];
    assert_eq!(
        run["settled"],
        Value::Bool(true),
        "the pipeline did not settle"
    );
    assert_eq!(
        run["roles_missing"].as_array().map(Vec::len),
        Some(0),
        "every role of the design runs: {}",
        run["roles_missing"]
    );

    let intake = &s["intake"];
    assert_eq!(num(intake, &["requests"]), CONTACTS);
    assert_eq!(
        num(intake, &["accepted"]),
        CONTACTS,
        "every launch request is accepted"
    );
    assert_eq!(
        num(intake, &["on_topic"]),
        CONTACTS,
        "and reached contact-commands"
    );

    let completions = &s["completions"];
    let launches = num(completions, &["launch_commands"]);
    assert!(launches > 0, "no launch went out: {completions}");
    assert!(
        opt_num(completions, &["launches_by_status", "accepted"]).unwrap_or(0) > 0,
        "no launch was accepted: {completions}"
    );

    let calls = &s["calls"];
    assert!(
        num(calls, &["max_calls_per_launch"]) <= 1,
        "a launch id was called twice"
    );
    assert_eq!(
        num(calls, &["placed"]),
        num(calls, &["launch_ids_called"]),
        "every call the platform made belongs to a launch id of its own"
    );
    assert_eq!(
        num(&s["crm"], &["duplicates"]),
        0,
        "the CRM holds an object twice"
    );

    let tenants = s["slots"]["tenants"]
        .as_array()
        .context("slots per tenant")?;
    for t in tenants {
        let cap = num(t, &["cap_per_5_min"]);
        assert!(num(t, &["max_in_5_min"]) <= cap, "grid over the cap: {t}");
        assert!(
            num(t, &["max_launched_in_5_min"]) <= cap,
            "launches over the cap: {t}"
        );
        assert!(
            num(t, &["max_in_a_slot"]) <= num(t, &["launches_per_slot"]),
            "{t}"
        );
    }

    // Dropped completions, by launch id: at least one, and each closed the
    // way its call allows.
    let dropped = &s["by_launch"]["dropped"];
    let n_dropped = num(dropped, &["completions_dropped"]);
    assert!(
        n_dropped >= 1,
        "no completion was dropped in {launches} launches: {dropped}"
    );
    assert_eq!(
        num(dropped, &["not_closed"]),
        0,
        "dropped completions left open: {dropped}"
    );
    assert_eq!(
        num(dropped, &["recovered"]) + num(dropped, &["advanced"]),
        n_dropped,
        "every dropped completion recovered, or advanced when the call was lost: {dropped}"
    );
    assert_eq!(
        num(dropped, &["advanced"]),
        num(dropped, &["calls_lost"]),
        "exactly the lost calls advanced: {dropped}"
    );
    assert_eq!(
        num(completions, &["unresolved"]),
        0,
        "missing completions unresolved"
    );
    assert_eq!(
        num(completions, &["still_open"]),
        0,
        "launches left without a completion"
    );
    if num(dropped, &["recovered"]) > 0 {
        for q in ["recovery_ms_median", "recovery_ms_p90"] {
            assert!(
                opt_num(completions, &[q]).is_some(),
                "{q} missing although completions were recovered: {completions}"
            );
        }
    }

    // No second call record or task per contact and launch, replays included.
    let per = &s["by_launch"]["crm"];
    assert!(
        num(per, &["launches_with_call_record"]) > 0,
        "no call logged in the CRM: {per}"
    );
    assert!(
        num(per, &["max_call_records"]) <= 1,
        "a second call record: {per}"
    );
    assert!(num(per, &["max_tasks"]) <= 1, "a second task: {per}");

    let views = &s["views"];
    assert_eq!(
        views["read"],
        Value::Bool(true),
        "the views were not read: {views}"
    );
    assert_eq!(
        views["disagreements"].as_array().map(Vec::len),
        Some(0),
        "the views disagree with the topics: {views}"
    );
    let examples = s["api"]["api"]["examples"]
        .as_array()
        .context("API examples")?;
    assert!(examples.len() >= 3, "too few API examples: {examples:?}");
    for e in examples {
        assert_eq!(
            num(e, &["status"]),
            200,
            "the operator API refused an example: {e}"
        );
    }

    for (name, ok) in s["invariants"].as_object().context("invariants")? {
        if name != "summary" {
            assert_eq!(ok, &Value::Bool(true), "invariant {name} failed");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

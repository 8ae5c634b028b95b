//! Printing the control table: one line per setting, grouped by tenant,
//! with the value in force and who set it when; or JSON, one object per
//! key with the whole latest `ControlChange`.

use std::fmt::Write as _;

use callstream_schemas::{
    CallingWindow, CampaignSettings, ControlChange, ControlSetting, ControlValue,
};

use crate::diff::is_unset;
use callstream_kit::control::view::ControlSnapshot;

/// The table as text, for people.
pub fn render_text(snapshot: &ControlSnapshot, tenant: Option<&str>) -> String {
    let mut out = String::new();
    let mut current_tenant: Option<String> = None;
    for (key, change) in snapshot.changes() {
        if tenant.is_some_and(|t| t != key.tenant) {
            continue;
        }
        if current_tenant.as_deref() != Some(key.tenant.as_str()) {
            let title = if key.tenant == callstream_kit::control::keys::ALL_TENANTS {
                "every tenant (*)".to_owned()
            } else {
                format!("tenant {}", key.tenant)
            };
            let _ = writeln!(out, "{title}");
            current_tenant = Some(key.tenant.clone());
        }
        let name = match &key.campaign {
            Some(campaign) => format!("{} {campaign}", key.setting),
            None => key.setting.to_string(),
        };
        match change {
            Ok(change) => {
                let _ = writeln!(
                    out,
                    "  {name:<34} {}\n  {:<34} set {} by {} {}{}",
                    describe(change.setting, &change.new_value),
                    "",
                    change.occurred_at.format("%Y-%m-%d %H:%M:%S UTC"),
                    change.actor.kind,
                    change.actor.id,
                    change
                        .reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default(),
                );
            }
            Err(error) => {
                let _ = writeln!(out, "  {name:<34} unreadable: {error}");
            }
        }
    }
    if out.is_empty() {
        out.push_str("the control table is empty: every setting has its default\n");
    }
    out
}

/// The table as JSON: `[{"key", "change"} | {"key", "error"}]`, in key order.
pub fn render_json(snapshot: &ControlSnapshot, tenant: Option<&str>) -> serde_json::Value {
    let rows = snapshot
        .changes()
        .into_iter()
        .filter(|(key, _)| tenant.is_none_or(|t| t == key.tenant))
        .map(|(key, change)| match change {
            Ok(change) => serde_json::json!({
                "key": key.record_key(),
                "value": describe(change.setting, &change.new_value),
                "change": change_json(&change),
            }),
            Err(error) => serde_json::json!({
                "key": key.record_key(),
                "error": error.to_string(),
            }),
        })
        .collect();
    serde_json::Value::Array(rows)
}

fn change_json(change: &ControlChange) -> serde_json::Value {
    serde_json::to_value(change).unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
}

/// A value in words.
pub fn describe(setting: ControlSetting, value: &ControlValue) -> String {
    if is_unset(value) {
        return "(default)".to_owned();
    }
    let on_off = |on: &str, off: &str| match value.enabled {
        Some(true) => on.to_owned(),
        Some(false) => off.to_owned(),
        None => "(default)".to_owned(),
    };
    match setting {
        ControlSetting::SystemPause | ControlSetting::CampaignPause => on_off("PAUSED", "running"),
        ControlSetting::ShadowMode => on_off("on", "off"),
        ControlSetting::CrmWrites => on_off("allowed", "off"),
        ControlSetting::GridSettings => match &value.grid {
            Some(g) => format!(
                "{} s slots, {} launch(es) a slot, default zone {}",
                g.slot_seconds, g.launches_per_slot, g.default_time_zone
            ),
            None => "(default)".to_owned(),
        },
        ControlSetting::CompletionWindow => match &value.completion {
            Some(c) => format!(
                "W {} min + {} min grace",
                c.window_ms / 60_000,
                c.grace_ms / 60_000
            ),
            None => "(default)".to_owned(),
        },
        ControlSetting::CampaignSettings => match &value.campaign {
            Some(c) => describe_campaign(c),
            None => "(default)".to_owned(),
        },
        ControlSetting::NotificationRoutes => match &value.notifications {
            Some(n) => describe_notifications(n),
            None => "(default)".to_owned(),
        },
        ControlSetting::CallingRules => match &value.calling_rules {
            Some(r) => describe_calling_rules(r),
            None => "(statutory rules only)".to_owned(),
        },
        ControlSetting::Unknown => "(a setting this version does not know)".to_owned(),
    }
}

fn describe_calling_rules(r: &callstream_schemas::CallingRules) -> String {
    let mut parts: Vec<String> = r
        .rules
        .iter()
        .map(|rule| format!("{} ({} {})", rule.id, rule.kind, rule.params))
        .collect();
    parts.extend(
        r.overrides
            .iter()
            .map(|o| format!("override {}: {}", o.rule, o.reason)),
    );
    parts.push(format!("caps count per {}", r.cap_subject));
    if let Some(state) = &r.default_state {
        parts.push(format!("default state {state}"));
    }
    parts.join("; ")
}

fn describe_notifications(n: &callstream_schemas::NotificationRoutes) -> String {
    let routes: Vec<String> = n
        .routes
        .iter()
        .map(|r| {
            let urgent = if r.urgent { " (urgent)" } else { "" };
            format!("{} -> {}{urgent}", r.kinds.join(","), r.channel)
        })
        .collect();
    let quiet = match &n.quiet_hours {
        Some(q) => format!("; quiet {}-{} {}", q.start, q.end, q.time_zone),
        None => String::new(),
    };
    format!(
        "{}; digest {} s{quiet}",
        if routes.is_empty() {
            "no routes".to_owned()
        } else {
            routes.join("; ")
        },
        n.digest_seconds
    )
}

fn describe_campaign(c: &CampaignSettings) -> String {
    let windows: Vec<String> = c.windows.iter().map(describe_window).collect();
    let delays: Vec<String> = c
        .retry_delays_minutes
        .iter()
        .map(ToString::to_string)
        .collect();
    format!(
        "windows {}; retries after {} min; max {} attempts; next {}; move buffer {} min",
        windows.join(", "),
        delays.join("/"),
        c.max_attempts,
        c.next_campaign_id.as_deref().unwrap_or("(finish)"),
        c.move_buffer_minutes
    )
}

fn describe_window(w: &CallingWindow) -> String {
    const NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    let days: Vec<&str> = w
        .days_of_week
        .iter()
        .filter_map(|d| {
            usize::try_from(d - 1)
                .ok()
                .and_then(|i| NAMES.get(i))
                .copied()
        })
        .collect();
    let hhmm = |m: i32| format!("{:02}:{:02}", m / 60, m % 60);
    format!(
        "{} {}-{}",
        days.join(","),
        hhmm(w.start_minute),
        hhmm(w.end_minute)
    )
}

//! From the file as read to settings the processors can use, collecting
//! every problem with its path instead of stopping at the first.

use std::collections::{BTreeMap, BTreeSet};

use callstream_domain::calling_window::parse_time;
use callstream_domain::timezone::parse_zone;
use callstream_schemas::{
    CallingRules, CallingWindow, CampaignSettings, CompletionSettings, GridSettings,
    NotificationRoute, NotificationRoutes, QuietHours, RuleOverride, TenantCallingRule,
};
use chrono::Timelike;

use super::raw::{
    RawCallingRules, RawCampaignSettings, RawCompletion, RawFile, RawGrid, RawNotifications,
    RawTenant, RawWindow,
};
use super::{CampaignFile, ControlFile, Problem, TenantFile};
use callstream_kit::control::keys::ALL_TENANTS;
use callstream_kit::control::settings::{
    CampaignConfig, CompletionWindow, NotificationPolicy, TenantGrid,
};

/// Upper bounds that catch unit mistakes (seconds typed as minutes) early.
const MAX_SLOT_SECONDS: i64 = 3600;
const MAX_LAUNCHES_PER_SLOT: i64 = 1000;
const MAX_DELAY_MINUTES: i64 = 366 * 24 * 60;
const MAX_ATTEMPTS: i64 = 100;
const MAX_BUFFER_MINUTES: i64 = 24 * 60;
const MAX_COMPLETION_MINUTES: i64 = 24 * 60;

#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem {
            path: path.into(),
            message: message.into(),
        });
    }

    /// `value` if it lies in `min..=max`, else a problem and `None`.
    fn bounded(&mut self, path: &str, value: i64, min: i64, max: i64) -> Option<i32> {
        if (min..=max).contains(&value) {
            i32::try_from(value).ok()
        } else {
            self.add(
                path,
                format!("must be between {min} and {max}, not {value}"),
            );
            None
        }
    }
}

pub(super) fn validate(raw: RawFile) -> Result<ControlFile, Vec<Problem>> {
    let mut problems = Problems::default();
    let mut file = ControlFile {
        system_paused: raw.system.map(|s| s.paused),
        tenants: BTreeMap::new(),
    };
    for (tenant_id, tenant) in &raw.tenants {
        let path = format!("tenants.{tenant_id}");
        if tenant_id == ALL_TENANTS {
            problems.add(&path, "`*` is reserved: use [system] for every tenant");
            continue;
        }
        check_id(&mut problems, &path, tenant_id, "tenant id");
        if let Some(t) = tenant_file(&mut problems, &path, tenant) {
            file.tenants.insert(tenant_id.clone(), t);
        }
    }
    if problems.0.is_empty() {
        Ok(file)
    } else {
        Err(problems.0)
    }
}

/// Ids become parts of record keys (`tenant/setting/campaign`).
fn check_id(problems: &mut Problems, path: &str, id: &str, what: &str) {
    if id.is_empty() {
        problems.add(path, format!("{what} must not be empty"));
    } else if let Some(c) = id
        .chars()
        .find(|c| *c == '/' || c.is_whitespace() || c.is_control())
    {
        problems.add(path, format!("{what} {id:?} must not contain {c:?}"));
    } else if id.len() > 128 {
        problems.add(path, format!("{what} must be at most 128 bytes"));
    }
}

fn tenant_file(problems: &mut Problems, path: &str, raw: &RawTenant) -> Option<TenantFile> {
    let before = problems.0.len();
    let grid = raw
        .grid
        .as_ref()
        .and_then(|g| grid(problems, &format!("{path}.grid"), g));
    let tenant_completion = raw
        .completion
        .as_ref()
        .and_then(|c| completion(problems, &format!("{path}.completion"), c));
    let names: BTreeSet<&str> = raw.campaigns.keys().map(String::as_str).collect();
    let campaign_defaults = raw.campaign_defaults.as_ref().and_then(|c| {
        campaign_settings(
            problems,
            &format!("{path}.campaign_defaults"),
            None,
            &names,
            c,
        )
    });
    let mut campaigns = BTreeMap::new();
    for (id, c) in &raw.campaigns {
        let c_path = format!("{path}.campaigns.{id}");
        check_id(problems, &c_path, id, "campaign id");
        let settings = campaign_settings(problems, &c_path, Some(id), &names, &c.settings());
        let completion = c
            .completion
            .as_ref()
            .and_then(|w| completion(problems, &format!("{c_path}.completion"), w));
        let c_rules = c
            .calling_rules
            .as_ref()
            .and_then(|r| calling_rules(problems, &format!("{c_path}.calling_rules"), r));
        if let Some(settings) = settings {
            campaigns.insert(
                id.clone(),
                CampaignFile {
                    paused: c.paused,
                    settings,
                    completion,
                    calling_rules: c_rules,
                },
            );
        }
    }
    let notifications = raw
        .notifications
        .as_ref()
        .and_then(|n| notifications(problems, &format!("{path}.notifications"), n));
    let calling_rules = raw
        .calling_rules
        .as_ref()
        .and_then(|r| calling_rules(problems, &format!("{path}.calling_rules"), r));
    (problems.0.len() == before).then_some(TenantFile {
        paused: raw.paused,
        shadow_mode: raw.shadow_mode,
        crm_writes: raw.crm_writes,
        grid,
        completion: tenant_completion,
        campaign_defaults,
        campaigns,
        notifications,
        calling_rules,
    })
}

/// The tenant's calling rules, checked as the processors will read them (against the
/// statutory table: an override must name a rule that exists, and give a reason).
fn calling_rules(
    problems: &mut Problems,
    path: &str,
    raw: &RawCallingRules,
) -> Option<CallingRules> {
    let wire = CallingRules {
        rules: raw
            .rules
            .iter()
            .map(|r| TenantCallingRule {
                id: r.id.clone(),
                kind: r.kind.clone(),
                params: r.params.clone(),
                states: r.states.clone(),
            })
            .collect(),
        overrides: raw
            .overrides
            .iter()
            .map(|o| RuleOverride {
                rule: o.rule.clone(),
                reason: o.reason.clone(),
            })
            .collect(),
        cap_subject: raw.cap_subject.clone(),
        default_state: raw.default_state.clone(),
    };
    match callstream_kit::calling_rules::TenantCallingRules::from_wire(&wire) {
        Ok(_) => Some(wire),
        Err(error) => {
            problems.add(path, error.to_string());
            None
        }
    }
}

/// The routes as the notifier will read them; channel names are checked by the notifier,
/// which declares the channels (and which tenants may use each).
fn notifications(
    problems: &mut Problems,
    path: &str,
    raw: &RawNotifications,
) -> Option<NotificationRoutes> {
    let before = problems.0.len();
    for (i, route) in raw.routes.iter().enumerate() {
        check_id(
            problems,
            &format!("{path}.routes[{i}].channel"),
            &route.channel,
            "channel",
        );
    }
    let digest_seconds = problems.bounded(
        &format!("{path}.digest_seconds"),
        raw.digest_seconds,
        0,
        callstream_kit::control::settings::MAX_DIGEST_SECONDS.into(),
    );
    if problems.0.len() != before {
        return None;
    }
    let wire = NotificationRoutes {
        routes: raw
            .routes
            .iter()
            .map(|r| NotificationRoute {
                kinds: r.kinds.clone(),
                channel: r.channel.clone(),
                urgent: r.urgent,
            })
            .collect(),
        quiet_hours: raw.quiet_hours.as_ref().map(|q| QuietHours {
            time_zone: q.time_zone.clone(),
            start: q.start.clone(),
            end: q.end.clone(),
        }),
        digest_seconds: digest_seconds?,
    };
    // The same conversion the notifier applies: what passes here, it can use.
    match NotificationPolicy::from_wire(&wire) {
        Ok(_) => Some(wire),
        Err(error) => {
            problems.add(path, error.to_string());
            None
        }
    }
}

fn grid(problems: &mut Problems, path: &str, raw: &RawGrid) -> Option<GridSettings> {
    let slot_seconds = problems.bounded(
        &format!("{path}.slot_seconds"),
        raw.slot_seconds,
        1,
        MAX_SLOT_SECONDS,
    );
    let launches = problems.bounded(
        &format!("{path}.launches_per_slot"),
        raw.launches_per_slot,
        1,
        MAX_LAUNCHES_PER_SLOT,
    );
    let zone = match parse_zone(&raw.default_time_zone) {
        Ok(tz) => Some(tz.name().to_owned()),
        Err(error) => {
            problems.add(format!("{path}.default_time_zone"), error.to_string());
            None
        }
    };
    let wire = GridSettings {
        slot_seconds: slot_seconds?,
        launches_per_slot: launches?,
        default_time_zone: zone?,
    };
    // The view's own conversion must accept what we publish.
    match TenantGrid::from_wire(&wire) {
        Ok(_) => Some(wire),
        Err(error) => {
            problems.add(path, error.to_string());
            None
        }
    }
}

fn completion(
    problems: &mut Problems,
    path: &str,
    raw: &RawCompletion,
) -> Option<CompletionSettings> {
    let window = problems.bounded(
        &format!("{path}.window_minutes"),
        raw.window_minutes,
        1,
        MAX_COMPLETION_MINUTES,
    );
    let grace = problems.bounded(
        &format!("{path}.grace_minutes"),
        raw.grace_minutes,
        0,
        MAX_COMPLETION_MINUTES,
    );
    let wire = CompletionSettings {
        window_ms: i64::from(window?) * 60_000,
        grace_ms: i64::from(grace?) * 60_000,
    };
    CompletionWindow::from_wire(&wire).ok().map(|_| wire)
}

fn campaign_settings(
    problems: &mut Problems,
    path: &str,
    campaign: Option<&str>,
    campaigns: &BTreeSet<&str>,
    raw: &RawCampaignSettings,
) -> Option<CampaignSettings> {
    let before = problems.0.len();
    let builtin = CampaignConfig::builtin().to_wire();
    let windows = match &raw.windows {
        None => builtin.windows,
        Some(list) if list.is_empty() => {
            problems.add(format!("{path}.windows"), "needs at least one window");
            Vec::new()
        }
        Some(list) => list
            .iter()
            .enumerate()
            .filter_map(|(i, w)| window(problems, &format!("{path}.windows[{i}]"), w))
            .collect(),
    };
    let delays = match &raw.retry_delays_minutes {
        None => builtin.retry_delays_minutes,
        Some(list) if list.is_empty() => {
            problems.add(
                format!("{path}.retry_delays_minutes"),
                "needs at least one delay",
            );
            Vec::new()
        }
        Some(list) => list
            .iter()
            .enumerate()
            .filter_map(|(i, &d)| {
                problems.bounded(
                    &format!("{path}.retry_delays_minutes[{i}]"),
                    d,
                    1,
                    MAX_DELAY_MINUTES,
                )
            })
            .collect(),
    };
    let max_attempts = match raw.max_attempts {
        None => Some(builtin.max_attempts),
        Some(n) => problems.bounded(&format!("{path}.max_attempts"), n, 1, MAX_ATTEMPTS),
    };
    let buffer = match raw.move_buffer_minutes {
        None => Some(builtin.move_buffer_minutes),
        Some(n) => problems.bounded(
            &format!("{path}.move_buffer_minutes"),
            n,
            0,
            MAX_BUFFER_MINUTES,
        ),
    };
    if let Some(next) = raw.next_campaign.as_deref() {
        let next_path = format!("{path}.next_campaign");
        if Some(next) == campaign {
            problems.add(&next_path, "a campaign cannot advance to itself");
        } else if !campaigns.contains(next) {
            problems.add(
                &next_path,
                format!("{next:?} is not a campaign of this tenant (add [..campaigns.{next}])"),
            );
        }
    }
    if problems.0.len() > before {
        return None;
    }
    let wire = CampaignSettings {
        windows,
        retry_delays_minutes: delays,
        max_attempts: max_attempts?,
        next_campaign_id: raw.next_campaign.clone(),
        move_buffer_minutes: buffer?,
    };
    // The view's own conversion (and the domain's policy check) must accept it.
    match CampaignConfig::from_wire(campaign.unwrap_or(""), &wire) {
        Ok(_) => Some(wire),
        Err(error) => {
            problems.add(path, error.to_string());
            None
        }
    }
}

fn window(problems: &mut Problems, path: &str, raw: &RawWindow) -> Option<CallingWindow> {
    let days: Vec<String> = raw.days.into();
    if days.is_empty() {
        problems.add(format!("{path}.days"), "needs at least one day");
    }
    let start = minute_of(problems, &format!("{path}.start"), &raw.start, false);
    let end = minute_of(problems, &format!("{path}.end"), &raw.end, true);
    let days_of_week = days
        .iter()
        .filter_map(|d| DAY_NAMES.iter().position(|n| n == d))
        .map(|i| i as i32 + 1)
        .collect::<Vec<_>>();
    (!days_of_week.is_empty()).then_some(())?;
    Some(CallingWindow {
        days_of_week,
        start_minute: start?,
        end_minute: end?,
    })
}

const DAY_NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// `HH:MM` as minutes after midnight; an end of `24:00` or `00:00` is 1440.
fn minute_of(problems: &mut Problems, path: &str, text: &str, is_end: bool) -> Option<i32> {
    let trimmed = text.trim();
    if is_end && trimmed == "24:00" {
        return Some(1440);
    }
    match parse_time(trimmed) {
        Ok(t) if t.second() != 0 => {
            problems.add(path, format!("{text:?}: windows are in whole minutes"));
            None
        }
        Ok(t) => {
            let minute = (t.hour() * 60 + t.minute()) as i32;
            Some(if is_end && minute == 0 { 1440 } else { minute })
        }
        Err(error) => {
            problems.add(path, error.to_string());
            None
        }
    }
}

//! The typed settings processors use, their built-in defaults, and the
//! conversions between them and the wire values of `ControlChange`.
//!
//! Guarantees: a conversion from the wire either yields a setting the
//! domain accepts (a valid [`CampaignWindow`], [`CampaignPolicy`],
//! [`GridConfig`], a known zone) or a [`SettingError`] saying what is
//! wrong; it never panics. Windows convert both ways without loss.

use std::time::Duration;

use callstream_domain::calling_window::{CampaignWindow, Days, WindowRule};
use callstream_domain::notify::{KindPattern, QuietHours};
use callstream_domain::policy::CampaignPolicy;
use callstream_domain::slot_grid::GridConfig;
use callstream_domain::timezone::parse_zone;
use callstream_schemas::{
    CallingWindow as WireWindow, CampaignSettings, CompletionSettings, GridSettings,
    NotificationRoutes,
};
use chrono::{NaiveTime, Timelike, Weekday};
use chrono_tz::Tz;

/// Where a setting in force came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Set for exactly this scope (the campaign, or the tenant).
    Set,
    /// The tenant's campaign defaults (for a campaign with no settings of its own).
    TenantDefault,
    /// Nothing set: the built-in default.
    BuiltIn,
}

/// A wire value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("window {index}: day {day} is not an ISO weekday (1 = Monday ... 7 = Sunday)")]
    BadDay { index: usize, day: i32 },
    #[error("window {index}: start_minute {minute} is outside 0..=1439")]
    BadStart { index: usize, minute: i32 },
    #[error("window {index}: end_minute {minute} is outside 1..=1440")]
    BadEnd { index: usize, minute: i32 },
    #[error("windows: {0}")]
    Window(#[from] callstream_domain::calling_window::WindowError),
    #[error("{0}")]
    Policy(#[from] callstream_domain::policy::PolicyConfigError),
    #[error("{field} must be at least {min}, not {value}")]
    TooSmall {
        field: &'static str,
        min: i64,
        value: i64,
    },
    #[error("default_time_zone: {0}")]
    Zone(#[from] callstream_domain::timezone::SkipReason),
    #[error("the value has no part for setting {0}")]
    Missing(&'static str),
    #[error("notifications: {0}")]
    Notify(#[from] callstream_domain::notify::NotifyRuleError),
    #[error("notifications.{field}: {message}")]
    Notifications {
        field: &'static str,
        message: String,
    },
    #[error("calling_rules: {0}")]
    CallingRules(#[from] callstream_domain::calling_rules::RulesError),
    #[error("calling_rules.default_state: {0:?} is not a US state or territory")]
    DefaultState(String),
    #[error("calling_rules.cap_subject: {0:?} is neither campaign nor tenant")]
    CapSubject(String),
}

/// Built-in campaign window: weekdays 09:00-20:00 in the lead's zone.
pub const DEFAULT_WINDOW_START: (u32, u32) = (9, 0);
pub const DEFAULT_WINDOW_END: (u32, u32) = (20, 0);
/// Built-in buffer after a window opens for a call moved out of its window.
pub const DEFAULT_MOVE_BUFFER: Duration = Duration::from_secs(15 * 60);
/// Built-in tenant default zone, the last source of a lead's zone.
pub const DEFAULT_ZONE: Tz = chrono_tz::America::New_York;
/// Built-in completion window W and grace period.
pub const DEFAULT_COMPLETION_WINDOW: Duration = Duration::from_secs(20 * 60);
pub const DEFAULT_COMPLETION_GRACE: Duration = Duration::from_secs(2 * 60);

/// One campaign's settings in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignConfig {
    /// When the campaign may call, in the lead's zone (federal hours bound it regardless).
    pub window: CampaignWindow,
    /// Retry delays, attempts and next campaign; the policy's other fields
    /// keep their defaults (the control schema does not carry them).
    pub policy: CampaignPolicy,
    /// Added to the next opening for a call moved out of its window.
    pub move_buffer: Duration,
    pub origin: Origin,
}

impl CampaignConfig {
    /// The built-in settings of a campaign nobody configured.
    pub fn builtin() -> Self {
        let time = |(h, m): (u32, u32)| NaiveTime::from_hms_opt(h, m, 0).unwrap_or(NaiveTime::MIN);
        let window = match CampaignWindow::daily(
            Days::WEEKDAYS,
            time(DEFAULT_WINDOW_START),
            time(DEFAULT_WINDOW_END),
        ) {
            Ok(window) => window,
            // A single rule with days is always a valid window.
            Err(error) => unreachable!("built-in window: {error}"),
        };
        Self {
            window,
            policy: CampaignPolicy::default(),
            move_buffer: DEFAULT_MOVE_BUFFER,
            origin: Origin::BuiltIn,
        }
    }

    /// Reads wire settings of `campaign_id`.
    pub fn from_wire(campaign_id: &str, wire: &CampaignSettings) -> Result<Self, SettingError> {
        let window = window_from_wire(&wire.windows)?;
        let delays = wire
            .retry_delays_minutes
            .iter()
            .map(|&d| u32::try_from(d).unwrap_or(0))
            .collect::<Vec<_>>();
        let max_attempts = positive("max_attempts", i64::from(wire.max_attempts))?;
        let move_buffer =
            u64::try_from(wire.move_buffer_minutes).map_err(|_| SettingError::TooSmall {
                field: "move_buffer_minutes",
                min: 0,
                value: i64::from(wire.move_buffer_minutes),
            })?;
        let policy = CampaignPolicy {
            voicemail_retry_minutes: delays.clone(),
            no_answer_retry_minutes: delays.clone(),
            busy_retry_minutes: delays,
            max_attempts: u32::try_from(max_attempts).unwrap_or(u32::MAX),
            next_campaign: wire.next_campaign_id.clone(),
            ..CampaignPolicy::default()
        };
        policy.validate(campaign_id)?;
        Ok(Self {
            window,
            policy,
            move_buffer: Duration::from_secs(move_buffer * 60),
            origin: Origin::Set,
        })
    }
}

impl CampaignConfig {
    /// The wire form (the policy's three retry lists are one list on the
    /// wire: the voicemail list is written).
    pub fn to_wire(&self) -> CampaignSettings {
        let minutes = self.move_buffer.as_secs() / 60;
        CampaignSettings {
            windows: window_to_wire(&self.window),
            retry_delays_minutes: self
                .policy
                .voicemail_retry_minutes
                .iter()
                .map(|&d| i32::try_from(d).unwrap_or(i32::MAX))
                .collect(),
            max_attempts: i32::try_from(self.policy.max_attempts).unwrap_or(i32::MAX),
            next_campaign_id: self.policy.next_campaign.clone(),
            move_buffer_minutes: i32::try_from(minutes).unwrap_or(i32::MAX),
        }
    }
}

/// A tenant's grid settings in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantGrid {
    pub config: GridConfig,
    /// The tenant's default zone: the last source of a lead's zone.
    pub default_zone: Tz,
    pub origin: Origin,
}

impl TenantGrid {
    pub fn builtin() -> Self {
        Self {
            config: GridConfig::default(),
            default_zone: DEFAULT_ZONE,
            origin: Origin::BuiltIn,
        }
    }

    pub fn from_wire(wire: &GridSettings) -> Result<Self, SettingError> {
        let slot_seconds = positive("slot_seconds", i64::from(wire.slot_seconds))?;
        let capacity = positive("launches_per_slot", i64::from(wire.launches_per_slot))?;
        Ok(Self {
            config: GridConfig {
                slot_seconds: u32::try_from(slot_seconds).unwrap_or(u32::MAX),
                capacity_per_slot: u32::try_from(capacity).unwrap_or(u32::MAX),
            },
            default_zone: parse_zone(&wire.default_time_zone)?,
            origin: Origin::Set,
        })
    }

    pub fn to_wire(&self) -> GridSettings {
        GridSettings {
            slot_seconds: i32::try_from(self.config.slot_seconds).unwrap_or(i32::MAX),
            launches_per_slot: i32::try_from(self.config.capacity_per_slot).unwrap_or(i32::MAX),
            default_time_zone: self.default_zone.name().to_owned(),
        }
    }
}

/// How long after a launch its completion may arrive (window W, then grace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletionWindow {
    pub window: Duration,
    pub grace: Duration,
    pub origin: Origin,
}

impl CompletionWindow {
    pub fn builtin() -> Self {
        Self {
            window: DEFAULT_COMPLETION_WINDOW,
            grace: DEFAULT_COMPLETION_GRACE,
            origin: Origin::BuiltIn,
        }
    }

    pub fn from_wire(wire: &CompletionSettings) -> Result<Self, SettingError> {
        let window = positive("window_ms", wire.window_ms)?;
        let grace = u64::try_from(wire.grace_ms).map_err(|_| SettingError::TooSmall {
            field: "grace_ms",
            min: 0,
            value: wire.grace_ms,
        })?;
        Ok(Self {
            window: Duration::from_millis(window),
            grace: Duration::from_millis(grace),
            origin: Origin::Set,
        })
    }

    /// W plus the grace period: when a launch without completion is missing.
    pub fn total(&self) -> Duration {
        self.window + self.grace
    }
}

/// Built-in digest window: further notifications of one kind within 5 minutes of one sent
/// on a channel are grouped into one message.
pub const DEFAULT_DIGEST: Duration = Duration::from_secs(5 * 60);
/// The longest digest window a tenant may set (a day).
pub const MAX_DIGEST_SECONDS: i32 = 86_400;

/// A tenant's notification routes in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationPolicy {
    pub routes: Vec<RouteRule>,
    pub quiet: Option<QuietHours>,
    /// 0: every notification on its own.
    pub digest: Duration,
}

/// One route: notifications of `kinds` go to `channel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRule {
    pub kinds: Vec<KindPattern>,
    pub channel: String,
    /// Sent during quiet hours too.
    pub urgent: bool,
}

impl NotificationPolicy {
    /// No routes: nothing is notified.
    pub fn none() -> Self {
        Self {
            routes: Vec::new(),
            quiet: None,
            digest: DEFAULT_DIGEST,
        }
    }

    pub fn from_wire(wire: &NotificationRoutes) -> Result<Self, SettingError> {
        let mut routes = Vec::with_capacity(wire.routes.len());
        for route in &wire.routes {
            let kinds = route
                .kinds
                .iter()
                .map(|k| KindPattern::parse(k))
                .collect::<Result<Vec<_>, _>>()?;
            if kinds.is_empty() {
                return Err(notifications(
                    "routes.kinds",
                    "a route needs at least one kind",
                ));
            }
            if route.channel.trim().is_empty() {
                return Err(notifications("routes.channel", "must not be empty"));
            }
            routes.push(RouteRule {
                kinds,
                channel: route.channel.clone(),
                urgent: route.urgent,
            });
        }
        let quiet = wire
            .quiet_hours
            .as_ref()
            .map(|q| -> Result<QuietHours, SettingError> {
                let zone = parse_zone(&q.time_zone)
                    .map_err(|e| notifications("quiet_hours.time_zone", e.to_string()))?;
                let time = |field, text: &str| {
                    callstream_domain::calling_window::parse_time(text)
                        .map_err(|e| notifications(field, e.to_string()))
                };
                let (start, end) = (
                    time("quiet_hours.start", &q.start)?,
                    time("quiet_hours.end", &q.end)?,
                );
                Ok(QuietHours::new(zone, start, end)?)
            })
            .transpose()?;
        if !(0..=MAX_DIGEST_SECONDS).contains(&wire.digest_seconds) {
            return Err(notifications(
                "digest_seconds",
                format!(
                    "must be between 0 and {MAX_DIGEST_SECONDS}, not {}",
                    wire.digest_seconds
                ),
            ));
        }
        Ok(Self {
            routes,
            quiet,
            digest: Duration::from_secs(wire.digest_seconds.unsigned_abs().into()),
        })
    }

    /// The channels a notification of `kind` goes to, each once and in route order, with
    /// whether it may be sent in quiet hours there (some matching route says urgent).
    pub fn channels_for(&self, kind: &str) -> Vec<(&str, bool)> {
        let mut out: Vec<(&str, bool)> = Vec::new();
        for route in &self.routes {
            if !route.kinds.iter().any(|k| k.matches(kind)) {
                continue;
            }
            match out.iter_mut().find(|(c, _)| *c == route.channel) {
                Some((_, urgent)) => *urgent |= route.urgent,
                None => out.push((route.channel.as_str(), route.urgent)),
            }
        }
        out
    }
}

fn notifications(field: &'static str, message: impl Into<String>) -> SettingError {
    SettingError::Notifications {
        field,
        message: message.into(),
    }
}

fn positive(field: &'static str, value: i64) -> Result<u64, SettingError> {
    match u64::try_from(value) {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(SettingError::TooSmall {
            field,
            min: 1,
            value,
        }),
    }
}

/// Reads wire windows (ISO days, minutes after midnight) as a domain window.
pub fn window_from_wire(windows: &[WireWindow]) -> Result<CampaignWindow, SettingError> {
    let mut rules = Vec::with_capacity(windows.len());
    for (index, w) in windows.iter().enumerate() {
        let mut days = Days::NONE;
        for &day in &w.days_of_week {
            days = days.with(iso_weekday(day).ok_or(SettingError::BadDay { index, day })?);
        }
        let start = minute_time(w.start_minute, 0..=1439).ok_or(SettingError::BadStart {
            index,
            minute: w.start_minute,
        })?;
        let end = minute_time(w.end_minute, 1..=1440).ok_or(SettingError::BadEnd {
            index,
            minute: w.end_minute,
        })?;
        rules.push(WindowRule::new(days, start, end));
    }
    Ok(CampaignWindow::new(rules)?)
}

/// Writes a domain window as wire windows. Seconds are dropped (the wire
/// counts minutes); a rule ending at midnight writes `end_minute` 1440.
pub fn window_to_wire(window: &CampaignWindow) -> Vec<WireWindow> {
    window
        .rules()
        .iter()
        .map(|rule| {
            let minutes = |t: NaiveTime| (t.hour() * 60 + t.minute()) as i32;
            let end = match minutes(rule.end) {
                0 => 1440,
                m => m,
            };
            WireWindow {
                days_of_week: WEEK
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| rule.days.contains(**d))
                    .map(|(i, _)| i as i32 + 1)
                    .collect(),
                start_minute: minutes(rule.start),
                end_minute: end,
            }
        })
        .collect()
}

const WEEK: [Weekday; 7] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
    Weekday::Sat,
    Weekday::Sun,
];

fn iso_weekday(day: i32) -> Option<Weekday> {
    let index = usize::try_from(day.checked_sub(1)?).ok()?;
    WEEK.get(index).copied()
}

/// Minutes after midnight as a time; 1440 is midnight (the end of the day).
fn minute_time(minute: i32, range: std::ops::RangeInclusive<i32>) -> Option<NaiveTime> {
    if !range.contains(&minute) {
        return None;
    }
    let minute = u32::try_from(minute % 1440).ok()?;
    NaiveTime::from_hms_opt(minute / 60, minute % 60, 0)
}

#[cfg(test)]
mod tests;

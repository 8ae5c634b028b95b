//! Where a planned call goes: the pure part of the scheduler.
//!
//! Guarantees of [`place_job`]: the slot it books starts at or after both
//! the request's earliest time and the clock (a slot in the past would
//! launch at once and break the rate cap), inside the calling window
//! (campaign window bounded by federal hours, in every candidate zone of
//! the lead), and before the horizon; a request whose earliest time is
//! outside the window goes to the next opening plus the campaign's buffer,
//! and says so; when nothing qualifies it books nothing and says why.
//! The lead's state calling rules (hours, holidays, frequency caps over the
//! calls placed to it) bound the slot too: a call they move or refuse names
//! the rule as its reason (`state_hours:FL`, `frequency_cap:FL:3_per_24h`).
//! Same grid, same request, same clock: same answer.

use std::borrow::Cow;
use std::time::Duration;

use callstream_domain::calling_rules::{AllOf, TenantRules};
use callstream_domain::calling_window::{CallingWindow, Placement};
use callstream_domain::slot_grid::{JobId, Refusal, Slot, SlotGrid};
use callstream_domain::timezone::parse_zone;
use callstream_domain::Availability;
use callstream_kit::calling_rules::LeadRules;
use callstream_kit::control::settings::window_from_wire;
use callstream_kit::control::CampaignConfig;
use callstream_schemas::{ScheduleRequest, ZoneSource};
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;

/// Reason codes, as they appear on schedule events.
pub mod reason {
    pub const ALLOCATED: &str = "allocated";
    pub const MOVED_OUT_OF_WINDOW: &str = "moved_out_of_window";
    pub const NO_FREE_SLOT: &str = "no_free_slot";
    pub const OUTSIDE_ALL_WINDOWS: &str = "outside_all_windows";
    pub const INVALID_REQUEST: &str = "invalid_request";
}

/// A lead's calling window and where its zone came from.
#[derive(Debug, Clone)]
pub struct LeadWindow {
    pub window: CallingWindow,
    /// The state calling rules of the lead's states in its zone(s), over the calls placed
    /// to it (`None`: no state known, only the federal floor and the window).
    pub rules: Option<LeadRules>,
    /// The zone name(s) used, comma-separated when an area code spans zones.
    pub zone_name: String,
    pub source: ZoneSource,
    /// Why the request's own zone was not used, if it was not.
    pub note: Option<String>,
}

/// A request the scheduler cannot act on; it is refused with this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    pub reason: &'static str,
    pub detail: String,
}

/// The window of a plan request: the request's own windows, else the
/// campaign's; in the request's zone(s), else the tenant default zone.
pub fn lead_window(
    request: &ScheduleRequest,
    campaign: &CampaignConfig,
    tenant_zone: Tz,
    tenant_rules: &TenantRules,
) -> Result<LeadWindow, Unusable> {
    let campaign_window = if request.windows.is_empty() {
        campaign.window.clone()
    } else {
        window_from_wire(&request.windows).map_err(|e| Unusable {
            reason: reason::INVALID_REQUEST,
            detail: format!("the request's windows cannot be used: {e}"),
        })?
    };
    let named = request.time_zone.as_deref().map(str::trim).unwrap_or("");
    let (zones, source, note) = if named.is_empty() {
        (vec![tenant_zone], ZoneSource::TenantDefault, None)
    } else {
        match named
            .split(',')
            .map(parse_zone)
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(zones) => (
                zones,
                request.time_zone_source.unwrap_or(ZoneSource::Unknown),
                None,
            ),
            Err(error) => (
                vec![tenant_zone],
                ZoneSource::TenantDefault,
                Some(format!("{error}; the tenant default zone is used")),
            ),
        }
    };
    let zone_name = zones.iter().map(|z| z.name()).collect::<Vec<_>>().join(",");
    let rules = LeadRules::from_wire(
        &request.jurisdictions,
        &zones,
        &request.placed_calls,
        tenant_rules,
    );
    let window = campaign_window.in_zones(zones).map_err(|e| Unusable {
        reason: reason::INVALID_REQUEST,
        detail: e.to_string(),
    })?;
    Ok(LeadWindow {
        window,
        rules,
        zone_name,
        source,
        note,
    })
}

/// What [`place_job`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Allocated {
        slot: Slot,
        reason: Cow<'static, str>,
        detail: String,
    },
    Refused {
        reason: Cow<'static, str>,
        detail: String,
    },
    /// The job already holds this slot (nothing changed).
    AlreadyBooked(Slot),
}

/// The timing of one placement.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// The request's earliest allowed time.
    pub earliest: DateTime<Utc>,
    /// The clock: no slot before it.
    pub now: DateTime<Utc>,
    /// How far past the start the search goes.
    pub horizon: Duration,
    /// Buffer after a window opening for a request outside its window.
    pub move_buffer: Duration,
}

fn plus(at: DateTime<Utc>, span: Duration) -> DateTime<Utc> {
    TimeDelta::from_std(span)
        .ok()
        .and_then(|d| at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// `at` as `%Y-%m-%dT%H:%M:%SZ`, written digit by digit: chrono's
/// formatter parses its pattern on every call, which made the reasons of
/// moved jobs a noticeable part of a placement.
fn stamp(at: DateTime<Utc>) -> String {
    use chrono::{Datelike, Timelike};
    let year = at.year();
    // Years of other widths and leap seconds: chrono's own rules.
    if !(0..=9999).contains(&year) || at.nanosecond() >= 1_000_000_000 {
        return at.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    }
    let mut out = String::with_capacity(20);
    let mut push = |n: u32, width: u32, after: char| {
        for place in (0..width).rev() {
            let digit = n / 10u32.pow(place) % 10;
            out.push(char::from(b'0' + digit as u8));
        }
        out.push(after);
    };
    push(year.unsigned_abs(), 4, '-');
    push(at.month(), 2, '-');
    push(at.day(), 2, 'T');
    push(at.hour(), 2, ':');
    push(at.minute(), 2, ':');
    push(at.second(), 2, 'Z');
    out
}

/// Books `job` on `grid` (see the module guarantees).
pub fn place_job(
    grid: &mut SlotGrid,
    job: JobId,
    window: &CallingWindow,
    rules: Option<&LeadRules>,
    timing: Timing,
) -> Outcome {
    let start = timing.earliest.max(timing.now);
    let horizon = plus(start, timing.horizon);
    let (mut from, mut reason, mut detail) = match window.place(start, timing.move_buffer, horizon)
    {
        Placement::InWindow { at } => (at, Cow::Borrowed(reason::ALLOCATED), String::new()),
        Placement::Moved { at, opening } => (
            at,
            Cow::Borrowed(reason::MOVED_OUT_OF_WINDOW),
            format!(
                "{} is outside the calling window; moved to the next opening {} plus {} min",
                stamp(start),
                stamp(opening),
                timing.move_buffer.as_secs() / 60
            ),
        ),
        Placement::NoOpening => {
            return Outcome::Refused {
                reason: reason::OUTSIDE_ALL_WINDOWS.into(),
                detail: format!(
                    "the calling window does not open between {} and {}",
                    stamp(start),
                    stamp(horizon)
                ),
            }
        }
    };
    if timing.earliest < timing.now {
        let late = format!(
            "earliest {} had passed; placed from {}",
            stamp(timing.earliest),
            stamp(timing.now)
        );
        detail = if detail.is_empty() {
            late
        } else {
            format!("{late}; {detail}")
        };
    }
    if let Some(rules) = rules {
        if let Some(violation) = rules.violation(from) {
            // The rule moves the call to the first instant it and the window both allow.
            let parts: [&dyn Availability; 2] = [window, rules];
            let Some(at) = AllOf(&parts).next_allowed(from, horizon) else {
                return Outcome::Refused {
                    reason: violation.rule_id.to_string().into(),
                    detail: format!(
                        "{violation}; no instant the rules and the calling window allow \
                         between {} and {}",
                        stamp(from),
                        stamp(horizon)
                    ),
                };
            };
            let moved = format!("{violation}; moved from {} to {}", stamp(from), stamp(at));
            detail = if detail.is_empty() {
                moved
            } else {
                format!("{detail}; {moved}")
            };
            reason = violation.rule_id.to_string().into();
            from = at;
        }
    }
    let allocated = match rules {
        Some(rules) => {
            let parts: [&dyn Availability; 2] = [window, rules];
            grid.allocate(job, from, &AllOf(&parts), horizon)
        }
        None => grid.allocate(job, from, window, horizon),
    };
    match allocated {
        Ok(slot) => Outcome::Allocated {
            slot,
            reason,
            detail,
        },
        Err(Refusal::AlreadyBooked { slot }) => Outcome::AlreadyBooked(slot),
        Err(Refusal::NoFreeSlot { earliest, horizon }) => Outcome::Refused {
            reason: reason::NO_FREE_SLOT.into(),
            detail: format!(
                "no free slot inside the calling window between {} and {}",
                stamp(earliest),
                stamp(horizon)
            ),
        },
    }
}

#[cfg(test)]
mod tests;

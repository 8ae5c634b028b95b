//! The launch-time guards: whether a job whose slot has come may leave now,
//! decided on the contact's latest state. Pure: no I/O, no clock.
//!
//! Order (first match wins), and why:
//! 1. the contact may not be called (blocked number, do-not-call, enrolled
//!    student, spam) or has no number → cancel: nothing later can make
//!    this call right, so holding it would only re-plan it for nothing;
//! 2. calls are held for an exception (an urgent request for a person, or
//!    provider failures) → cancel, unless the job is a callback the lead
//!    asked for: in the very call that opened the hold, or in any call when
//!    the hold is an urgent request (an urgent hold never cancels a callback
//!    the lead asked for);
//! 3. a system pause or a pause of the job's campaign → hold (the job is
//!    re-planned when the pause lifts);
//! 4. outside the calling window now → move to the next opening plus the
//!    buffer (never earlier), or cancel when there is none in the horizon;
//! 5. another call to the contact is still in flight → re-plan after a delay;
//! 6. otherwise launch, to be dialled no later than the window's close.

use std::time::Duration;

use callstream_domain::calling_window::CallingWindow;
use callstream_domain::Availability;
use chrono::{DateTime, TimeDelta, Utc};

use crate::state::Hold;

/// What the guards decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Send it; `expires_at` is when the calling window closes.
    Launch { expires_at: Option<DateTime<Utc>> },
    /// Never call it, for this reason.
    Cancel {
        reason: &'static str,
        detail: String,
    },
    /// Keep it until the pause lifts.
    Hold { reason: &'static str },
    /// Plan it again (a new job replacing this one) no earlier than `earliest`.
    Replan {
        reason: &'static str,
        detail: String,
        earliest: DateTime<Utc>,
    },
}

/// What the guards look at.
#[derive(Debug, Clone, Copy)]
pub struct GuardInput<'a> {
    /// Why the contact may not be called at all, if so.
    pub barred: Option<&'static str>,
    pub has_phone: bool,
    pub hold: Option<&'a Hold>,
    /// The call in which the lead asked for this job, if they did.
    pub requested_in_call: Option<&'a str>,
    /// `system_paused` or `campaign_paused`, if a pause is on.
    pub pause: Option<&'static str>,
    pub window: &'a CallingWindow,
    pub move_buffer: Duration,
    pub move_horizon: Duration,
    pub call_in_flight: bool,
    pub in_flight_delay: Duration,
    /// The instant the call would leave.
    pub now: DateTime<Utc>,
}

/// Runs the guards in their order.
pub fn check(input: &GuardInput<'_>) -> Verdict {
    if let Some(reason) = input.barred {
        return Verdict::Cancel {
            reason,
            detail: format!(
                "the contact may not be called: {}",
                reason.replace('_', " ")
            ),
        };
    }
    if !input.has_phone {
        return Verdict::Cancel {
            reason: "no_phone_number",
            detail: "the contact has no phone number".to_owned(),
        };
    }
    if let Some(hold) = input.hold {
        // A callback the lead asked for goes: in the call that opened the
        // hold, or, when the hold is an urgent request for a person, in any
        // call (the lead's own words about when to call stand; the person
        // they asked for can still reach them). The mark travels with the
        // job when it moves.
        let own_callback =
            hold.call_id.is_some() && input.requested_in_call == hold.call_id.as_deref();
        let asked_for_despite_urgent = hold.urgent && input.requested_in_call.is_some();
        if !own_callback && !asked_for_despite_urgent {
            let (reason, detail) = if hold.urgent {
                (
                    "urgent_request_open",
                    "the lead asked for a person and the request has no outcome yet",
                )
            } else {
                (
                    "calls_held",
                    "calls are held until an exception is resolved",
                )
            };
            return Verdict::Cancel {
                reason,
                detail: detail.to_owned(),
            };
        }
    }
    if let Some(reason) = input.pause {
        return Verdict::Hold { reason };
    }
    let now = input.now;
    if !input.window.is_allowed(now) {
        let horizon = add(now, input.move_horizon);
        return match input
            .window
            .next_opening_plus_buffer(now, input.move_buffer, horizon)
        {
            Some((opening, at)) => Verdict::Replan {
                reason: "outside_calling_window",
                detail: format!(
                    "outside the calling window at {}; moved to the opening at {} plus {} min",
                    now.format("%Y-%m-%dT%H:%MZ"),
                    opening.format("%Y-%m-%dT%H:%MZ"),
                    input.move_buffer.as_secs() / 60
                ),
                earliest: at.max(now),
            },
            None => Verdict::Cancel {
                reason: "no_window_opening",
                detail: format!(
                    "no calling window opens within {} days",
                    input.move_horizon.as_secs() / 86_400
                ),
            },
        };
    }
    if input.call_in_flight {
        return Verdict::Replan {
            reason: "call_in_flight",
            detail: format!(
                "another call to the contact is in flight; trying again in {} min",
                input.in_flight_delay.as_secs() / 60
            ),
            earliest: add(now, input.in_flight_delay),
        };
    }
    Verdict::Launch {
        expires_at: window_close(input.window, now),
    }
}

fn add(at: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    TimeDelta::from_std(d)
        .ok()
        .and_then(|d| at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Coarse step of the close search. Windows (and federal hours) are
/// minutes to hours long; a closed gap shorter than this between two open
/// stretches may be stepped over, which only makes the expiry later.
const CLOSE_STEP: TimeDelta = TimeDelta::minutes(10);
/// Federal hours bound any window to 13 hours a day.
const CLOSE_LIMIT: TimeDelta = TimeDelta::hours(24);

/// The first instant after `at` (which is allowed) at which the window is
/// closed: coarse steps, then a binary search to the second.
pub fn window_close(window: &CallingWindow, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let limit = at.checked_add_signed(CLOSE_LIMIT)?;
    let mut open = at;
    let mut closed = loop {
        let next = open.checked_add_signed(CLOSE_STEP)?;
        if next > limit {
            return None;
        }
        if !window.is_allowed(next) {
            break next;
        }
        open = next;
    };
    while closed - open > TimeDelta::seconds(1) {
        let mid = open + (closed - open) / 2;
        if window.is_allowed(mid) {
            open = mid;
        } else {
            closed = mid;
        }
    }
    Some(closed)
}

#[cfg(test)]
mod tests {
    use callstream_domain::calling_window::{CampaignWindow, Days};
    use chrono::NaiveTime;
    use proptest::prelude::*;

    use super::*;

    fn window(zone: chrono_tz::Tz) -> CallingWindow {
        let t = |h, m| NaiveTime::from_hms_opt(h, m, 0).unwrap();
        CampaignWindow::daily(Days::WEEKDAYS, t(9, 30), t(23, 0))
            .unwrap()
            .in_zones(vec![zone])
            .unwrap()
    }

    proptest! {
        /// The expiry is the close of the open stretch the launch is in: the
        /// window is closed there and open right before it.
        #[test]
        fn window_close_is_the_end_of_the_open_stretch(
            minute in 0i64..(60 * 24 * 30),
            zone in proptest::sample::select(vec![
                chrono_tz::America::Chicago,
                chrono_tz::America::Phoenix,
                chrono_tz::America::New_York,
            ]),
        ) {
            // March 2024 includes the US spring-forward.
            let at = DateTime::from_timestamp(1_709_251_200 + minute * 60, 0).unwrap();
            let w = window(zone);
            prop_assume!(w.is_allowed(at));
            let close = window_close(&w, at).unwrap();
            prop_assert!(close > at);
            prop_assert!(!w.is_allowed(close));
            prop_assert!(w.is_allowed(close - TimeDelta::seconds(2)));
            // Federal hours (21:00 local) close it, not the campaign's 23:00.
            let local = close.with_timezone(&zone);
            prop_assert_eq!(local.format("%H:%M").to_string(), "21:00");
        }
    }
}

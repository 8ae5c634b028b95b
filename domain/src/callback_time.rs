//! Reads the callback times leads speak ("3pm", "tomorrow at 10", "Monday
//! morning", "in two hours", "at half past four") into an instant, in the
//! lead's own zone and relative to a `now` the caller passes in.
//!
//! Guarantees:
//! - Always an answer: a phrase we cannot read (or that names a time
//!   already past, or too far ahead) falls back to now + two hours, and the
//!   result says so and why ([`Reading::Fallback`]).
//! - Wall-clock times are read in the lead's zone: "3pm" for a lead in
//!   Chicago is 15:00 America/Chicago, never 15:00 UTC. Local times go
//!   through [`crate::timezone::resolve_local`], so DST gaps and overlaps
//!   resolve like calling windows do (gap: first instant after it; overlap:
//!   the earlier instant).
//! - Deterministic: no clock reads; the same phrase, `now` and zone give
//!   the same answer.
//!
//! How phrases are read (the defaults live in [`CallbackDefaults`]):
//! - Parts of the day: morning 09:00, lunch 12:00, afternoon 14:00,
//!   evening 18:00, tonight 19:00; "noon" 12:00, "end of day" 17:00. A day
//!   with no time ("tomorrow", "Monday", "next week") is that day at 09:00;
//!   "next week" is next Monday.
//! - An hour with no am/pm: 1-7 is afternoon (a sales callback at 3 means
//!   15:00), 8-11 morning, 12 noon; a part of the day decides when given
//!   ("at 8 tonight").
//! - A time already past today, with no day named, is the next day ("at 10"
//!   said at 11:00 is tomorrow 10:00), except that a morning reading of 8-11
//!   becomes the evening when that is still ahead and before 21:00 ("at 8"
//!   said at 09:00 is 20:00). A part of the day already begun reads as 30
//!   minutes from now ("this afternoon" at 15:00 is 15:30). With "today"
//!   said explicitly, a past time falls back.
//! - Weekdays are the coming one (today if the time is still ahead);
//!   "next Monday" is never today.

use chrono::{DateTime, NaiveDateTime, NaiveTime, TimeDelta, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

mod grammar;
mod lexer;
mod resolve;
#[cfg(test)]
mod tests;

/// What a lead asked for, as an instant and as their own wall clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackTime {
    /// When to call.
    pub at: DateTime<Utc>,
    /// The wall-clock time the lead asked for, in `zone` (kept on the job).
    /// Inside a DST gap this is the time as said, which `at` moves past.
    pub requested_local: NaiveDateTime,
    #[serde(with = "crate::timezone::serde_tz")]
    pub zone: Tz,
    pub reading: Reading,
}

/// How the phrase was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reading {
    Parsed {
        rule: CallbackRule,
        /// The words that were read as the time, normalised (no other words
        /// of the sentence are kept).
        matched: String,
        notes: Vec<ReadNote>,
    },
    /// The two-hour rule, with the reason.
    Fallback { reason: FallbackReason },
}

impl Reading {
    pub fn is_fallback(&self) -> bool {
        matches!(self, Reading::Fallback { .. })
    }
}

/// Which kind of expression gave the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallbackRule {
    /// "in two hours", "30 minutes from now", "in two days".
    Relative,
    /// A clock time, with or without a day: "3pm", "tomorrow at 10".
    ClockTime,
    /// A part of the day: "Monday morning", "tonight".
    DayPart,
    /// A day with no time: "tomorrow", "next week".
    DayOnly,
    /// "today" alone: the two-hour rule, but understood.
    LaterToday,
}

/// Choices made while reading, for the contact's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadNote {
    /// An hour without am/pm read as afternoon/evening.
    AssumedPm,
    /// An hour without am/pm read as morning.
    AssumedAm,
    /// The morning reading had passed; the evening one was still ahead.
    ReadAsEvening,
    /// The time had passed today, so the next day.
    MovedToNextDay,
    /// The part of the day had begun, so a little later today.
    LaterInDayPart,
    /// The local time does not exist (spring forward); the first instant after.
    DstGapMovedForward,
    /// The local time exists twice (fall back); the earlier instant.
    DstOverlapEarlier,
}

/// Why the two-hour rule was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackReason {
    /// Nothing was said.
    Empty,
    /// No time expression in the phrase.
    NoTimeFound,
    /// The phrase names a time that has already passed.
    InPast,
    /// The phrase names a time further ahead than the defaults allow.
    TooFarAhead,
}

/// The hours behind the words; all local wall-clock times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackDefaults {
    pub morning: NaiveTime,
    pub lunch: NaiveTime,
    pub afternoon: NaiveTime,
    pub evening: NaiveTime,
    pub tonight: NaiveTime,
    /// A day named with no time.
    pub day_only: NaiveTime,
    /// Used for unreadable phrases and "today".
    pub fallback_delay: TimeDelta,
    /// A part of the day already begun: this long from now.
    pub later_in_part: TimeDelta,
    /// Requests further ahead than this fall back.
    pub max_ahead: TimeDelta,
}

impl Default for CallbackDefaults {
    fn default() -> Self {
        let hm = |h| NaiveTime::from_hms_opt(h, 0, 0).unwrap_or(NaiveTime::MIN);
        CallbackDefaults {
            morning: hm(9),
            lunch: hm(12),
            afternoon: hm(14),
            evening: hm(18),
            tonight: hm(19),
            day_only: hm(9),
            fallback_delay: TimeDelta::hours(2),
            later_in_part: TimeDelta::minutes(30),
            max_ahead: TimeDelta::days(180),
        }
    }
}

/// Reads `phrase` for a lead in `zone` at `now`, with the default hours.
pub fn read_callback_time(phrase: &str, now: DateTime<Utc>, zone: Tz) -> CallbackTime {
    read_callback_time_with(phrase, now, zone, &CallbackDefaults::default())
}

/// Reads `phrase` for a lead in `zone` at `now`, with the given hours.
pub fn read_callback_time_with(
    phrase: &str,
    now: DateTime<Utc>,
    zone: Tz,
    defaults: &CallbackDefaults,
) -> CallbackTime {
    let toks = lexer::tokenise(phrase);
    let outcome = if toks.is_empty() {
        Err(FallbackReason::Empty)
    } else {
        let spoken = grammar::parse(&toks);
        resolve::resolve(&spoken, now, zone, defaults).map(|r| (r, spoken.matched.join(" ")))
    };
    match outcome {
        Ok((r, matched)) => CallbackTime {
            at: r.at,
            requested_local: r.local,
            zone,
            reading: Reading::Parsed {
                rule: r.rule,
                matched,
                notes: r.notes,
            },
        },
        Err(reason) => fallback(now, zone, defaults, reason),
    }
}

/// The two-hour rule.
fn fallback(
    now: DateTime<Utc>,
    zone: Tz,
    defaults: &CallbackDefaults,
    reason: FallbackReason,
) -> CallbackTime {
    let at = now
        .checked_add_signed(defaults.fallback_delay)
        .unwrap_or(now);
    CallbackTime {
        at,
        requested_local: at.with_timezone(&zone).naive_local(),
        zone,
        reading: Reading::Fallback { reason },
    }
}

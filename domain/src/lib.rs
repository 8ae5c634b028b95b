//! callstream's domain logic, kept pure: no Kafka, no I/O, no clock reads.
//! Every function takes the time it needs as an argument, so the same input
//! always gives the same answer, and tests can walk through DST weeks.

// Time and place: which instant a lead may be called.
pub mod area_codes;
pub mod callback_time;
pub mod calling_rules;
pub mod calling_window;
pub mod timezone;

// What happens after a call.
pub mod normaliser;
pub mod policy;
pub mod slot_grid;
pub mod workflow;

// Who may be called: restrictions and who may lift them, and an opt-out in the lead's words.
pub mod opt_out;
pub mod restrictions;

// What the edges accept from outside.
pub mod input;

// Names: every deterministic id.
pub mod ids;

// Retrying what failed: the dispatchers' delays.
pub mod backoff;

/// Notification routes' kind patterns and quiet hours.
pub mod notify;

// What fails for good, and who opens its exception.
pub mod failures;

use chrono::{DateTime, Utc};

/// The instants at which a call to one lead may be placed (its calling
/// window, bounded by federal quiet hours, in the lead's own zone).
///
/// The slot grid allocator asks this and nothing else, so scheduling stays
/// independent of how windows and zones are resolved.
pub trait Availability {
    /// Whether a call may start at `at`.
    fn is_allowed(&self, at: DateTime<Utc>) -> bool;

    /// The earliest instant at or after `at` at which a call may start, or
    /// `None` when there is none before `horizon`.
    fn next_allowed(&self, at: DateTime<Utc>, horizon: DateTime<Utc>) -> Option<DateTime<Utc>>;
}

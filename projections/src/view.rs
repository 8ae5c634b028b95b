//! The views: what each is called, which tables it owns and which topics feed it.
//!
//! A view is the unit of exactly-once bookkeeping and of rebuilding: its offsets are stored
//! under its name in `projection_offsets`, and `rebuild` replaces all of its tables at once.
//! A view reads only its own tables, so rebuilding one never depends on another.

use std::fmt;
use std::str::FromStr;

use callstream_platform::topics;

/// Suffix of the tables a rebuild writes before they are swapped in.
pub const REBUILD_SUFFIX: &str = "__rebuild";

/// One projection of the log into Postgres.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum View {
    /// Every planned call, its state, reason and lineage.
    Jobs,
    /// Exception cases and who closed them.
    Exceptions,
    /// Bookings of the slot grid.
    Slots,
    /// Launches, their completions and missing cases, and delivery per 10-minute bucket.
    Launches,
    /// Every operator and system action.
    Audit,
    /// Every event of a contact.
    Timeline,
    /// The current runtime settings.
    Control,
    /// Operator commands and their outcome.
    Commands,
    /// Records a processor could not handle, and whether they were replayed.
    DeadLetters,
}

impl View {
    /// Every view, in the order they are applied within a batch.
    pub const ALL: &'static [View] = &[
        View::Jobs,
        View::Exceptions,
        View::Slots,
        View::Launches,
        View::Audit,
        View::Timeline,
        View::Control,
        View::Commands,
        View::DeadLetters,
    ];

    /// The name used on the command line and in `projection_offsets`.
    pub fn name(self) -> &'static str {
        match self {
            View::Jobs => "jobs",
            View::Exceptions => "exceptions",
            View::Slots => "slots",
            View::Launches => "launches",
            View::Audit => "audit",
            View::Timeline => "timeline",
            View::Control => "control",
            View::Commands => "commands",
            View::DeadLetters => "dead_letters",
        }
    }

    /// The tables the view owns (their live names).
    pub fn tables(self) -> &'static [&'static str] {
        match self {
            View::Jobs => &["jobs", "job_launches"],
            View::Exceptions => &["exceptions", "exception_assignments"],
            View::Slots => &["slots"],
            View::Launches => &["launches", "delivery_buckets"],
            View::Audit => &["audit"],
            View::Timeline => &["contact_timeline"],
            View::Control => &["control_settings"],
            View::Commands => &["commands"],
            View::DeadLetters => &["dead_letters", "dead_letter_replays"],
        }
    }

    /// The logical topics whose events change the view.
    pub fn topics(self) -> &'static [&'static str] {
        use topics::*;
        match self {
            View::Jobs => &[
                SCHEDULE_REQUESTS,
                SCHEDULE_EVENTS,
                LAUNCH_COMMANDS,
                CALL_LAUNCHES,
                CALL_EVENTS,
                CONTACT_STATE,
            ],
            // Assignments are operators' audit events (`exception.assign`).
            View::Exceptions => &[EXCEPTIONS, AUDIT],
            View::Slots => &[SCHEDULE_EVENTS],
            View::Launches => &[
                CALL_LAUNCHES,
                CALL_EVENTS,
                COMPLETION_MISSING,
                COMPLETION_RESOLVED,
            ],
            // Control changes from both: `control-history` keeps every one (a rebuild after
            // compaction still has them), `control` has those its writers made before the
            // history topic existed; an event on both is one row.
            View::Audit => &[AUDIT, CONTROL, CONTROL_HISTORY, CONTACT_COMMANDS],
            View::Timeline => &[
                CALL_EVENTS,
                CONTACT_COMMANDS,
                SCHEDULE_REQUESTS,
                SCHEDULE_EVENTS,
                LAUNCH_COMMANDS,
                CALL_LAUNCHES,
                CRM_COMMANDS,
                CRM_RESULTS,
                EXCEPTIONS,
                COMPLETION_MISSING,
                COMPLETION_RESOLVED,
                AUDIT,
                // Holds only (see `apply::ops`): a job held at its slot has no event.
                CONTACT_STATE,
            ],
            View::Control => &[CONTROL],
            View::Commands => &[CONTACT_COMMANDS, CONTROL, CONTROL_HISTORY, AUDIT],
            // Replays are operators' audit events (`dead_letter.replay`).
            View::DeadLetters => &[DEAD_LETTERS, AUDIT],
        }
    }

    /// The name its offsets are stored under: the view's name, or with [`REBUILD_SUFFIX`]
    /// while a rebuild writes the `__rebuild` tables.
    pub fn offsets_key(self, tables: Tables) -> String {
        format!("{}{}", self.name(), tables.suffix())
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A view name that is not one of [`View::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown view {0:?}; the views are: jobs, exceptions, slots, launches, audit, timeline, control, commands, dead_letters")]
pub struct UnknownView(pub String);

impl FromStr for View {
    type Err = UnknownView;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        View::ALL
            .iter()
            .copied()
            .find(|v| v.name() == s)
            .ok_or_else(|| UnknownView(s.to_string()))
    }
}

/// Which set of tables a projection writes: the live ones or a rebuild's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tables {
    Live,
    Rebuild,
}

impl Tables {
    /// What follows the live table name.
    pub fn suffix(self) -> &'static str {
        match self {
            Tables::Live => "",
            Tables::Rebuild => REBUILD_SUFFIX,
        }
    }

    /// The physical name of a live table in this set. Table names are constants of this
    /// crate, never input, so formatting them into SQL is safe.
    pub fn name(self, table: &str) -> String {
        format!("{table}{}", self.suffix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_tables_are_owned_once() {
        let mut tables = Vec::new();
        for view in View::ALL {
            assert_eq!(view.name().parse::<View>(), Ok(*view));
            tables.extend_from_slice(view.tables());
            assert!(!view.topics().is_empty(), "{view} reads no topic");
        }
        let count = tables.len();
        tables.sort_unstable();
        tables.dedup();
        assert_eq!(tables.len(), count, "a table belongs to two views");
        assert!("nope".parse::<View>().is_err());
    }

    #[test]
    fn rebuild_tables_and_offsets_carry_the_suffix() {
        assert_eq!(Tables::Rebuild.name("jobs"), "jobs__rebuild");
        assert_eq!(Tables::Live.name("jobs"), "jobs");
        assert_eq!(View::Jobs.offsets_key(Tables::Rebuild), "jobs__rebuild");
        assert_eq!(View::Slots.offsets_key(Tables::Live), "slots");
    }
}

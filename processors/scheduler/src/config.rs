//! The scheduler's configuration: where it writes, and the time spans that
//! bound its search and its memory. Every field has a default that suits
//! production; tests shorten them.

use std::time::Duration;

use callstream_platform::{topics, Topics};

/// How the scheduler runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Physical name of `schedule-events` (allocated, refused, cancelled, launch_due).
    pub schedule_events: String,
    /// Physical name of `contact-commands` (LaunchDue, keyed by contact).
    pub contact_commands: String,
    /// Physical name of `exceptions` (a refused request opens one).
    pub exceptions: String,
    /// Physical name of the `control` table (grid and campaign settings).
    pub control: String,
    /// How far past the earliest allowed time a free slot is searched for
    /// before the request is refused. Default 28 days.
    pub horizon: Duration,
    /// How long a finished job (launched, cancelled, refused) is remembered,
    /// so a late duplicate request changes nothing. Default 7 days.
    pub job_retention: Duration,
    /// How long after a slot's time its bookings are dropped from the grid
    /// (they can never be allocated again: allocation starts at the clock).
    /// The lag absorbs clock differences between instances. Default 10 min.
    pub prune_lag: Duration,
}

impl SchedulerConfig {
    /// The defaults, writing to `topics`.
    pub fn new(topics: &Topics) -> Self {
        Self {
            schedule_events: topics.name(topics::SCHEDULE_EVENTS),
            contact_commands: topics.name(topics::CONTACT_COMMANDS),
            exceptions: topics.name(topics::EXCEPTIONS),
            control: topics.name(topics::CONTROL),
            horizon: Duration::from_secs(28 * 24 * 3600),
            job_retention: Duration::from_secs(7 * 24 * 3600),
            prune_lag: Duration::from_secs(10 * 60),
        }
    }
}

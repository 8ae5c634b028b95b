//! When the run is over: nothing handed on is unanswered, every accepted
//! launch is closed, nothing is due soon, and the topics have gone quiet.
//!
//! Jobs planned further out than the horizon (the lookahead after the
//! workload was sent: a callback for tomorrow, a lead whose calling window
//! opens in the morning, a retry planned late in the run) do not hold the
//! run: the summary reports them as waiting after the run. The horizon is
//! fixed once the workload is sent, so jobs planned later in the run do
//! not move it.

use std::time::Duration;

use super::tally::Tally;
use callstream_schemas::JobState;

/// What is still going on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    pub workload_running: bool,
    pub faults_running: bool,
    /// Plans without a placement, launches without a report, CRM commands without a result.
    pub unanswered: usize,
    /// Accepted launches with neither a completion nor a closed missing case.
    pub open_launches: usize,
    /// Jobs due within the lookahead.
    pub due_soon: usize,
    /// Jobs held by a pause, waiting to be re-planned.
    pub held: usize,
    /// Records committed that the reader has not seen.
    pub lag: i64,
    pub idle: Duration,
}

impl Pending {
    /// What is pending in `t`, counting jobs due before `horizon_ms` as due soon.
    pub fn measure(t: &Tally, horizon_ms: i64, recovery: bool) -> Self {
        Self {
            unanswered: t.unanswered(),
            open_launches: t.open_launches(recovery),
            due_soon: t.due_before(horizon_ms),
            held: t
                .job_states
                .values()
                .filter(|(s, _)| *s == JobState::Held)
                .count(),
            ..Self::default()
        }
    }

    /// Whether the run has settled, given how long the topics must be quiet.
    pub fn settled(&self, quiet: Duration) -> bool {
        !self.workload_running
            && !self.faults_running
            && self.unanswered == 0
            && self.open_launches == 0
            && self.due_soon == 0
            && self.held == 0
            && self.lag == 0
            && self.idle >= quiet
    }

    /// What the run is waiting for, for a run that did not settle.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.workload_running {
            parts.push("the workload".to_string());
        }
        if self.faults_running {
            parts.push("the injected faults".to_string());
        }
        for (n, what) in [
            (
                self.unanswered,
                "unanswered plans, launches or CRM commands",
            ),
            (self.open_launches, "launches without a completion"),
            (self.due_soon, "jobs due soon"),
            (self.held, "held jobs"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if self.lag > 0 {
            parts.push(format!("{} records unread", self.lag));
        }
        if parts.is_empty() {
            "quiet topics".into()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_pending_work_keeps_the_run_going() {
        let quiet = Duration::from_secs(3);
        let done = Pending {
            idle: quiet,
            ..Pending::default()
        };
        assert!(done.settled(quiet));
        let cases: Vec<(Pending, &str)> = vec![
            (
                Pending {
                    workload_running: true,
                    ..done.clone()
                },
                "the workload",
            ),
            (
                Pending {
                    faults_running: true,
                    ..done.clone()
                },
                "the injected faults",
            ),
            (
                Pending {
                    unanswered: 2,
                    ..done.clone()
                },
                "2 unanswered",
            ),
            (
                Pending {
                    open_launches: 1,
                    ..done.clone()
                },
                "1 launches without",
            ),
            (
                Pending {
                    due_soon: 5,
                    ..done.clone()
                },
                "5 jobs due soon",
            ),
            (
                Pending {
                    held: 1,
                    ..done.clone()
                },
                "1 held jobs",
            ),
            (
                Pending {
                    lag: 9,
                    ..done.clone()
                },
                "9 records unread",
            ),
            (
                Pending {
                    idle: Duration::from_secs(1),
                    ..done.clone()
                },
                "quiet topics",
            ),
        ];
        for (pending, said) in cases {
            assert!(!pending.settled(quiet), "{pending:?}");
            assert!(pending.describe().contains(said), "{}", pending.describe());
        }
    }
}

//! The windowed join of one contact, as pure functions over its state: no
//! clock is read and nothing is emitted here; the processor passes the time
//! and turns the returned events into records.
//!
//! Matching, in order: by provider call id; else by the launch id from the
//! signed callback URL; a completion that names no known launch waits
//! `early_grace` for its launch (a callback can beat the dispatcher's
//! response), then falls back to the contact's earliest open launch whose
//! window holds the completion's time. Guarantees (property-tested): a
//! launch is closed at most once, a completion closes at most one launch, a
//! duplicate completion matches nothing, and `completion-missing` is
//! reported at most once per launch.

use callstream_schemas::{CallEventSource, MissingTrigger};

use crate::state::{call_key, Closed, Completion, ContactWindows, Launch};

/// The join's timing knobs (from `DetectorConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinSettings {
    pub early_grace_ms: i64,
    pub late_retention_ms: i64,
    pub closed_retention_ms: i64,
}

/// The detector's two clocks at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clocks {
    /// The partition's stream time.
    pub stream_ms: i64,
    /// The effective time: the later of stream time and the wall clock
    /// (stream time alone while the partition catches up on a backlog).
    pub now_ms: i64,
}

impl Clocks {
    /// Which clock passed `deadline_ms` first.
    fn trigger(&self, deadline_ms: i64) -> MissingTrigger {
        if self.stream_ms >= deadline_ms {
            MissingTrigger::StreamTime
        } else {
            MissingTrigger::WallClock
        }
    }
}

/// What happened in the join; the processor makes records of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinEvent {
    /// A launch is tracked from now on (counted by the delivery monitor).
    Accepted { launch: Launch },
    /// A launch's window closed without a completion (`launch.missing` is set).
    Missing { launch: Launch },
    /// A completion matched a launch within its window.
    OnTime {
        launch: Launch,
        completion: Completion,
    },
    /// A live completion arrived after its launch was reported missing.
    Late {
        launch: Launch,
        completion: Completion,
    },
    /// Recovery's replay of a launch reported missing; recovery resolves the case itself.
    Recovered {
        launch: Launch,
        completion: Completion,
    },
    /// A completion for a launch already closed (or one already waiting).
    Duplicate { completion: Completion },
    /// A completion that waited for its launch and matched none.
    Unmatched { completion: Completion },
    /// A launch seen before (a replayed or re-sent `call-launch`).
    DuplicateLaunch { launch: Launch },
    /// A launch reported missing that no completion closed in `late_retention`.
    Expired { launch: Launch },
}

fn holds(launch: &Launch, at_ms: i64, s: &JoinSettings) -> bool {
    launch.accepted_at_ms.saturating_sub(s.early_grace_ms) <= at_ms && at_ms <= launch.deadline_ms()
}

impl ContactWindows {
    fn is_duplicate(&self, c: &Completion) -> bool {
        let key = call_key(&c.call_id);
        self.closed
            .iter()
            .any(|x| x.call_key == key || Some(x.launch_id) == c.launch_id)
            || self
                .early
                .iter()
                .any(|e| e.event_id == c.event_id || e.call_id == c.call_id)
    }

    /// Closes launch `index` with `completion`.
    fn resolve(&mut self, index: usize, completion: Completion, now_ms: i64) -> JoinEvent {
        let launch = self.launches.remove(index);
        self.closed.push(Closed {
            launch_id: launch.launch_id,
            call_key: call_key(&launch.provider_call_id),
            closed_at_ms: now_ms,
        });
        if completion.call_id != launch.provider_call_id {
            // Matched by launch id or time: remember the completion's call too.
            self.closed.push(Closed {
                launch_id: launch.launch_id,
                call_key: call_key(&completion.call_id),
                closed_at_ms: now_ms,
            });
        }
        match (launch.missing, completion.source) {
            (None, _) => JoinEvent::OnTime { launch, completion },
            (Some(_), CallEventSource::Recovery) => JoinEvent::Recovered { launch, completion },
            (Some(_), _) => JoinEvent::Late { launch, completion },
        }
    }

    /// Records an accepted launch, matching a completion that beat it.
    pub fn add_launch(&mut self, launch: Launch, now_ms: i64) -> Vec<JoinEvent> {
        let known = self
            .launches
            .iter()
            .any(|l| l.launch_id == launch.launch_id)
            || self.closed.iter().any(|c| c.launch_id == launch.launch_id);
        if known {
            return vec![JoinEvent::DuplicateLaunch { launch }];
        }
        if self.tenant_id.is_empty() {
            self.tenant_id = launch.tenant_id.clone();
        }
        let waiting = self.early.iter().position(|e| {
            e.call_id == launch.provider_call_id || e.launch_id == Some(launch.launch_id)
        });
        let mut events = vec![JoinEvent::Accepted {
            launch: launch.clone(),
        }];
        self.launches.push(launch);
        if let Some(i) = waiting {
            let completion = self.early.remove(i);
            let index = self.launches.len() - 1;
            events.push(self.resolve(index, completion, now_ms));
        }
        events
    }

    /// Matches a completion (a final call event) by call id, else launch id;
    /// one that names no known launch waits for it.
    pub fn add_completion(&mut self, completion: Completion, now_ms: i64) -> Vec<JoinEvent> {
        if self.is_duplicate(&completion) {
            return vec![JoinEvent::Duplicate { completion }];
        }
        if self.tenant_id.is_empty() {
            self.tenant_id = completion.tenant_id.clone();
        }
        let by_call = self
            .launches
            .iter()
            .position(|l| l.provider_call_id == completion.call_id);
        let by_launch = || {
            self.launches
                .iter()
                .position(|l| Some(l.launch_id) == completion.launch_id)
        };
        match by_call.or_else(by_launch) {
            Some(i) => vec![self.resolve(i, completion, now_ms)],
            None => {
                self.early.push(completion);
                Vec::new()
            }
        }
    }

    /// The earliest launch (by acceptance) whose window holds `at_ms`.
    fn by_time(&self, at_ms: i64, s: &JoinSettings) -> Option<usize> {
        self.launches
            .iter()
            .enumerate()
            .filter(|(_, l)| holds(l, at_ms, s))
            .min_by_key(|(_, l)| l.accepted_at_ms)
            .map(|(i, _)| i)
    }

    /// Handles everything due at `clocks.now_ms`, in due order: deadlines
    /// (a waiting completion the window holds is matched first), completions
    /// whose wait ended, and the forgetting of old cases.
    pub fn advance(&mut self, clocks: Clocks, s: &JoinSettings) -> Vec<JoinEvent> {
        let now = clocks.now_ms;
        let mut events = Vec::new();
        loop {
            let deadline = self
                .launches
                .iter()
                .enumerate()
                .filter(|(_, l)| l.missing.is_none())
                .map(|(i, l)| (l.deadline_ms(), i))
                .min();
            let early = self
                .early
                .iter()
                .enumerate()
                .map(|(i, e)| (e.arrived_at_ms.saturating_add(s.early_grace_ms), i))
                .min();
            match (deadline, early) {
                (Some((due, i)), e) if due <= now && e.is_none_or(|(e, _)| due <= e) => {
                    let waiting = self
                        .early
                        .iter()
                        .position(|c| holds(&self.launches[i], c.occurred_at_ms, s));
                    if let Some(w) = waiting {
                        let completion = self.early.remove(w);
                        events.push(self.resolve(i, completion, now));
                    } else {
                        let launch = &mut self.launches[i];
                        launch.missing = Some(clocks.trigger(due));
                        events.push(JoinEvent::Missing {
                            launch: launch.clone(),
                        });
                    }
                }
                (_, Some((due, i))) if due <= now => {
                    let completion = self.early.remove(i);
                    match self.by_time(completion.occurred_at_ms, s) {
                        Some(l) => events.push(self.resolve(l, completion, now)),
                        None => events.push(JoinEvent::Unmatched { completion }),
                    }
                }
                _ => break,
            }
        }
        let mut i = 0;
        while i < self.launches.len() {
            let l = &self.launches[i];
            if l.missing.is_some() && l.deadline_ms().saturating_add(s.late_retention_ms) <= now {
                let launch = self.launches.remove(i);
                events.push(JoinEvent::Expired { launch });
            } else {
                i += 1;
            }
        }
        self.closed
            .retain(|c| c.closed_at_ms.saturating_add(s.closed_retention_ms) > now);
        events
    }

    /// When `advance` next has something to do.
    pub fn next_due(&self, s: &JoinSettings) -> Option<i64> {
        let launches = self.launches.iter().map(|l| match l.missing {
            None => l.deadline_ms(),
            Some(_) => l.deadline_ms().saturating_add(s.late_retention_ms),
        });
        let early = self
            .early
            .iter()
            .map(|e| e.arrived_at_ms.saturating_add(s.early_grace_ms));
        let closed = self
            .closed
            .iter()
            .map(|c| c.closed_at_ms.saturating_add(s.closed_retention_ms));
        launches.chain(early).chain(closed).min()
    }
}

#[cfg(test)]
#[path = "join_tests.rs"]
mod tests;

//! One channel's outbox: the notifications taken for it, grouped into digests and held
//! through quiet hours, and sent one at a time at the channel's pace, each message with a
//! delivery ledger entry. Pure: the processor passes the time and carries out what a step
//! asks for.
//!
//! Guarantees:
//! - A notification id is taken once (a repeat within `memory` does nothing), and every
//!   one taken is sent, on its own or counted in a digest, or fails for good (an
//!   exception); none is dropped.
//! - One message in flight per channel: a result settles only the send it answers (a
//!   late or repeated result does nothing), and a message is marked sent once.
//! - Sends are at least `interval` apart (the channel's rate limit); a failure waits a
//!   doubling, jittered delay; at `max_attempts` the message fails for good.
//! - Digests: the first notification of a digest key is sent at once and opens a window;
//!   those that follow within it are counted and sent as one message when it ends. In
//!   quiet hours a notification that is not urgent waits in its window until they end.

use std::collections::{BTreeMap, VecDeque};

use callstream_domain::backoff::{seed_of, Backoff};
use callstream_domain::notify::QuietHours;
use callstream_schemas::{Notification, NotificationSeverity};
use chrono::DateTime;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Titles a digest lists before it says "and N more".
const DIGEST_TITLES: usize = 5;

/// A message to send: one notification, or a digest of several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// The ledger's key, and the id receivers see.
    pub message_id: Uuid,
    pub tenant: String,
    pub kind: String,
    pub severity: Severity,
    pub title: String,
    pub text: String,
    pub link: Option<String>,
    /// Notifications it carries (1 unless a digest).
    pub count: u32,
    /// The notification ids it carries (the first few of a digest).
    pub notifications: Vec<Uuid>,
    /// Sends asked for so far.
    pub attempts: u32,
}

/// [`NotificationSeverity`] as the state stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn of(s: NotificationSeverity) -> Self {
        match s {
            NotificationSeverity::Info => Self::Info,
            NotificationSeverity::Critical => Self::Critical,
            NotificationSeverity::Warning | NotificationSeverity::Unknown => Self::Warning,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Critical => "critical",
        }
    }
}

/// A digest window of one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub until_ms: i64,
    /// How long the next window lasts (the tenant's digest setting when it opened).
    pub length_ms: i64,
    /// Notifications held in it.
    pub held: Vec<Held>,
    pub count: u32,
}

/// What a digest keeps of a notification it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub notification_id: Uuid,
    pub tenant: String,
    pub kind: String,
    pub severity: Severity,
    pub title: String,
    pub text: String,
    pub link: Option<String>,
}

/// The send in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InFlight {
    pub message_id: Uuid,
    pub attempt: u32,
    pub asked_ms: i64,
}

/// Everything the notifier keeps for one channel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outbox {
    /// Notification ids taken, with when: a repeat does nothing.
    pub taken: VecDeque<(Uuid, i64)>,
    /// Message ids sent, with when: the delivery ledger.
    pub sent: VecDeque<(Uuid, i64)>,
    pub windows: BTreeMap<String, Window>,
    pub queue: VecDeque<Message>,
    pub in_flight: Option<InFlight>,
    /// The head is not sent before this (the rate limit, or a retry's delay).
    pub not_before_ms: i64,
}

/// What taking a notification did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Queued to send.
    Queued,
    /// Held in its digest window (or quiet hours) until the window ends.
    Held,
    /// Taken before: nothing to do.
    Repeat,
}

/// A send to carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Send {
    pub message: Message,
    pub attempt: u32,
}

/// What a send's result did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    Sent(Message),
    /// Sent again after `at_ms`.
    Retry {
        at_ms: i64,
        reason: String,
    },
    /// Failed for good: the caller opens an exception.
    Failed {
        message: Message,
        reason: String,
    },
    /// Not the send in flight (late, repeated, or already settled).
    Stale,
}

/// How a send ended, as the effect handler reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum SendResult {
    Sent,
    Failed { retriable: bool, reason: String },
}

/// The rules a channel's outbox follows.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// Least time between sends (the channel's rate limit).
    pub interval_ms: i64,
    pub max_attempts: u32,
    pub backoff: Backoff,
    /// A send without a result after this long is sent again.
    pub result_timeout_ms: i64,
    /// How long taken ids and sent ids are remembered.
    pub memory_ms: i64,
}

/// A notification's digest and quiet-hours settings (its tenant's).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub digest_ms: i64,
    pub quiet: Option<QuietHours>,
}

fn held(n: &Notification) -> Held {
    Held {
        notification_id: n.notification_id,
        tenant: n.tenant_id.clone(),
        kind: n.kind.clone(),
        severity: Severity::of(n.severity),
        title: n.title.clone(),
        text: n.text.clone(),
        link: n.link.clone(),
    }
}

fn single(h: &Held, message_id: Uuid) -> Message {
    Message {
        message_id,
        tenant: h.tenant.clone(),
        kind: h.kind.clone(),
        severity: h.severity,
        title: h.title.clone(),
        text: h.text.clone(),
        link: h.link.clone(),
        count: 1,
        notifications: vec![h.notification_id],
        attempts: 0,
    }
}

impl Outbox {
    /// Takes a notification for `channel` at `now_ms` (ending the windows due first).
    pub fn take(&mut self, channel: &str, n: &Notification, timing: Timing, now_ms: i64) -> Taken {
        if self.taken.iter().any(|(id, _)| *id == n.notification_id) {
            return Taken::Repeat;
        }
        self.taken.push_back((n.notification_id, now_ms));
        self.close_windows(channel, now_ms);
        let quiet_end = timing.quiet.filter(|_| !n.urgent).and_then(|q| {
            let now = DateTime::from_timestamp_millis(now_ms)?;
            q.is_quiet(now).then(|| q.next_end(now).timestamp_millis())
        });
        let open = self.windows.contains_key(&n.digest_key);
        if open || quiet_end.is_some() {
            let w = self
                .windows
                .entry(n.digest_key.clone())
                .or_insert_with(|| Window {
                    until_ms: now_ms,
                    length_ms: timing.digest_ms,
                    held: Vec::new(),
                    count: 0,
                });
            if let Some(end) = quiet_end {
                w.until_ms = w.until_ms.max(end);
            }
            hold(w, n);
            return Taken::Held;
        }
        self.queue.push_back(single(&held(n), n.notification_id));
        if timing.digest_ms > 0 {
            self.windows.insert(
                n.digest_key.clone(),
                Window {
                    until_ms: now_ms.saturating_add(timing.digest_ms),
                    length_ms: timing.digest_ms,
                    held: Vec::new(),
                    count: 0,
                },
            );
        }
        Taken::Queued
    }

    /// Ends the windows due by `now_ms`: each that held anything queues its digest (and
    /// opens the next window, so a steady stream sends one message a window); an empty
    /// one closes.
    pub fn close_windows(&mut self, channel: &str, now_ms: i64) {
        let due: Vec<String> = self
            .windows
            .iter()
            .filter(|(_, w)| w.until_ms <= now_ms)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            let Some(w) = self.windows.remove(&key) else {
                continue;
            };
            if w.count == 0 {
                continue;
            }
            self.queue.push_back(digest(channel, &key, &w));
            if w.length_ms > 0 {
                self.windows.insert(
                    key,
                    Window {
                        until_ms: now_ms.saturating_add(w.length_ms),
                        length_ms: w.length_ms,
                        held: Vec::new(),
                        count: 0,
                    },
                );
            }
        }
    }

    /// The next send, if one may go at `now_ms`; marks it in flight.
    pub fn next_send(&mut self, now_ms: i64) -> Option<Send> {
        if self.in_flight.is_some() || now_ms < self.not_before_ms {
            return None;
        }
        let head = self.queue.front_mut()?;
        head.attempts += 1;
        self.in_flight = Some(InFlight {
            message_id: head.message_id,
            attempt: head.attempts,
            asked_ms: now_ms,
        });
        Some(Send {
            message: head.clone(),
            attempt: head.attempts,
        })
    }

    /// Settles the send `(message_id, attempt)` with `result`.
    pub fn settle(
        &mut self,
        message_id: Uuid,
        attempt: u32,
        result: SendResult,
        rules: &Rules,
        now_ms: i64,
    ) -> Settled {
        let answers = self
            .in_flight
            .is_some_and(|f| f.message_id == message_id && f.attempt == attempt);
        if !answers {
            return Settled::Stale;
        }
        self.in_flight = None;
        let Some(attempts) = self.queue.front().map(|h| h.attempts) else {
            return Settled::Stale;
        };
        match result {
            SendResult::Sent => {
                let Some(message) = self.queue.pop_front() else {
                    return Settled::Stale;
                };
                self.sent.push_back((message.message_id, now_ms));
                self.not_before_ms = now_ms.saturating_add(rules.interval_ms);
                Settled::Sent(message)
            }
            SendResult::Failed { retriable, reason }
                if retriable && attempts < rules.max_attempts =>
            {
                let delay = rules
                    .backoff
                    .delay(attempts, seed_of(&message_id))
                    .as_millis();
                let at_ms = now_ms.saturating_add(i64::try_from(delay).unwrap_or(i64::MAX));
                self.not_before_ms = at_ms.max(self.not_before_ms);
                Settled::Retry { at_ms, reason }
            }
            SendResult::Failed { retriable, reason } => {
                let Some(message) = self.queue.pop_front() else {
                    return Settled::Stale;
                };
                self.not_before_ms = now_ms.saturating_add(rules.interval_ms);
                let reason = if retriable {
                    format!("{} attempts, the last: {reason}", message.attempts)
                } else {
                    reason
                };
                Settled::Failed { message, reason }
            }
        }
    }

    /// A send whose result never came (a crash lost it) is failed as retriable, so it is
    /// sent again with the same id; returns what that settled.
    pub fn expire(&mut self, rules: &Rules, now_ms: i64) -> Option<Settled> {
        let f = self.in_flight?;
        if now_ms < f.asked_ms.saturating_add(rules.result_timeout_ms) {
            return None;
        }
        let result = SendResult::Failed {
            retriable: true,
            reason: "no result came back (the notifier restarted?)".into(),
        };
        Some(self.settle(f.message_id, f.attempt, result, rules, now_ms))
    }

    /// When this outbox next needs a step: a window ending, the head's turn, or the
    /// in-flight send's result timeout.
    pub fn next_wake(&self, rules: &Rules) -> Option<i64> {
        let window = self.windows.values().map(|w| w.until_ms).min();
        let send = match self.in_flight {
            Some(f) => Some(f.asked_ms.saturating_add(rules.result_timeout_ms)),
            None => (!self.queue.is_empty()).then_some(self.not_before_ms),
        };
        window.into_iter().chain(send).min()
    }

    /// Forgets ids older than the memory, and windows' bookkeeping is left alone.
    pub fn prune(&mut self, rules: &Rules, now_ms: i64) {
        let horizon = now_ms.saturating_sub(rules.memory_ms);
        while self.taken.front().is_some_and(|(_, at)| *at < horizon) {
            self.taken.pop_front();
        }
        while self.sent.front().is_some_and(|(_, at)| *at < horizon) {
            self.sent.pop_front();
        }
    }

    /// Nothing to keep: the state can be deleted.
    pub fn is_empty(&self) -> bool {
        self.taken.is_empty()
            && self.sent.is_empty()
            && self.windows.is_empty()
            && self.queue.is_empty()
            && self.in_flight.is_none()
    }
}

fn hold(w: &mut Window, n: &Notification) {
    w.count += 1;
    if w.held.len() < DIGEST_TITLES {
        w.held.push(held(n));
    }
}

/// The message a window's held notifications make: the one itself when it held one.
fn digest(channel: &str, key: &str, w: &Window) -> Message {
    let first = &w.held[0];
    let id = callstream_domain::ids::notifier::digest(&first.tenant, channel, key, w.until_ms);
    if w.count == 1 {
        return single(first, id);
    }
    let severity = w
        .held
        .iter()
        .map(|h| h.severity)
        .max_by_key(|s| *s as u8)
        .unwrap_or(Severity::Warning);
    let mut text = format!("{} notifications of {}:\n", w.count, first.kind);
    for h in &w.held {
        text.push_str(&format!("- {}\n", h.title));
    }
    let more = w.count as usize - w.held.len();
    if more > 0 {
        text.push_str(&format!("- and {more} more\n"));
    }
    Message {
        message_id: id,
        tenant: first.tenant.clone(),
        kind: first.kind.clone(),
        severity,
        title: format!(
            "[{}] {} notifications: {}",
            first.tenant, w.count, first.kind
        ),
        text,
        link: first.link.clone(),
        count: w.count,
        notifications: w.held.iter().map(|h| h.notification_id).collect(),
        attempts: 0,
    }
}

#[cfg(test)]
#[path = "outbox_tests.rs"]
mod tests;

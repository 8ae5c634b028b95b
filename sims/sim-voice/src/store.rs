//! The simulator's memory: every call it created (a simulator may keep
//! state in memory; nothing here is a stand-in for Kafka or Postgres), the
//! sliding window of creates behind the burst failure, and the counters of
//! `GET /_sim/stats`.
//!
//! One mutex, held only for short, non-async sections. A reset starts a new
//! generation: calls still playing from before it change neither the new
//! records nor the new counters.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::callback::CallbackTarget;
use crate::plan::{CallStatus, Outcome};
use crate::utterance::Intent;

/// One call as the platform knows it.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub index: u64,
    pub sid: String,
    pub to: String,
    pub from: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub start_time: DateTime<Utc>,
    pub end_time: Option<DateTime<Utc>>,
    pub status: CallStatus,
    /// Set once the call ended (Twilio: null until then).
    pub duration: Option<u32>,
    pub answered_by: Option<&'static str>,
    pub target: Option<CallbackTarget>,
    pub outcome: Outcome,
    pub intent: Option<Intent>,
    pub completion_dropped: bool,
    /// The call ended and the platform lost it: fetch and list skip it.
    pub vanished: bool,
    /// Status callbacks made, for the `Events` subresource.
    pub requests: Vec<SentRequest>,
    /// The event ids the receiver named in its 2xx answers to this call's webhooks (status
    /// callbacks and the analysis): each must be on callstream's `call-events`.
    pub accepted_event_ids: Vec<String>,
}

/// One status callback request made.
#[derive(Debug, Clone)]
pub struct SentRequest {
    pub params: Vec<(String, String)>,
    pub sent_at: DateTime<Utc>,
    /// The receiver's status; None when it never answered.
    pub response_code: Option<u16>,
    pub elapsed_ms: u64,
}

/// The counters of `GET /_sim/stats`.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Stats {
    /// Calls accepted (201, or accepted and answered late).
    pub calls_created: u64,
    /// Creates answered 5xx by the fault (no call made).
    pub creates_failed: u64,
    /// Creates refused 4xx (bad request, auth, unknown account).
    pub creates_rejected: u64,
    /// Creates accepted (counted in `calls_created` too) but answered 502/504.
    pub creates_accepted_then_failed: u64,
    /// Creates accepted whose answer was held back past the client's timeout.
    pub creates_delayed: u64,
    /// Calls still playing out.
    pub calls_active: u64,
    /// Calls the platform lost after dropping their completion.
    pub calls_lost: u64,
    pub calls_by_to: BTreeMap<String, u64>,
    /// By the `launch_id` query parameter of the `StatusCallback` URL.
    pub calls_by_launch: BTreeMap<String, u64>,
    pub outcomes: BTreeMap<&'static str, u64>,
    pub intents: BTreeMap<&'static str, u64>,
    /// Status callback requests made (duplicates count, retries do not).
    pub callbacks_sent: u64,
    /// Of those, answered 2xx (possibly after retries).
    pub callbacks_delivered: u64,
    /// Of those, never answered 2xx.
    pub callbacks_failed: u64,
    /// Final status callbacks never sent (dropped completions).
    pub callbacks_dropped: u64,
    pub callbacks_duplicated: u64,
    pub callbacks_delayed: u64,
    pub callbacks_reordered: u64,
    pub analysis_sent: u64,
    pub analysis_delivered: u64,
    pub analysis_failed: u64,
    pub analysis_dropped: u64,
    pub analysis_duplicated: u64,
    /// Answered calls with no analysis: no analysis URL, or no contact id
    /// in the callback URL.
    pub analysis_skipped: u64,
    /// The most creates ever seen in one burst window.
    pub max_creates_in_burst_window: u64,
}

#[derive(Default)]
struct Inner {
    generation: u64,
    next_index: u64,
    calls: HashMap<String, CallRecord>,
    /// Sids in creation order.
    order: Vec<String>,
    recent_creates: VecDeque<Instant>,
    stats: Stats,
}

/// The store; share it behind an `Arc`.
#[derive(Default)]
pub struct Store(Mutex<Inner>);

impl Store {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves counters, not invariants,
        // half-updated: keep serving rather than poison every request.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the next create index and counts the create in the burst
    /// window. Returns (generation, index, creates in the window).
    pub fn begin_create(&self, now: Instant, window: Duration) -> (u64, u64, u32) {
        let mut g = self.lock();
        let index = g.next_index;
        g.next_index += 1;
        while g
            .recent_creates
            .front()
            .is_some_and(|t| now.duration_since(*t) >= window)
        {
            g.recent_creates.pop_front();
        }
        g.recent_creates.push_back(now);
        let in_window = g.recent_creates.len();
        let max = &mut g.stats.max_creates_in_burst_window;
        *max = (*max).max(in_window as u64);
        (
            g.generation,
            index,
            u32::try_from(in_window).unwrap_or(u32::MAX),
        )
    }

    /// Adds an accepted call and counts it.
    pub fn insert(&self, generation: u64, record: CallRecord) {
        let mut g = self.lock();
        if g.generation != generation {
            return;
        }
        let s = &mut g.stats;
        s.calls_created += 1;
        s.calls_active += 1;
        *s.calls_by_to.entry(record.to.clone()).or_default() += 1;
        if let Some(launch) = record.target.as_ref().and_then(|t| t.launch_id.clone()) {
            *s.calls_by_launch.entry(launch).or_default() += 1;
        }
        *s.outcomes.entry(record.outcome.as_str()).or_default() += 1;
        if let Some(intent) = record.intent {
            *s.intents.entry(intent.as_str()).or_default() += 1;
        }
        g.order.push(record.sid.clone());
        g.calls.insert(record.sid.clone(), record);
    }

    /// Updates the counters, unless a reset happened since `generation`.
    pub fn count(&self, generation: u64, f: impl FnOnce(&mut Stats)) {
        let mut g = self.lock();
        if g.generation == generation {
            f(&mut g.stats);
        }
    }

    /// Updates the counters of the current generation.
    pub fn count_now(&self, f: impl FnOnce(&mut Stats)) {
        f(&mut self.lock().stats);
    }

    /// Changes one call, unless a reset happened since `generation`.
    pub fn update<R>(
        &self,
        generation: u64,
        sid: &str,
        f: impl FnOnce(&mut CallRecord) -> R,
    ) -> Option<R> {
        let mut g = self.lock();
        if g.generation != generation {
            return None;
        }
        g.calls.get_mut(sid).map(f)
    }

    /// A call the API can see.
    pub fn get(&self, sid: &str) -> Option<CallRecord> {
        let g = self.lock();
        g.calls.get(sid).filter(|c| !c.vanished).cloned()
    }

    /// Visible calls matching `keep`, newest first.
    pub fn select(&self, keep: impl Fn(&CallRecord) -> bool) -> Vec<CallRecord> {
        let g = self.lock();
        g.order
            .iter()
            .rev()
            .filter_map(|sid| g.calls.get(sid))
            .filter(|c| !c.vanished && keep(c))
            .cloned()
            .collect()
    }

    /// Every call, lost ones included, oldest first (`GET /_sim/calls`).
    pub fn all(&self) -> Vec<CallRecord> {
        let g = self.lock();
        g.order
            .iter()
            .filter_map(|sid| g.calls.get(sid))
            .cloned()
            .collect()
    }

    pub fn stats(&self) -> Stats {
        self.lock().stats.clone()
    }

    /// Forgets every call and counter; the create index starts again at 0,
    /// so a reset simulator with the same seed repeats its choices.
    pub fn reset(&self) {
        let mut g = self.lock();
        let generation = g.generation + 1;
        *g = Inner {
            generation,
            ..Inner::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_window_slides() {
        let store = Store::default();
        let t0 = Instant::now();
        let w = Duration::from_millis(1000);
        let at = |ms| t0 + Duration::from_millis(ms);
        let cases = [
            (0, 1),
            (100, 2),
            (999, 3),
            (1000, 3),
            (1150, 3),
            (2100, 2),
            (9000, 1),
        ];
        for (ms, want) in cases {
            let (_, _, n) = store.begin_create(at(ms), w);
            assert_eq!(n, want, "at {ms} ms");
        }
        assert_eq!(store.stats().max_creates_in_burst_window, 3);
    }

    #[test]
    fn reset_ignores_the_old_generation() {
        let store = Store::default();
        let (gen, index, _) = store.begin_create(Instant::now(), Duration::from_secs(1));
        assert_eq!(index, 0);
        store.reset();
        store.count(gen, |s| s.callbacks_sent += 1);
        assert_eq!(store.stats(), Stats::default());
        let (gen2, index2, _) = store.begin_create(Instant::now(), Duration::from_secs(1));
        assert_eq!((index2, gen2), (0, gen + 1));
    }
}

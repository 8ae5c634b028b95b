//! Duplicate detection for one contact's events, with bounded memory.
//!
//! An event is a duplicate when its event id was seen before, or when it
//! reports a call id and outcome pair seen before (a provider that resends
//! the same status under a new delivery id, or the recovery path re-reading
//! a result the live path already delivered).
//!
//! The bound: the last `capacity` distinct event ids and the last
//! `capacity` distinct (call id, outcome) pairs, each kept as a 16-byte
//! UUIDv5 digest, oldest forgotten first (default 32 each, about 1 KiB per
//! contact). A redelivery older than that is not recognised here; the
//! workflow's step check is the second line of defence, rejecting an event
//! of a finished step as stale.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::normaliser::Outcome;

/// How many event ids, and separately how many (call id, outcome) pairs,
/// a [`Deduplicator`] remembers unless told otherwise.
pub const DEFAULT_DEDUPE_CAPACITY: usize = 32;

/// What [`Deduplicator::observe`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DedupeVerdict {
    /// Not seen before; now remembered.
    New,
    /// The same event id was seen before.
    DuplicateEventId,
    /// Another event already reported this call id with this outcome.
    DuplicateCallOutcome,
}

impl DedupeVerdict {
    pub fn is_duplicate(self) -> bool {
        self != DedupeVerdict::New
    }
}

/// The recently seen keys of one contact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deduplicator {
    capacity: usize,
    event_ids: VecDeque<Uuid>,
    call_outcomes: VecDeque<Uuid>,
}

impl Default for Deduplicator {
    fn default() -> Self {
        Self::new(DEFAULT_DEDUPE_CAPACITY)
    }
}

impl Deduplicator {
    /// Remembers up to `capacity` keys of each kind (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Deduplicator {
            capacity,
            event_ids: VecDeque::with_capacity(capacity),
            call_outcomes: VecDeque::with_capacity(capacity),
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether the event was seen, without remembering it.
    pub fn check(&self, event_id: &str, call: Option<(&str, Outcome)>) -> DedupeVerdict {
        if self.event_ids.contains(&event_key(event_id)) {
            return DedupeVerdict::DuplicateEventId;
        }
        if let Some((call_id, outcome)) = call {
            if self.call_outcomes.contains(&call_key(call_id, outcome)) {
                return DedupeVerdict::DuplicateCallOutcome;
            }
        }
        DedupeVerdict::New
    }

    /// Checks the event and, when it is new, remembers its keys. A duplicate
    /// changes nothing, so observing it twice gives the same answer twice.
    pub fn observe(&mut self, event_id: &str, call: Option<(&str, Outcome)>) -> DedupeVerdict {
        let verdict = self.check(event_id, call);
        if verdict == DedupeVerdict::New {
            push_bounded(&mut self.event_ids, event_key(event_id), self.capacity);
            if let Some((call_id, outcome)) = call {
                push_bounded(
                    &mut self.call_outcomes,
                    call_key(call_id, outcome),
                    self.capacity,
                );
            }
        }
        verdict
    }

    /// How many keys are remembered (event ids, call/outcome pairs).
    pub fn len(&self) -> (usize, usize) {
        (self.event_ids.len(), self.call_outcomes.len())
    }

    pub fn is_empty(&self) -> bool {
        self.event_ids.is_empty() && self.call_outcomes.is_empty()
    }
}

fn push_bounded(keys: &mut VecDeque<Uuid>, key: Uuid, capacity: usize) {
    // Stored state may come from a build with a larger capacity (or, if
    // hand-edited, a zero one): trim to the bound, never below one key.
    while keys.len() >= capacity.max(1) {
        keys.pop_front();
    }
    keys.push_back(key);
}

fn event_key(event_id: &str) -> Uuid {
    crate::ids::dedupe::event(event_id)
}

fn call_key(call_id: &str, outcome: Outcome) -> Uuid {
    crate::ids::dedupe::call_outcome(call_id, outcome.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_by_event_id_or_by_call_and_outcome() {
        let mut d = Deduplicator::default();
        let steps = [
            ("ev-1", Some(("CA1", Outcome::Ringing)), DedupeVerdict::New),
            (
                "ev-1",
                Some(("CA1", Outcome::Ringing)),
                DedupeVerdict::DuplicateEventId,
            ),
            // Same event id, different payload: still the same delivery.
            (
                "ev-1",
                Some(("CA1", Outcome::Answered)),
                DedupeVerdict::DuplicateEventId,
            ),
            ("ev-2", Some(("CA1", Outcome::Answered)), DedupeVerdict::New),
            // Redelivered under a new id (or by recovery): same call, same outcome.
            (
                "ev-3",
                Some(("CA1", Outcome::Answered)),
                DedupeVerdict::DuplicateCallOutcome,
            ),
            // Same call, a different outcome is news (the workflow judges it).
            (
                "ev-4",
                Some(("CA1", Outcome::Voicemail)),
                DedupeVerdict::New,
            ),
            ("ev-5", Some(("CA2", Outcome::Answered)), DedupeVerdict::New),
            ("cmd-1", None, DedupeVerdict::New),
            ("cmd-1", None, DedupeVerdict::DuplicateEventId),
        ];
        for (i, (id, call, expected)) in steps.into_iter().enumerate() {
            assert_eq!(d.observe(id, call), expected, "step {i}: {id}");
        }
        // Duplicates left nothing behind: 5 new ids, 4 new pairs.
        assert_eq!(d.len(), (5, 4));
    }

    #[test]
    fn memory_is_bounded_and_forgets_the_oldest_first() {
        let mut d = Deduplicator::new(3);
        for i in 0..10 {
            let id = format!("ev-{i}");
            let call = format!("CA{i}");
            assert_eq!(
                d.observe(&id, Some((&call, Outcome::Busy))),
                DedupeVerdict::New
            );
            assert!(d.len().0 <= 3 && d.len().1 <= 3);
        }
        assert_eq!(d.len(), (3, 3));
        // The last three are remembered, the older ones forgotten.
        assert_eq!(d.check("ev-9", None), DedupeVerdict::DuplicateEventId);
        assert_eq!(d.check("ev-7", None), DedupeVerdict::DuplicateEventId);
        assert_eq!(d.check("ev-6", None), DedupeVerdict::New);
        assert_eq!(
            d.check("new", Some(("CA8", Outcome::Busy))),
            DedupeVerdict::DuplicateCallOutcome
        );
        assert_eq!(
            d.check("new", Some(("CA2", Outcome::Busy))),
            DedupeVerdict::New
        );
    }

    #[test]
    fn call_keys_are_unambiguous() {
        assert_ne!(
            call_key("ab", Outcome::Busy),
            call_key("a", Outcome::Busy),
            "different call ids"
        );
        assert_ne!(event_key("CA1"), call_key("CA1", Outcome::Busy));
    }

    #[test]
    fn survives_a_serde_round_trip() {
        let mut d = Deduplicator::new(4);
        d.observe("ev-1", Some(("CA1", Outcome::NoAnswer)));
        let json = serde_json::to_string(&d).unwrap();
        let back: Deduplicator = serde_json::from_str(&json).unwrap();
        assert_eq!(back, d);
        assert_eq!(back.check("ev-1", None), DedupeVerdict::DuplicateEventId);
    }
}

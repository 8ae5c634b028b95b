//! Intersecting availabilities (the campaign's calling window, the state
//! rules, the frequency caps), and placing a planned call with the rule
//! that moved it as the reason.
//!
//! Guarantees: [`AllOf`] allows an instant only if every part does, and its
//! `next_allowed` is the earliest such instant at or after the one asked
//! (each part's answer is its earliest allowed instant, so moving to the
//! latest answer until all agree skips nothing). [`place`] never returns
//! an instant earlier than planned.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{CapWindow, RuleWindow, Violation};
use crate::Availability;

/// Guard against parts that never agree (they always do eventually, or
/// one of them answers `None`): give up, which holds the call.
const MAX_ROUNDS: usize = 100_000;

/// Every part must allow an instant.
#[derive(Clone, Copy)]
pub struct AllOf<'a>(pub &'a [&'a dyn Availability]);

impl Availability for AllOf<'_> {
    fn is_allowed(&self, at: DateTime<Utc>) -> bool {
        self.0.iter().all(|p| p.is_allowed(at))
    }

    fn next_allowed(&self, at: DateTime<Utc>, horizon: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let mut t = at;
        for _ in 0..MAX_ROUNDS {
            let mut moved = false;
            for part in self.0 {
                let next = part.next_allowed(t, horizon)?;
                if next > t {
                    t = next;
                    moved = true;
                }
            }
            if !moved {
                return Some(t);
            }
        }
        None
    }
}

/// Where a planned call goes under the rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RulePlacement {
    /// The planned instant is allowed: keep it.
    Allowed { at: DateTime<Utc> },
    /// Moved to the first instant everything allows. `because` is the rule
    /// that refused the planned instant, or `None` when only the campaign
    /// window did (the scheduler's own reason applies then).
    Moved {
        at: DateTime<Utc>,
        because: Option<Violation>,
    },
    /// Nothing allows a call by the horizon.
    NoOpening { because: Option<Violation> },
}

/// Places a call planned at `planned`: kept if the campaign window, the
/// time rules and the caps all allow it, else moved to the first instant
/// (not before `planned`, not after `horizon`) they all allow.
pub fn place(
    window: &dyn Availability,
    rules: &RuleWindow,
    caps: &CapWindow,
    planned: DateTime<Utc>,
    horizon: DateTime<Utc>,
) -> RulePlacement {
    let because = rules
        .check(planned)
        .err()
        .or_else(|| caps.check(planned).err().map(|hit| hit.violation));
    if because.is_none() && planned <= horizon && window.is_allowed(planned) {
        return RulePlacement::Allowed { at: planned };
    }
    let parts: [&dyn Availability; 3] = [window, rules, caps];
    match AllOf(&parts).next_allowed(planned, horizon) {
        Some(at) => RulePlacement::Moved { at, because },
        None => RulePlacement::NoOpening { because },
    }
}

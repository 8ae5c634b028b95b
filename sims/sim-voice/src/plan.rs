//! How one call plays out, decided in full when it is created: outcome,
//! status timeline, the deliveries (status callbacks and the analysis)
//! with their send times, and every fault. Pure: [`plan`] takes the
//! behaviour and a table of uniform draws, so it is tested without a clock
//! or a socket, and the I/O in `playout` only carries the plan out.
//!
//! Guarantees:
//! - Status transitions are in time order and end with exactly one final
//!   status; sequence numbers follow the transitions (0, 1, ...).
//! - A delivery is never sent before the event it reports.
//! - A dropped completion removes the final callback and the analysis,
//!   nothing else; a lost call is always one whose completion was dropped.
//! - Every decision reads its own draw slot, so switching one fault on or
//!   off changes no other decision of the same seed.

use rand::Rng;

use crate::config::Behaviour;
use crate::utterance::Intent;

pub use crate::model::{Amd, CallStatus, Event, EventSet, Outcome};

/// What happens to the create request itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateFault {
    None,
    /// Answered with this 5xx status; no call exists.
    Error(u16),
    /// Accepted (the call plays out) but answered `create_slow_ms` late.
    Slow,
    /// Accepted (the call plays out) but answered with this 5xx, as a proxy
    /// or load balancer in front of the platform does when its upstream
    /// answer is lost (502) or late (504).
    AcceptedThenError(u16),
}

/// One status change, at `at` simulated seconds after the create.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    pub at: f64,
    pub status: CallStatus,
}

/// What a delivery carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// The status callback of `transitions[transition]`.
    Status { transition: usize, sequence: u32 },
    /// The end-of-call analysis.
    Analysis,
}

/// One HTTP request the call will make, at `send_at` simulated seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delivery {
    pub send_at: f64,
    pub payload: Payload,
    pub duplicate: bool,
    pub delayed: bool,
    pub reordered: bool,
}

/// The whole life of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallPlan {
    pub outcome: Outcome,
    pub transitions: Vec<Transition>,
    /// In send order.
    pub deliveries: Vec<Delivery>,
    /// Talk time (answer to hang-up), whole seconds rounded up; 0 unanswered.
    pub duration_secs: u32,
    pub answered_by: Option<&'static str>,
    /// The lead's intent and which of its phrases they used (answered by a
    /// person only).
    pub intent: Option<(Intent, usize)>,
    pub completion_dropped: bool,
    pub lost: bool,
    /// The final callback was subscribed to and then dropped.
    pub dropped_callback: bool,
    /// The analysis would have been sent and was dropped.
    pub dropped_analysis: bool,
}

impl CallPlan {
    pub fn final_transition(&self) -> &Transition {
        // `plan` always ends the timeline with a final status.
        &self.transitions[self.transitions.len() - 1]
    }
}

/// What a plan depends on besides the behaviour.
#[derive(Debug, Clone, Copy)]
pub struct PlanInput {
    /// Creates in the burst window, this one included.
    pub in_window: u32,
    /// Events the `StatusCallback` subscribed to (NONE without a callback).
    pub events: EventSet,
    pub amd: Amd,
    /// An analysis can be sent (a URL is configured and the contact known).
    pub analysis: bool,
}

/// Uniform draws in `[0, 1)`, one slot per decision.
#[derive(Debug, Clone)]
pub struct Draws(pub [f64; DRAWS]);

pub const DRAWS: usize = 40;
const CREATE_ERROR: usize = 0;
const ERROR_CODE: usize = 1;
const CREATE_SLOW: usize = 2;
const OUTCOME: usize = 3;
const QUEUE: usize = 4;
const DIAL: usize = 5;
const RING: usize = 6;
const TALK: usize = 7;
const DROP: usize = 8;
const LOST: usize = 9;
const INTENT: usize = 10;
const PHRASE: usize = 11;
/// Per delivery slot (4 callback events, then the analysis): 5 draws.
const DELIVERY: usize = 12;
const ANALYSIS_SLOT: usize = 4;
/// After the deliveries' 25 draws (12..37).
const ACCEPTED_THEN_ERROR: usize = 37;

impl Draws {
    pub fn from_rng(rng: &mut impl Rng) -> Self {
        let mut d = [0.0; DRAWS];
        for slot in &mut d {
            *slot = rng.random::<f64>();
        }
        Draws(d)
    }

    fn delivery(&self, slot: usize, k: usize) -> f64 {
        self.0[DELIVERY + slot * 5 + k]
    }
}

/// The index `u` falls on when `[0, 1)` is cut in proportion to `weights`.
pub fn weighted(weights: &[f64], u: f64) -> usize {
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    for (i, w) in weights.iter().enumerate() {
        acc += w / total;
        if u < acc && *w > 0.0 {
            return i;
        }
    }
    // Rounding left `u` past the last boundary: the last weighted entry.
    weights.iter().rposition(|w| *w > 0.0).unwrap_or(0)
}

/// The burst failure: the drop probability of a call created with
/// `in_window` creates in the window.
pub fn drop_probability(b: &Behaviour, in_window: u32) -> f64 {
    let excess = f64::from(in_window.saturating_sub(b.burst_threshold));
    (b.completion_drop_share + b.burst_drop_per_call * excess).clamp(0.0, 1.0)
}

/// What happens to the create request.
pub fn create_fault(b: &Behaviour, d: &Draws) -> CreateFault {
    if d.0[CREATE_ERROR] < b.create_error_share {
        let status = if d.0[ERROR_CODE] < 0.5 { 500 } else { 503 };
        CreateFault::Error(status)
    } else if d.0[ACCEPTED_THEN_ERROR] < b.create_accepted_then_error_share {
        let status = if d.0[ERROR_CODE] < 0.5 { 502 } else { 504 };
        CreateFault::AcceptedThenError(status)
    } else if d.0[CREATE_SLOW] < b.create_slow_share {
        CreateFault::Slow
    } else {
        CreateFault::None
    }
}

fn between(min: f64, max: f64, u: f64) -> f64 {
    min + (max - min) * u
}

/// Plans a call that was accepted.
pub fn plan(b: &Behaviour, input: PlanInput, d: &Draws) -> CallPlan {
    let outcome = Outcome::ALL[weighted(&b.outcome_weights(), d.0[OUTCOME])];
    let initiated = 0.1 + 0.9 * d.0[QUEUE];
    let ringing = initiated + 0.5 + 1.5 * d.0[DIAL];
    let answered = ringing + between(b.ring_secs_min, b.ring_secs_max, d.0[RING]);
    let talk = match outcome {
        Outcome::Human => between(b.talk_secs_min, b.talk_secs_max, d.0[TALK]),
        Outcome::Voicemail => between(b.voicemail_secs_min, b.voicemail_secs_max, d.0[TALK]),
        _ => 0.0,
    };
    let steps: Vec<(f64, CallStatus)> = match outcome {
        Outcome::Human | Outcome::Voicemail => vec![
            (initiated, CallStatus::Initiated),
            (ringing, CallStatus::Ringing),
            (answered, CallStatus::InProgress),
            (answered + talk, CallStatus::Completed),
        ],
        Outcome::NoAnswer => vec![
            (initiated, CallStatus::Initiated),
            (ringing, CallStatus::Ringing),
            (ringing + b.no_answer_secs, CallStatus::NoAnswer),
        ],
        Outcome::Busy => vec![
            (initiated, CallStatus::Initiated),
            (ringing + d.0[RING] * 2.0, CallStatus::Busy),
        ],
        Outcome::Failed => vec![
            (initiated, CallStatus::Initiated),
            (ringing, CallStatus::Failed),
        ],
    };
    let transitions: Vec<Transition> = steps
        .iter()
        .map(|&(at, status)| Transition { at, status })
        .collect();
    let end_at = steps[steps.len() - 1].0;

    let completion_dropped = d.0[DROP] < drop_probability(b, input.in_window);
    let lost = completion_dropped && d.0[LOST] < b.lost_call_share;
    let answered_by = match (outcome, input.amd) {
        (_, Amd::Off) => None,
        (Outcome::Human, _) => Some("human"),
        (Outcome::Voicemail, Amd::Enable) => Some("machine_start"),
        (Outcome::Voicemail, Amd::DetectMessageEnd) => Some("machine_end_beep"),
        _ => None,
    };
    let intent = (outcome == Outcome::Human).then(|| {
        let intent = Intent::ALL[weighted(&b.intent_weights(), d.0[INTENT])];
        (intent, intent.phrase_index(d.0[PHRASE]))
    });

    // Deliveries at their event times, with their slot for fault draws.
    let mut planned: Vec<(usize, Delivery)> = Vec::new();
    let mut sequence = 0;
    let mut dropped_callback = false;
    for (i, t) in transitions.iter().enumerate() {
        let Some(event) = t.status.event() else {
            continue;
        };
        if !input.events.contains(event) {
            continue;
        }
        let seq = sequence;
        sequence += 1;
        if t.status.is_final() && completion_dropped {
            dropped_callback = true;
            continue;
        }
        let payload = Payload::Status {
            transition: i,
            sequence: seq,
        };
        planned.push((event.slot(), delivery(t.at, payload)));
    }
    let wants_analysis = input.analysis && intent.is_some();
    if wants_analysis && !completion_dropped {
        let at = end_at + b.analysis_delay_secs;
        planned.push((ANALYSIS_SLOT, delivery(at, Payload::Analysis)));
    }
    let deliveries = apply_delivery_faults(b, d, planned);

    CallPlan {
        outcome,
        transitions,
        deliveries,
        duration_secs: talk.ceil() as u32,
        answered_by,
        intent,
        completion_dropped,
        lost,
        dropped_callback,
        dropped_analysis: wants_analysis && completion_dropped,
    }
}

fn delivery(send_at: f64, payload: Payload) -> Delivery {
    Delivery {
        send_at,
        payload,
        duplicate: false,
        delayed: false,
        reordered: false,
    }
}

/// Delay, then hold back past the next delivery, then duplicate.
fn apply_delivery_faults(
    b: &Behaviour,
    d: &Draws,
    mut planned: Vec<(usize, Delivery)>,
) -> Vec<Delivery> {
    for (slot, del) in &mut planned {
        if d.delivery(*slot, 0) < b.delay_share {
            del.send_at += d.delivery(*slot, 1) * b.delay_secs_max;
            del.delayed = true;
        }
    }
    planned.sort_by(|a, b| a.1.send_at.total_cmp(&b.1.send_at));
    for i in 0..planned.len().saturating_sub(1) {
        let slot = planned[i].0;
        if d.delivery(slot, 2) < b.reorder_share {
            // Just after the next one: the receiver sees them swapped.
            planned[i].1.send_at = planned[i + 1].1.send_at + 0.01;
            planned[i].1.reordered = true;
        }
    }
    let mut out: Vec<Delivery> = Vec::with_capacity(planned.len() * 2);
    for (slot, del) in &planned {
        out.push(*del);
        if d.delivery(*slot, 3) < b.duplicate_share {
            out.push(Delivery {
                send_at: del.send_at + 0.05 + 0.5 * d.delivery(*slot, 4),
                duplicate: true,
                ..*del
            });
        }
    }
    out.sort_by(|a, b| a.send_at.total_cmp(&b.send_at));
    out
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

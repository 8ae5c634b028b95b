//! The words of a call: how it ends ([`Outcome`]), Twilio's statuses
//! ([`CallStatus`]), the `StatusCallbackEvent` names ([`Event`], and the
//! set a call subscribed to), and the `MachineDetection` mode ([`Amd`]).
//! Names are Twilio's exactly, so they go on the wire as they are.

use serde::Serialize;

/// How a call ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Human,
    Voicemail,
    NoAnswer,
    Busy,
    Failed,
}

impl Outcome {
    /// In the order of [`Behaviour::outcome_weights`].
    pub const ALL: [Outcome; 5] = [
        Outcome::Human,
        Outcome::Voicemail,
        Outcome::NoAnswer,
        Outcome::Busy,
        Outcome::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Human => "human",
            Outcome::Voicemail => "voicemail",
            Outcome::NoAnswer => "no_answer",
            Outcome::Busy => "busy",
            Outcome::Failed => "failed",
        }
    }
}

/// Twilio's call statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum CallStatus {
    Queued,
    Initiated,
    Ringing,
    InProgress,
    Completed,
    Busy,
    NoAnswer,
    Failed,
}

impl CallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Queued => "queued",
            CallStatus::Initiated => "initiated",
            CallStatus::Ringing => "ringing",
            CallStatus::InProgress => "in-progress",
            CallStatus::Completed => "completed",
            CallStatus::Busy => "busy",
            CallStatus::NoAnswer => "no-answer",
            CallStatus::Failed => "failed",
        }
    }

    /// Reads Twilio's name of a status (the `Status` list filter).
    pub fn parse(s: &str) -> Option<Self> {
        [
            CallStatus::Queued,
            CallStatus::Initiated,
            CallStatus::Ringing,
            CallStatus::InProgress,
            CallStatus::Completed,
            CallStatus::Busy,
            CallStatus::NoAnswer,
            CallStatus::Failed,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }

    pub fn is_final(self) -> bool {
        matches!(
            self,
            CallStatus::Completed | CallStatus::Busy | CallStatus::NoAnswer | CallStatus::Failed
        )
    }

    /// The `StatusCallbackEvent` that subscribes to this status.
    pub fn event(self) -> Option<Event> {
        match self {
            CallStatus::Queued => None,
            CallStatus::Initiated => Some(Event::Initiated),
            CallStatus::Ringing => Some(Event::Ringing),
            CallStatus::InProgress => Some(Event::Answered),
            _ => Some(Event::Completed),
        }
    }
}

/// A `StatusCallbackEvent` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    Initiated,
    Ringing,
    Answered,
    Completed,
}

impl Event {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "initiated" => Some(Event::Initiated),
            "ringing" => Some(Event::Ringing),
            "answered" => Some(Event::Answered),
            "completed" => Some(Event::Completed),
            _ => None,
        }
    }

    pub(crate) fn slot(self) -> usize {
        self as usize
    }
}

/// Which events a call's `StatusCallback` gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSet(pub [bool; 4]);

impl EventSet {
    /// Twilio's default without `StatusCallbackEvent`: only `completed`.
    pub const DEFAULT: EventSet = EventSet([false, false, false, true]);
    pub const ALL: EventSet = EventSet([true; 4]);
    pub const NONE: EventSet = EventSet([false; 4]);

    pub fn contains(self, e: Event) -> bool {
        self.0[e.slot()]
    }

    pub fn insert(&mut self, e: Event) {
        self.0[e.slot()] = true;
    }
}

/// The `MachineDetection` parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amd {
    Off,
    Enable,
    DetectMessageEnd,
}

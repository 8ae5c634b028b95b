//! The one status normaliser: every provider's call status, in its own
//! vocabulary, becomes one of callstream's [`Outcome`]s here and nowhere else.
//!
//! The live webhook path and the recovery path (which reads the call record
//! from the provider) call the same [`normalise`], so a call can never mean
//! two different things depending on how its status arrived.
//!
//! Guarantees: the mapping is total over each provider's documented
//! vocabulary, matching is case-insensitive and tolerant of `-`/`_`/space
//! spelling differences, and anything else is a typed [`NormaliseError`],
//! never a panic and never a silent default.

use serde::{Deserialize, Serialize};
use thiserror::Error;

mod event;
pub use event::{event_outcome, provider_status};

/// What happened to a call, in callstream's own vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Queued,
    Ringing,
    InProgress,
    /// A person answered (or the provider could not tell and the call connected).
    Answered,
    /// An answering machine or voicemail box took the call.
    Voicemail,
    NoAnswer,
    Busy,
    /// The provider could not place or complete the call.
    Failed,
    Canceled,
}

impl Outcome {
    /// Every outcome, in declaration order (for tables and tests).
    pub const ALL: [Outcome; 9] = [
        Outcome::Queued,
        Outcome::Ringing,
        Outcome::InProgress,
        Outcome::Answered,
        Outcome::Voicemail,
        Outcome::NoAnswer,
        Outcome::Busy,
        Outcome::Failed,
        Outcome::Canceled,
    ];

    /// Whether the call is over: no later status can follow a final one.
    pub fn is_final(self) -> bool {
        !matches!(
            self,
            Outcome::Queued | Outcome::Ringing | Outcome::InProgress
        )
    }

    /// The canonical snake_case name (also the JSON format's canonical value).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Queued => "queued",
            Outcome::Ringing => "ringing",
            Outcome::InProgress => "in_progress",
            Outcome::Answered => "answered",
            Outcome::Voicemail => "voicemail",
            Outcome::NoAnswer => "no_answer",
            Outcome::Busy => "busy",
            Outcome::Failed => "failed",
            Outcome::Canceled => "canceled",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider's status as it arrived (webhook field or call record field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderStatus<'a> {
    /// Twilio: `CallStatus` and, when answering-machine detection ran,
    /// `AnsweredBy` (absent or empty when it did not).
    Twilio {
        call_status: &'a str,
        answered_by: Option<&'a str>,
    },
    /// The JSON (Standard Webhooks) voice platform: its `outcome` field.
    Json { outcome: &'a str },
}

/// Why a provider status could not be mapped. Not retriable: the same input
/// always fails, so the caller should dead-letter or raise an exception.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NormaliseError {
    #[error("unknown Twilio CallStatus {0:?}")]
    UnknownTwilioStatus(String),
    #[error("unknown Twilio AnsweredBy {0:?}")]
    UnknownAnsweredBy(String),
    #[error("unknown call outcome {0:?}")]
    UnknownOutcome(String),
    #[error("no status vocabulary for provider {0:?}")]
    UnknownProvider(String),
}

/// Twilio's `CallStatus` vocabulary (status callbacks and the Call resource).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TwilioCallStatus {
    Queued,
    Initiated,
    Ringing,
    InProgress,
    Completed,
    Busy,
    Failed,
    NoAnswer,
    Canceled,
}

impl TwilioCallStatus {
    pub const ALL: [TwilioCallStatus; 9] = [
        TwilioCallStatus::Queued,
        TwilioCallStatus::Initiated,
        TwilioCallStatus::Ringing,
        TwilioCallStatus::InProgress,
        TwilioCallStatus::Completed,
        TwilioCallStatus::Busy,
        TwilioCallStatus::Failed,
        TwilioCallStatus::NoAnswer,
        TwilioCallStatus::Canceled,
    ];

    /// Parses Twilio's spelling (`in-progress`, `no-answer`, ...).
    pub fn parse(raw: &str) -> Result<Self, NormaliseError> {
        let status = match token(raw).as_str() {
            "queued" => Self::Queued,
            "initiated" => Self::Initiated,
            "ringing" => Self::Ringing,
            "in_progress" => Self::InProgress,
            "completed" => Self::Completed,
            "busy" => Self::Busy,
            "failed" => Self::Failed,
            "no_answer" => Self::NoAnswer,
            // Twilio spells it "canceled"; accept the British spelling too.
            "canceled" | "cancelled" => Self::Canceled,
            _ => return Err(NormaliseError::UnknownTwilioStatus(clip(raw))),
        };
        Ok(status)
    }
}

/// Twilio's `AnsweredBy` vocabulary (answering-machine detection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnsweredBy {
    Human,
    MachineStart,
    MachineEndBeep,
    MachineEndSilence,
    MachineEndOther,
    Fax,
    Unknown,
}

impl AnsweredBy {
    pub const ALL: [AnsweredBy; 7] = [
        AnsweredBy::Human,
        AnsweredBy::MachineStart,
        AnsweredBy::MachineEndBeep,
        AnsweredBy::MachineEndSilence,
        AnsweredBy::MachineEndOther,
        AnsweredBy::Fax,
        AnsweredBy::Unknown,
    ];

    /// Parses Twilio's spelling; an absent or blank value is `Ok(None)`
    /// (detection was not enabled for the call).
    pub fn parse(raw: Option<&str>) -> Result<Option<Self>, NormaliseError> {
        let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
            return Ok(None);
        };
        let by = match token(raw).as_str() {
            "human" => Self::Human,
            "machine_start" => Self::MachineStart,
            "machine_end_beep" => Self::MachineEndBeep,
            "machine_end_silence" => Self::MachineEndSilence,
            "machine_end_other" => Self::MachineEndOther,
            "fax" => Self::Fax,
            "unknown" => Self::Unknown,
            _ => return Err(NormaliseError::UnknownAnsweredBy(clip(raw))),
        };
        Ok(Some(by))
    }
}

/// Maps a provider status to callstream's outcome. The only status mapping
/// in callstream: the live path and the recovery path both call it.
pub fn normalise(status: ProviderStatus<'_>) -> Result<Outcome, NormaliseError> {
    match status {
        ProviderStatus::Twilio {
            call_status,
            answered_by,
        } => {
            // Both fields are parsed before mapping so an unknown AnsweredBy
            // is reported even on statuses that ignore it: a new value means
            // the provider's vocabulary changed and someone should look.
            let status = TwilioCallStatus::parse(call_status)?;
            let by = AnsweredBy::parse(answered_by)?;
            Ok(twilio(status, by))
        }
        ProviderStatus::Json { outcome } => json_outcome(outcome),
    }
}

/// The Twilio mapping. `AnsweredBy` only decides between answered, voicemail
/// and no-answer once the call has completed; before that the call is still
/// in flight, and busy/failed/no-answer/canceled never connected at all.
pub fn twilio(status: TwilioCallStatus, answered_by: Option<AnsweredBy>) -> Outcome {
    match status {
        TwilioCallStatus::Queued | TwilioCallStatus::Initiated => Outcome::Queued,
        TwilioCallStatus::Ringing => Outcome::Ringing,
        TwilioCallStatus::InProgress => Outcome::InProgress,
        TwilioCallStatus::Busy => Outcome::Busy,
        TwilioCallStatus::Failed => Outcome::Failed,
        TwilioCallStatus::NoAnswer => Outcome::NoAnswer,
        TwilioCallStatus::Canceled => Outcome::Canceled,
        TwilioCallStatus::Completed => match answered_by {
            Some(
                AnsweredBy::MachineStart
                | AnsweredBy::MachineEndBeep
                | AnsweredBy::MachineEndSilence
                | AnsweredBy::MachineEndOther,
            ) => Outcome::Voicemail,
            // A fax line never reaches the lead; treating it as no-answer
            // keeps it on the bounded retry-then-advance path instead of
            // the provider-failure backoff meant for platform errors.
            Some(AnsweredBy::Fax) => Outcome::NoAnswer,
            // Detection off (None) or undecided (Unknown): the call
            // connected, so it counts as answered; the call analysis
            // decides what happens next.
            Some(AnsweredBy::Human | AnsweredBy::Unknown) | None => Outcome::Answered,
        },
    }
}

/// The JSON platform's `outcome` vocabulary: the canonical names are
/// [`Outcome::as_str`]; common aliases are accepted case-insensitively.
pub fn json_outcome(raw: &str) -> Result<Outcome, NormaliseError> {
    let outcome = match token(raw).as_str() {
        "queued" | "initiated" | "dialing" | "pending" => Outcome::Queued,
        "ringing" | "in_queue_ringing" => Outcome::Ringing,
        "in_progress" | "inprogress" | "ongoing" | "active" | "connected" => Outcome::InProgress,
        "answered" | "human" | "answered_by_human" | "human_answered" => Outcome::Answered,
        "voicemail" | "voice_mail" | "machine" | "answering_machine" | "machine_detected" => {
            Outcome::Voicemail
        }
        "no_answer" | "noanswer" | "unanswered" | "not_answered" => Outcome::NoAnswer,
        "busy" | "line_busy" | "user_busy" => Outcome::Busy,
        "failed" | "failure" | "error" => Outcome::Failed,
        "canceled" | "cancelled" => Outcome::Canceled,
        _ => return Err(NormaliseError::UnknownOutcome(clip(raw))),
    };
    Ok(outcome)
}

/// Lower-case, trimmed, with `-` and spaces folded into `_`, so `In-Progress`,
/// `in progress` and `in_progress` compare equal.
fn token(raw: &str) -> String {
    raw.trim()
        .chars()
        .map(|c| match c {
            '-' | ' ' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// Keeps error values short: a status is not a body, but nothing stops a
/// misbehaving sender from putting one there.
fn clip(raw: &str) -> String {
    raw.chars().take(64).collect()
}

#[cfg(test)]
mod tests;

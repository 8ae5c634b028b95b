//! What the lead said, and the end-of-call analysis an AI voice platform
//! would post about it, in the JSON format the gateway accepts (its
//! `provider::json::JsonCallEvent`: `call_id`, `contact_id`, `launch_id`,
//! `status`, `occurred_at`, `duration_seconds`, `answered_by`, and an
//! `analysis` with `callback_requested`/`callback_phrase`, `do_not_call`,
//! `wants_person`/`request_phrase`, `interested`, `summary`).
//!
//! Callback phrases are the lead's own words, of the kinds the domain's
//! callback-time reader understands ("try me at 3pm", "Monday morning
//! works"); "call me later" carries no time on purpose.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

/// What the lead wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    Callback,
    CallLater,
    DoNotCall,
    WantsPerson,
    Interested,
    NotInterested,
}

impl Intent {
    /// In the order of `Behaviour::intent_weights`.
    pub const ALL: [Intent; 6] = [
        Intent::Callback,
        Intent::CallLater,
        Intent::DoNotCall,
        Intent::WantsPerson,
        Intent::Interested,
        Intent::NotInterested,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Callback => "callback",
            Intent::CallLater => "call_later",
            Intent::DoNotCall => "do_not_call",
            Intent::WantsPerson => "wants_person",
            Intent::Interested => "interested",
            Intent::NotInterested => "not_interested",
        }
    }

    /// The ways a lead says it.
    pub fn phrases(self) -> &'static [&'static str] {
        match self {
            Intent::Callback => &[
                "call me back tomorrow at 10",
                "try me at 3pm",
                "Monday morning works",
                "can you call me back at half past four",
                "ring me again in two hours",
                "Friday at 11:15am is better for me",
                "tomorrow afternoon would be good",
            ],
            Intent::CallLater => &[
                "I'm driving right now, call me later",
                "this isn't a good time, call me later",
                "can you try again some other time",
            ],
            Intent::DoNotCall => &[
                "please take me off your list",
                "don't call me again",
                "stop calling this number",
            ],
            Intent::WantsPerson => &[
                "can I speak to a real person",
                "I want to talk to someone on your team",
                "put me through to a human please",
            ],
            Intent::Interested => &[
                "yes, that sounds interesting, tell me more",
                "I'd like to sign up",
            ],
            Intent::NotInterested => &[
                "no thanks, I'm not interested",
                "we already have something for that",
            ],
        }
    }

    /// Which phrase a uniform draw in `[0, 1)` picks.
    pub fn phrase_index(self, u: f64) -> usize {
        let n = self.phrases().len();
        ((u * n as f64) as usize).min(n - 1)
    }

    pub fn phrase(self, index: usize) -> &'static str {
        let phrases = self.phrases();
        phrases[index.min(phrases.len() - 1)]
    }
}

/// The `analysis` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    pub summary: String,
    pub interested: Option<bool>,
    pub callback_requested: bool,
    pub callback_phrase: Option<String>,
    pub do_not_call: bool,
    pub wants_person: bool,
    pub request_phrase: Option<String>,
    /// What the lead said (not read by the gateway; for people reading).
    pub utterance: String,
    pub intent: Intent,
}

impl Analysis {
    pub fn of(intent: Intent, phrase_index: usize) -> Self {
        let said = intent.phrase(phrase_index).to_string();
        let mut a = Analysis {
            summary: String::new(),
            interested: None,
            callback_requested: false,
            callback_phrase: None,
            do_not_call: false,
            wants_person: false,
            request_phrase: None,
            utterance: said.clone(),
            intent,
        };
        match intent {
            Intent::Callback | Intent::CallLater => {
                a.summary = "The lead asked to be called back.".into();
                a.callback_requested = true;
                a.callback_phrase = Some(said);
            }
            Intent::DoNotCall => {
                a.summary = "The lead asked not to be called again.".into();
                a.do_not_call = true;
                a.interested = Some(false);
                a.request_phrase = Some(said);
            }
            Intent::WantsPerson => {
                a.summary = "The lead wants to talk to a person.".into();
                a.wants_person = true;
                a.request_phrase = Some(said);
            }
            Intent::Interested => {
                a.summary = "The lead is interested.".into();
                a.interested = Some(true);
            }
            Intent::NotInterested => {
                a.summary = "The lead is not interested.".into();
                a.interested = Some(false);
            }
        }
        a
    }
}

/// The whole JSON call event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalysisEvent {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    pub call_id: String,
    pub contact_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    pub status: &'static str,
    pub occurred_at: String,
    pub duration_seconds: u32,
    pub answered_by: &'static str,
    pub analysis: Analysis,
}

impl AnalysisEvent {
    /// `occurred_at` is the hang-up, RFC 3339 in UTC.
    pub fn occurred(at: DateTime<Utc>) -> String {
        at.to_rfc3339_opts(SecondsFormat::Millis, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_intent_sets_its_flag() {
        for intent in Intent::ALL {
            for i in 0..intent.phrases().len() {
                let a = Analysis::of(intent, i);
                assert_eq!(a.utterance, intent.phrases()[i]);
                let flags = (
                    a.callback_requested,
                    a.do_not_call,
                    a.wants_person,
                    a.interested,
                );
                let want = match intent {
                    Intent::Callback | Intent::CallLater => (true, false, false, None),
                    Intent::DoNotCall => (false, true, false, Some(false)),
                    Intent::WantsPerson => (false, false, true, None),
                    Intent::Interested => (false, false, false, Some(true)),
                    Intent::NotInterested => (false, false, false, Some(false)),
                };
                assert_eq!(flags, want, "{intent:?}");
                assert_eq!(a.callback_phrase.is_some(), a.callback_requested);
            }
        }
    }

    #[test]
    fn phrase_index_covers_every_phrase_and_stays_in_range() {
        for intent in Intent::ALL {
            let n = intent.phrases().len();
            let mut seen = vec![false; n];
            for k in 0..1000 {
                let i = intent.phrase_index(f64::from(k) / 1000.0);
                seen[i] = true;
            }
            assert!(seen.iter().all(|s| *s), "{intent:?}");
            assert_eq!(intent.phrase_index(0.999_999_999), n - 1);
        }
    }
}

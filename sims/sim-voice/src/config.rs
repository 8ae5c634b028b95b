//! What the simulator is told: who it is (account sid, auth token, the
//! analysis secret), where it sends analyses, its seed, and its
//! [`Behaviour`] (outcome mix, durations, faults), which tests may change
//! at runtime through `POST /_sim/config`.
//!
//! Every field works as a flag, an environment variable (`SIM_VOICE_*`) and
//! a serde field, with one default for all three ([`DEFAULT_BEHAVIOUR`]).
//! [`Behaviour::validate`] is the one gate: a share outside `[0, 1]`, a
//! range upside down or a time scale that is not positive never reaches a
//! call.
//!
//! Time: every duration in "simulated seconds" is multiplied by
//! `time_scale` before it is slept, so a 60 s call plays out in 60 ms at
//! `0.001`. Durations in milliseconds (`*_ms`) are real time: they are about
//! HTTP clients' timeouts, which do not scale.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// The account sid callers authenticate as unless told otherwise.
pub const DEFAULT_ACCOUNT_SID: &str = "AC00000000000000000000000000000000";
/// The auth token unless told otherwise (also the callback signing key).
pub const DEFAULT_AUTH_TOKEN: &str = "sim-voice-auth-token";
/// The Standard Webhooks secret unless told otherwise.
pub const DEFAULT_ANALYSIS_SECRET: &str = "whsec_Y2FsbHN0cmVhbS1zaW0tdm9pY2UtYW5hbHlzaXMta2V5";
/// Where the simulator listens unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8091";

/// Everything the simulator is configured with.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default)]
pub struct SimVoiceConfig {
    /// Address the HTTP server listens on.
    #[arg(long, env = "SIM_VOICE_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Account sid clients authenticate as (HTTP basic user) and that the
    /// URLs name; requests for another account answer 404.
    #[arg(long, env = "SIM_VOICE_ACCOUNT_SID", default_value = DEFAULT_ACCOUNT_SID)]
    pub account_sid: String,
    /// Auth token (HTTP basic password); also the key status callbacks are
    /// signed with (`X-Twilio-Signature`), as at Twilio.
    #[arg(long, env = "SIM_VOICE_AUTH_TOKEN", default_value = DEFAULT_AUTH_TOKEN, hide_env_values = true)]
    pub auth_token: String,
    /// URL end-of-call analyses are posted to (Standard Webhooks JSON), e.g.
    /// the gateway's `/v1/webhooks/json/{integration}`; `{tenant}` in it is the
    /// call's tenant (`.../json/{tenant}-analysis`). None: no analyses.
    #[arg(long, env = "SIM_VOICE_ANALYSIS_URL")]
    pub analysis_url: Option<String>,
    /// `whsec_` secret analyses are signed with.
    #[arg(long, env = "SIM_VOICE_ANALYSIS_SECRET", default_value = DEFAULT_ANALYSIS_SECRET, hide_env_values = true)]
    pub analysis_secret: String,
    /// Seed of every random choice: with the same seed, the n-th call
    /// created gets the same outcome, durations, utterance and faults.
    #[arg(long, env = "SIM_VOICE_SEED", default_value_t = 1)]
    pub seed: u64,
    /// Mixed into call sids (not into any choice). None: the start time, so
    /// a restarted simulator never reissues a sid downstream has seen.
    /// Set it for sids that repeat from run to run.
    #[arg(long, env = "SIM_VOICE_SID_SALT")]
    pub sid_salt: Option<u64>,
    /// Outcome mix, durations and faults (changeable at runtime).
    #[command(flatten)]
    pub behaviour: Behaviour,
}

impl Default for SimVoiceConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8091)),
            account_sid: DEFAULT_ACCOUNT_SID.into(),
            auth_token: DEFAULT_AUTH_TOKEN.into(),
            analysis_url: None,
            analysis_secret: DEFAULT_ANALYSIS_SECRET.into(),
            seed: 1,
            sid_salt: None,
            behaviour: Behaviour::default(),
        }
    }
}

/// How calls play out and which faults happen. Weights are relative (they
/// need not sum to 1); shares are probabilities in `[0, 1]`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Behaviour {
    /// Real seconds per simulated second (1.0: real time; 0.001: a 60 s
    /// call takes 60 ms).
    #[arg(long, env = "SIM_VOICE_TIME_SCALE", default_value_t = DEFAULT_BEHAVIOUR.time_scale)]
    pub time_scale: f64,

    /// Weight of calls a person answers (they get an analysis).
    #[arg(long, env = "SIM_VOICE_WEIGHT_HUMAN", default_value_t = DEFAULT_BEHAVIOUR.weight_human)]
    pub weight_human: f64,
    /// Weight of calls voicemail answers (`AnsweredBy` machine_end_beep
    /// with `MachineDetection=DetectMessageEnd`, machine_start with `Enable`).
    #[arg(long, env = "SIM_VOICE_WEIGHT_VOICEMAIL", default_value_t = DEFAULT_BEHAVIOUR.weight_voicemail)]
    pub weight_voicemail: f64,
    /// Weight of calls that ring out (`no-answer`).
    #[arg(long, env = "SIM_VOICE_WEIGHT_NO_ANSWER", default_value_t = DEFAULT_BEHAVIOUR.weight_no_answer)]
    pub weight_no_answer: f64,
    /// Weight of `busy` calls.
    #[arg(long, env = "SIM_VOICE_WEIGHT_BUSY", default_value_t = DEFAULT_BEHAVIOUR.weight_busy)]
    pub weight_busy: f64,
    /// Weight of calls that fail to connect (`failed`).
    #[arg(long, env = "SIM_VOICE_WEIGHT_FAILED", default_value_t = DEFAULT_BEHAVIOUR.weight_failed)]
    pub weight_failed: f64,

    /// Shortest ringing before an answer (simulated seconds).
    #[arg(long, env = "SIM_VOICE_RING_SECS_MIN", default_value_t = DEFAULT_BEHAVIOUR.ring_secs_min)]
    pub ring_secs_min: f64,
    /// Longest ringing before an answer (simulated seconds).
    #[arg(long, env = "SIM_VOICE_RING_SECS_MAX", default_value_t = DEFAULT_BEHAVIOUR.ring_secs_max)]
    pub ring_secs_max: f64,
    /// Shortest conversation (answer to hang-up, simulated seconds).
    #[arg(long, env = "SIM_VOICE_TALK_SECS_MIN", default_value_t = DEFAULT_BEHAVIOUR.talk_secs_min)]
    pub talk_secs_min: f64,
    /// Longest conversation (simulated seconds); uniform in between.
    #[arg(long, env = "SIM_VOICE_TALK_SECS_MAX", default_value_t = DEFAULT_BEHAVIOUR.talk_secs_max)]
    pub talk_secs_max: f64,
    /// Shortest voicemail message (simulated seconds).
    #[arg(long, env = "SIM_VOICE_VOICEMAIL_SECS_MIN", default_value_t = DEFAULT_BEHAVIOUR.voicemail_secs_min)]
    pub voicemail_secs_min: f64,
    /// Longest voicemail message (simulated seconds).
    #[arg(long, env = "SIM_VOICE_VOICEMAIL_SECS_MAX", default_value_t = DEFAULT_BEHAVIOUR.voicemail_secs_max)]
    pub voicemail_secs_max: f64,
    /// Ringing before `no-answer` (simulated seconds; Twilio's `Timeout`).
    #[arg(long, env = "SIM_VOICE_NO_ANSWER_SECS", default_value_t = DEFAULT_BEHAVIOUR.no_answer_secs)]
    pub no_answer_secs: f64,

    /// Weight of analyses where the lead asks for a callback at a time, in
    /// their own words ("try me at 3pm").
    #[arg(long, env = "SIM_VOICE_INTENT_CALLBACK", default_value_t = DEFAULT_BEHAVIOUR.intent_callback)]
    pub intent_callback: f64,
    /// Weight of "call me later" with no time.
    #[arg(long, env = "SIM_VOICE_INTENT_CALL_LATER", default_value_t = DEFAULT_BEHAVIOUR.intent_call_later)]
    pub intent_call_later: f64,
    /// Weight of do-not-call requests.
    #[arg(long, env = "SIM_VOICE_INTENT_DO_NOT_CALL", default_value_t = DEFAULT_BEHAVIOUR.intent_do_not_call)]
    pub intent_do_not_call: f64,
    /// Weight of "I want to talk to a person".
    #[arg(long, env = "SIM_VOICE_INTENT_WANTS_PERSON", default_value_t = DEFAULT_BEHAVIOUR.intent_wants_person)]
    pub intent_wants_person: f64,
    /// Weight of interested leads.
    #[arg(long, env = "SIM_VOICE_INTENT_INTERESTED", default_value_t = DEFAULT_BEHAVIOUR.intent_interested)]
    pub intent_interested: f64,
    /// Weight of leads not interested.
    #[arg(long, env = "SIM_VOICE_INTENT_NOT_INTERESTED", default_value_t = DEFAULT_BEHAVIOUR.intent_not_interested)]
    pub intent_not_interested: f64,
    /// Time from hang-up to the analysis (simulated seconds).
    #[arg(long, env = "SIM_VOICE_ANALYSIS_DELAY_SECS", default_value_t = DEFAULT_BEHAVIOUR.analysis_delay_secs)]
    pub analysis_delay_secs: f64,

    /// Share of calls whose end is never reported: the final status
    /// callback and the analysis are not sent.
    #[arg(long, env = "SIM_VOICE_COMPLETION_DROP_SHARE", default_value_t = DEFAULT_BEHAVIOUR.completion_drop_share)]
    pub completion_drop_share: f64,
    /// Length of the sliding window creates are counted in for the burst
    /// failure (real milliseconds).
    #[arg(long, env = "SIM_VOICE_BURST_WINDOW_MS", default_value_t = DEFAULT_BEHAVIOUR.burst_window_ms)]
    pub burst_window_ms: u64,
    /// Creates in the window (this one included) the platform copes with.
    #[arg(long, env = "SIM_VOICE_BURST_THRESHOLD", default_value_t = DEFAULT_BEHAVIOUR.burst_threshold)]
    pub burst_threshold: u32,
    /// Added drop share per create over the threshold: drop probability =
    /// `completion_drop_share + burst_drop_per_call * (in window - threshold)`,
    /// at most 1.
    #[arg(long, env = "SIM_VOICE_BURST_DROP_PER_CALL", default_value_t = DEFAULT_BEHAVIOUR.burst_drop_per_call)]
    pub burst_drop_per_call: f64,
    /// Of the calls whose completion was dropped, the share the platform
    /// also loses: after the call ends, fetch and list no longer find it.
    #[arg(long, env = "SIM_VOICE_LOST_CALL_SHARE", default_value_t = DEFAULT_BEHAVIOUR.lost_call_share)]
    pub lost_call_share: f64,

    /// Share of deliveries (callbacks and analyses) sent late.
    #[arg(long, env = "SIM_VOICE_DELAY_SHARE", default_value_t = DEFAULT_BEHAVIOUR.delay_share)]
    pub delay_share: f64,
    /// Longest extra delay of a late delivery (simulated seconds; uniform).
    #[arg(long, env = "SIM_VOICE_DELAY_SECS_MAX", default_value_t = DEFAULT_BEHAVIOUR.delay_secs_max)]
    pub delay_secs_max: f64,
    /// Share of deliveries sent twice (same body, same signature).
    #[arg(long, env = "SIM_VOICE_DUPLICATE_SHARE", default_value_t = DEFAULT_BEHAVIOUR.duplicate_share)]
    pub duplicate_share: f64,
    /// Share of deliveries held back until after the next one of the call.
    #[arg(long, env = "SIM_VOICE_REORDER_SHARE", default_value_t = DEFAULT_BEHAVIOUR.reorder_share)]
    pub reorder_share: f64,

    /// Share of creates answered 500/503 (no call is made).
    #[arg(long, env = "SIM_VOICE_CREATE_ERROR_SHARE", default_value_t = DEFAULT_BEHAVIOUR.create_error_share)]
    pub create_error_share: f64,
    /// Share of creates accepted (the call exists and plays out) whose
    /// answer is held back by `create_slow_ms`, past a client's timeout.
    #[arg(long, env = "SIM_VOICE_CREATE_SLOW_SHARE", default_value_t = DEFAULT_BEHAVIOUR.create_slow_share)]
    pub create_slow_share: f64,
    /// Share of creates accepted (the call exists and plays out) but answered
    /// 502 or 504, as an edge in front of the platform answers when it lost
    /// or timed out on the platform's answer. A client that creates again on
    /// such an answer places a second call.
    #[arg(long, env = "SIM_VOICE_CREATE_ACCEPTED_THEN_ERROR_SHARE", default_value_t = DEFAULT_BEHAVIOUR.create_accepted_then_error_share)]
    pub create_accepted_then_error_share: f64,
    /// How long a slow create's answer is held back (real milliseconds).
    #[arg(long, env = "SIM_VOICE_CREATE_SLOW_MS", default_value_t = DEFAULT_BEHAVIOUR.create_slow_ms)]
    pub create_slow_ms: u64,

    /// Extra attempts of a status callback that got no 2xx (Twilio: 0).
    #[arg(long, env = "SIM_VOICE_CALLBACK_RETRIES", default_value_t = DEFAULT_BEHAVIOUR.callback_retries)]
    pub callback_retries: u32,
    /// Extra attempts of an analysis that got no 2xx (Standard Webhooks
    /// senders retry).
    #[arg(long, env = "SIM_VOICE_ANALYSIS_RETRIES", default_value_t = DEFAULT_BEHAVIOUR.analysis_retries)]
    pub analysis_retries: u32,
    /// First wait before a retry, doubling each time (real milliseconds).
    #[arg(long, env = "SIM_VOICE_RETRY_BACKOFF_MS", default_value_t = DEFAULT_BEHAVIOUR.retry_backoff_ms)]
    pub retry_backoff_ms: u64,
    /// Timeout of one delivery request (real milliseconds; Twilio's is 15 s).
    #[arg(long, env = "SIM_VOICE_DELIVERY_TIMEOUT_MS", default_value_t = DEFAULT_BEHAVIOUR.delivery_timeout_ms)]
    pub delivery_timeout_ms: u64,
}

/// The defaults of [`Behaviour`]: a plausible mix, no faults, real time.
pub const DEFAULT_BEHAVIOUR: Behaviour = Behaviour {
    time_scale: 1.0,
    weight_human: 0.55,
    weight_voicemail: 0.2,
    weight_no_answer: 0.15,
    weight_busy: 0.05,
    weight_failed: 0.05,
    ring_secs_min: 3.0,
    ring_secs_max: 20.0,
    talk_secs_min: 20.0,
    talk_secs_max: 180.0,
    voicemail_secs_min: 10.0,
    voicemail_secs_max: 40.0,
    no_answer_secs: 60.0,
    intent_callback: 0.25,
    intent_call_later: 0.1,
    intent_do_not_call: 0.05,
    intent_wants_person: 0.1,
    intent_interested: 0.25,
    intent_not_interested: 0.25,
    analysis_delay_secs: 2.0,
    completion_drop_share: 0.0,
    burst_window_ms: 1000,
    burst_threshold: 10,
    burst_drop_per_call: 0.0,
    lost_call_share: 0.0,
    delay_share: 0.0,
    delay_secs_max: 30.0,
    duplicate_share: 0.0,
    reorder_share: 0.0,
    create_error_share: 0.0,
    create_slow_share: 0.0,
    create_accepted_then_error_share: 0.0,
    create_slow_ms: 30_000,
    callback_retries: 0,
    analysis_retries: 3,
    retry_backoff_ms: 500,
    delivery_timeout_ms: 15_000,
};

impl Default for Behaviour {
    fn default() -> Self {
        DEFAULT_BEHAVIOUR
    }
}

/// A behaviour that cannot be played.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("`{0}` must be a probability in [0, 1]")]
    Share(&'static str),
    #[error("`{0}` must be a finite number >= 0")]
    Negative(&'static str),
    #[error("`{0}_min` is larger than `{0}_max`")]
    Range(&'static str),
    #[error("`{0}` weights are all zero")]
    NoWeight(&'static str),
    #[error("`time_scale` must be finite and > 0")]
    TimeScale,
    #[error("`{0}` is not a valid Standard Webhooks secret (whsec_<base64>)")]
    Secret(&'static str),
    #[error("`{field}` is not a usable URL: {problem}")]
    Url {
        field: &'static str,
        problem: String,
    },
}

impl Behaviour {
    /// Checks every field; the first problem found is the answer.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return Err(ConfigError::TimeScale);
        }
        let shares = [
            ("completion_drop_share", self.completion_drop_share),
            ("burst_drop_per_call", self.burst_drop_per_call),
            ("lost_call_share", self.lost_call_share),
            ("delay_share", self.delay_share),
            ("duplicate_share", self.duplicate_share),
            ("reorder_share", self.reorder_share),
            ("create_error_share", self.create_error_share),
            ("create_slow_share", self.create_slow_share),
            (
                "create_accepted_then_error_share",
                self.create_accepted_then_error_share,
            ),
        ];
        for (name, v) in shares {
            if !(0.0..=1.0).contains(&v) {
                return Err(ConfigError::Share(name));
            }
        }
        let non_negative = [
            ("weight_human", self.weight_human),
            ("weight_voicemail", self.weight_voicemail),
            ("weight_no_answer", self.weight_no_answer),
            ("weight_busy", self.weight_busy),
            ("weight_failed", self.weight_failed),
            ("intent_callback", self.intent_callback),
            ("intent_call_later", self.intent_call_later),
            ("intent_do_not_call", self.intent_do_not_call),
            ("intent_wants_person", self.intent_wants_person),
            ("intent_interested", self.intent_interested),
            ("intent_not_interested", self.intent_not_interested),
            ("ring_secs_min", self.ring_secs_min),
            ("talk_secs_min", self.talk_secs_min),
            ("voicemail_secs_min", self.voicemail_secs_min),
            ("no_answer_secs", self.no_answer_secs),
            ("analysis_delay_secs", self.analysis_delay_secs),
            ("delay_secs_max", self.delay_secs_max),
        ];
        for (name, v) in non_negative {
            // `!(v >= 0.0)` also catches NaN.
            if !(v.is_finite() && v >= 0.0) {
                return Err(ConfigError::Negative(name));
            }
        }
        let ranges = [
            ("ring_secs", self.ring_secs_min, self.ring_secs_max),
            ("talk_secs", self.talk_secs_min, self.talk_secs_max),
            (
                "voicemail_secs",
                self.voicemail_secs_min,
                self.voicemail_secs_max,
            ),
        ];
        for (name, min, max) in ranges {
            if !(max.is_finite() && min <= max) {
                return Err(ConfigError::Range(name));
            }
        }
        if self.outcome_weights().iter().sum::<f64>() <= 0.0 {
            return Err(ConfigError::NoWeight("weight_*"));
        }
        if self.intent_weights().iter().sum::<f64>() <= 0.0 {
            return Err(ConfigError::NoWeight("intent_*"));
        }
        Ok(())
    }

    /// Outcome weights in [`crate::plan::Outcome::ALL`] order.
    pub fn outcome_weights(&self) -> [f64; 5] {
        [
            self.weight_human,
            self.weight_voicemail,
            self.weight_no_answer,
            self.weight_busy,
            self.weight_failed,
        ]
    }

    /// Intent weights in [`crate::utterance::Intent::ALL`] order.
    pub fn intent_weights(&self) -> [f64; 6] {
        [
            self.intent_callback,
            self.intent_call_later,
            self.intent_do_not_call,
            self.intent_wants_person,
            self.intent_interested,
            self.intent_not_interested,
        ]
    }
}

impl SimVoiceConfig {
    /// Checks the behaviour, the analysis secret and URL.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.behaviour.validate()?;
        crate::signing::decode_whsec(&self.analysis_secret)
            .map_err(|_| ConfigError::Secret("analysis_secret"))?;
        if let Some(url) = &self.analysis_url {
            crate::callback::check_url(url).map_err(|problem| ConfigError::Url {
                field: "analysis_url",
                problem: problem.to_string(),
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

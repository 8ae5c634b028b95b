//! A campaign's next-step settings, as read from the `control` table (TOML
//! or JSON); every field has a default, so an empty table is a valid policy.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What happens after each call of one campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CampaignPolicy {
    /// Minutes before each retry after a voicemail: the first entry after
    /// the first attempt, the second after the second, the last repeating.
    /// Default `[2880]` (two days).
    pub voicemail_retry_minutes: Vec<u32>,
    /// Minutes before each retry after no answer (same shape). Default `[2880]`.
    pub no_answer_retry_minutes: Vec<u32>,
    /// Minutes before each retry after a busy line (same shape). Default `[2880]`.
    pub busy_retry_minutes: Vec<u32>,
    /// Calls that reached the line (answered, voicemail, no-answer, busy)
    /// before the lead counts as stale. Default 3.
    pub max_attempts: u32,
    /// The campaign a stale lead advances to; `None` finishes it instead.
    pub next_campaign: Option<String>,
    /// Minutes from the stale-lead advance to the first call of the next
    /// campaign. Default 1440 (one day).
    pub stale_lead_advance_minutes: u32,
    /// When the CRM gets a follow-up task. Default `when_interested`.
    pub follow_up_task: FollowUpTask,
    /// Minutes from the call to the follow-up task's due time. Default 1440.
    pub follow_up_due_minutes: u32,
    /// Minutes until the call back when the lead said "call me later"
    /// without a time, or named a time that could not be read. Default 120.
    pub call_me_later_minutes: u32,
    /// Retries after the platform failed to place the call.
    pub provider_failure: ProviderFailureBackoff,
}

impl Default for CampaignPolicy {
    fn default() -> Self {
        CampaignPolicy {
            voicemail_retry_minutes: vec![2880],
            no_answer_retry_minutes: vec![2880],
            busy_retry_minutes: vec![2880],
            max_attempts: 3,
            next_campaign: None,
            stale_lead_advance_minutes: 1440,
            follow_up_task: FollowUpTask::WhenInterested,
            follow_up_due_minutes: 1440,
            call_me_later_minutes: 120,
            provider_failure: ProviderFailureBackoff::default(),
        }
    }
}

/// When a call's outcome also creates a follow-up task in the CRM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FollowUpTask {
    Never,
    /// When the call analysis says the lead is interested.
    WhenInterested,
    /// After every answered call.
    WhenAnswered,
}

/// Bounded, doubling, jittered retries of a call the platform failed to
/// place: retry `n` waits `min(initial × 2^(n−1), max)` seconds, less up
/// to `jitter_percent` of that, and after `max_retries` failures in a row
/// an exception is opened instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderFailureBackoff {
    /// Retries before giving up to an exception. Default 3.
    pub max_retries: u32,
    /// Delay before the first retry, in seconds. Default 60.
    pub initial_seconds: u32,
    /// Upper bound of any delay, in seconds. Default 3600.
    pub max_seconds: u32,
    /// How much of a delay the jitter may take off, 0–100. Default 50.
    pub jitter_percent: u8,
}

impl Default for ProviderFailureBackoff {
    fn default() -> Self {
        ProviderFailureBackoff {
            max_retries: 3,
            initial_seconds: 60,
            max_seconds: 3600,
            jitter_percent: 50,
        }
    }
}

impl ProviderFailureBackoff {
    /// Seconds to wait before retry number `retry` (1-based), given a
    /// uniform `jitter` in `[0, 1)` from the caller (clamped; NaN counts as
    /// 0). Always in `[1, max_seconds]`.
    pub fn delay_seconds(&self, retry: u32, jitter: f64) -> u64 {
        let doubling = 1u64
            .checked_shl(retry.saturating_sub(1))
            .unwrap_or(u64::MAX);
        let full = u64::from(self.initial_seconds)
            .saturating_mul(doubling)
            .min(u64::from(self.max_seconds));
        let jitter = if jitter.is_nan() {
            0.0
        } else {
            jitter.clamp(0.0, 1.0 - f64::EPSILON)
        };
        let ratio = f64::from(self.jitter_percent.min(100)) / 100.0;
        // The product is below `full`, so the cast cannot saturate.
        let cut = (full as f64 * ratio * jitter).floor() as u64;
        full.saturating_sub(cut).max(1)
    }
}

/// A campaign policy that cannot be used as written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyConfigError {
    #[error("{0} must list at least one delay")]
    NoDelays(&'static str),
    #[error("{0} must be at least one minute")]
    ZeroDelay(&'static str),
    #[error("max_attempts must be at least 1")]
    ZeroMaxAttempts,
    #[error("next_campaign must name another campaign")]
    NextCampaignIsItself,
    #[error("next_campaign must not be empty")]
    EmptyNextCampaign,
    #[error("provider_failure: initial_seconds must be at least 1 and at most max_seconds")]
    BadBackoff,
    #[error("provider_failure: jitter_percent must be at most 100")]
    BadJitter,
}

impl CampaignPolicy {
    /// Checks the policy of campaign `campaign_id`.
    pub fn validate(&self, campaign_id: &str) -> Result<(), PolicyConfigError> {
        let lists = [
            ("voicemail_retry_minutes", &self.voicemail_retry_minutes),
            ("no_answer_retry_minutes", &self.no_answer_retry_minutes),
            ("busy_retry_minutes", &self.busy_retry_minutes),
        ];
        for (name, delays) in lists {
            if delays.is_empty() {
                return Err(PolicyConfigError::NoDelays(name));
            }
            if delays.contains(&0) {
                return Err(PolicyConfigError::ZeroDelay(name));
            }
        }
        let scalars = [
            (
                "stale_lead_advance_minutes",
                self.stale_lead_advance_minutes,
            ),
            ("follow_up_due_minutes", self.follow_up_due_minutes),
            ("call_me_later_minutes", self.call_me_later_minutes),
        ];
        for (name, minutes) in scalars {
            if minutes == 0 {
                return Err(PolicyConfigError::ZeroDelay(name));
            }
        }
        if self.max_attempts == 0 {
            return Err(PolicyConfigError::ZeroMaxAttempts);
        }
        match self.next_campaign.as_deref() {
            Some("") => return Err(PolicyConfigError::EmptyNextCampaign),
            Some(next) if next == campaign_id => {
                return Err(PolicyConfigError::NextCampaignIsItself)
            }
            _ => {}
        }
        let backoff = &self.provider_failure;
        if backoff.initial_seconds == 0 || backoff.initial_seconds > backoff.max_seconds {
            return Err(PolicyConfigError::BadBackoff);
        }
        if backoff.jitter_percent > 100 {
            return Err(PolicyConfigError::BadJitter);
        }
        Ok(())
    }

    /// Minutes before the retry that follows attempt `attempt` (1-based).
    pub(super) fn retry_delay(delays: &[u32], attempt: u32) -> u32 {
        let i = (attempt.saturating_sub(1) as usize).min(delays.len().saturating_sub(1));
        delays.get(i).copied().unwrap_or(2880)
    }
}

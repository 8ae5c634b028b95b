//! What the contact processor reads from `control`, behind a small trait so
//! the handlers are plain functions of the settings they were given.
//!
//! Guarantees: every question has an answer (defaults when nothing is
//! set), and an answer is read at the record being handled, so a change on
//! `control` applies from the next record on.

use std::sync::Arc;
use std::time::Duration;

use callstream_domain::calling_window::CampaignWindow;
use callstream_domain::policy::CampaignPolicy;
use chrono_tz::Tz;

/// One campaign's settings in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignRules {
    /// When the campaign may call, in the lead's zone (federal hours bound it regardless).
    pub window: CampaignWindow,
    pub policy: CampaignPolicy,
    /// Added to the next opening for a call moved out of its window.
    pub move_buffer: Duration,
}

/// The settings the handlers ask about.
pub trait ControlRead {
    /// Why a call of `campaign` may not go now (`system_paused`,
    /// `campaign_paused`), or `None`.
    fn pause(&self, tenant: &str, campaign: &str) -> Option<&'static str>;

    /// The settings of `campaign`.
    fn campaign(&self, tenant: &str, campaign: &str) -> Arc<CampaignRules>;

    /// The tenant's default zone: the last source of a lead's zone.
    fn default_zone(&self, tenant: &str) -> Tz;
}

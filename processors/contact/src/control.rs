//! What the contact processor reads from `control`, behind a small trait so
//! the handlers are plain functions of the settings they were given; the
//! production reader is `callstream_kit::control`'s typed [`ControlView`].
//!
//! Guarantees: every question has an answer (defaults when nothing is
//! set, the safe choice when a value is unreadable: paused), and an answer
//! is read at the record being handled, so a change on `control` applies
//! from the next record on.

use std::sync::Arc;
use std::time::Duration;

use callstream_kit::calling_rules::TenantCallingRules;
use callstream_kit::control::{CampaignConfig, ControlTable, ControlView};
use callstream_runtime::Context;
use chrono_tz::Tz;

/// The settings the handlers ask about.
pub trait ControlRead {
    /// Why a call of `campaign` may not go now (`system_paused`,
    /// `campaign_paused`), or `None`.
    fn pause(&self, tenant: &str, campaign: &str) -> Option<&'static str>;

    /// The settings of `campaign`: windows, policy, move buffer.
    fn campaign(&self, tenant: &str, campaign: &str) -> Arc<CampaignConfig>;

    /// The tenant's default zone: the last source of a lead's zone.
    fn default_zone(&self, tenant: &str) -> Tz;

    /// The length of a slot on the tenant's grid: a launch may leave only
    /// within its slot, so creates keep the grid's pace on the wire.
    fn slot_length(&self, tenant: &str) -> Duration;

    /// The campaign's (else the tenant's) own calling rules, overrides, cap subject and
    /// default state (the statutory rules apply regardless).
    fn calling_rules(&self, tenant: &str, campaign: &str) -> Arc<TenantCallingRules>;
}

impl ControlRead for ControlView<'_> {
    fn pause(&self, tenant: &str, campaign: &str) -> Option<&'static str> {
        ControlView::pause(self, tenant, campaign).map(|p| p.reason())
    }

    fn campaign(&self, tenant: &str, campaign: &str) -> Arc<CampaignConfig> {
        ControlView::campaign(self, tenant, campaign)
    }

    fn default_zone(&self, tenant: &str) -> Tz {
        self.grid(tenant).default_zone
    }

    fn slot_length(&self, tenant: &str) -> Duration {
        Duration::from_secs(u64::from(self.grid(tenant).config.slot_seconds))
    }

    fn calling_rules(&self, tenant: &str, campaign: &str) -> Arc<TenantCallingRules> {
        ControlView::calling_rules(self, tenant, campaign)
    }
}

/// Where the processor's settings come from: a reader over the runtime
/// context of the record being handled.
pub trait ControlSource: Send + 'static {
    fn read<'a>(&'a self, ctx: &'a Context<'a>) -> Box<dyn ControlRead + 'a>;
}

impl ControlSource for ControlTable {
    fn read<'a>(&'a self, ctx: &'a Context<'a>) -> Box<dyn ControlRead + 'a> {
        Box::new(self.view(ctx))
    }
}

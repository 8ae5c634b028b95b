//! Runtime configuration on the compacted `control` topic, as processors read it.
//!
//! Every processor reads `control` as a global table; this module gives it a
//! typed view ([`ControlTable`] / [`ControlView`]): system and campaign
//! pauses, campaign settings (windows, retry delays, attempts, next
//! campaign, move buffer), grid settings, shadow mode, the CRM write switch
//! and the completion window, per tenant, with defaults when absent. A
//! change applies from the next record, without a restart.

pub mod keys;
pub mod settings;
pub mod view;

pub use keys::{record_key, SettingKey, ALL_TENANTS};
pub use settings::{CampaignConfig, CompletionWindow, Origin, SettingError, TenantGrid};
pub use view::{ControlSnapshot, ControlTable, ControlView, Pause};

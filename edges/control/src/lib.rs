//! Runtime configuration on the compacted `control` topic.
//!
//! Every processor reads `control` as a global table; this crate gives it
//! a typed view ([`ControlTable`] / [`ControlView`]): system and campaign
//! pauses, campaign settings (windows, retry delays, attempts, next
//! campaign, move buffer), grid settings, shadow mode, the CRM write switch
//! and the completion window, per tenant, with defaults when absent. A
//! change applies from the next record, without a restart.
//!
//! Operators change it with a TOML file: `callstream control apply <file>`
//! validates the file, compares it with the table (read to its end) and
//! publishes one `ControlChange` per changed setting, with who, when, the
//! old and the new value, all in one Kafka transaction (a file is applied
//! whole or not at all). `callstream control show` prints the table.

pub mod cli;
pub mod diff;
pub mod file;
pub mod kafka;
pub mod keys;
pub mod settings;
pub mod show;
pub mod view;

pub use cli::{
    apply, apply_file, run, show, ApplyArgs, ApplyReport, ConnectionArgs, ControlCommand,
    ControlError, ShowArgs,
};
pub use diff::{plan_changes, PlannedChange};
pub use file::{ControlFile, FileError, Problem};
pub use keys::{SettingKey, ALL_TENANTS};
pub use settings::{CampaignConfig, CompletionWindow, Origin, SettingError, TenantGrid};
pub use view::{ControlSnapshot, ControlTable, ControlView, Pause};

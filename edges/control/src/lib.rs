//! Changing the runtime configuration on the compacted `control` topic.
//!
//! Operators change it with a TOML file: `callstream control apply <file>`
//! validates the file, compares it with the table (read to its end) and
//! publishes one `ControlChange` per changed setting, with who, when, the
//! old and the new value, all in one Kafka transaction (a file is applied
//! whole or not at all). `callstream control show` prints the table.
//!
//! Processors read the table through the typed view in
//! `callstream_kit::control`, which this crate shares for its keys and settings.

pub mod cli;
pub mod diff;
pub mod file;
pub mod kafka;
pub mod show;

pub use cli::{
    apply, apply_file, run, show, ApplyArgs, ApplyReport, ConnectionArgs, ControlCommand,
    ControlError, ShowArgs,
};
pub use diff::{plan_changes, PlannedChange};
pub use file::{ControlFile, FileError, Problem};

//! Window W and its grace per campaign or tenant, read from the `control`
//! table through `callstream-control`'s typed view (setting
//! `completion_window`): the campaign's own value, else the tenant's, else
//! this detector's configured default.
//!
//! The view memoises decoded values and re-decodes only when a key's bytes
//! change, so a lookup per launch is a key build and a byte comparison; a
//! change in `control` applies from the next launch.

use callstream_control::{ControlTable, Origin};
use callstream_runtime::Context;

/// W and grace for one launch, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub window_ms: i64,
    pub grace_ms: i64,
}

/// The `control` key of a tenant's (or campaign's) completion window.
pub fn control_key(tenant: &str, campaign: Option<&str>) -> String {
    callstream_control::keys::record_key(
        tenant,
        callstream_schemas::ControlSetting::CompletionWindow,
        campaign,
    )
}

/// Completion windows from the control table.
#[derive(Debug)]
pub struct Windows {
    table: ControlTable,
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Windows {
    /// `control_topic` is the physical name of the control topic.
    pub fn new(control_topic: impl Into<String>) -> Self {
        Self {
            table: ControlTable::new(control_topic),
        }
    }

    /// W for a launch of `tenant` in `campaign` (`None`: the tenant-wide one).
    pub fn window(
        &self,
        ctx: &Context<'_>,
        tenant: &str,
        campaign: Option<&str>,
        default: Window,
    ) -> Window {
        let found = self.table.view(ctx).completion_window(tenant, campaign);
        if found.origin == Origin::BuiltIn {
            return default;
        }
        Window {
            window_ms: ms(found.window),
            grace_ms: ms(found.grace),
        }
    }
}

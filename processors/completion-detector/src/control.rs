//! Window W and its grace per campaign or tenant, read from the `control`
//! table through `callstream_kit::control`'s typed view (setting
//! `completion_window`): the campaign's own value, else the tenant's, else
//! this detector's configured default.
//!
//! The view memoises decoded values and re-decodes only when a key's bytes
//! change; on top of it, the answers are remembered until the control table
//! changes, so a launch's lookup is a map probe. A change in `control`
//! applies from the next launch.

use std::collections::HashMap;

use callstream_kit::control::{ControlTable, Origin};
use callstream_runtime::Context;

/// W and grace for one launch, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub window_ms: i64,
    pub grace_ms: i64,
}

/// The `control` key of a tenant's (or campaign's) completion window.
pub fn control_key(tenant: &str, campaign: Option<&str>) -> String {
    callstream_kit::control::keys::record_key(
        tenant,
        callstream_schemas::ControlSetting::CompletionWindow,
        campaign,
    )
}

/// Completion windows from the control table, remembered per tenant and
/// campaign until the table changes (its version in the runtime): a lookup
/// in the table builds a key string, and a launch asks for one or two.
#[derive(Debug)]
pub struct Windows {
    table: ControlTable,
    /// The control table's version the remembered windows were read at.
    version: u64,
    /// Per tenant: (campaign, window) pairs, `None` the tenant-wide one.
    known: HashMap<String, Vec<(Option<String>, Window)>>,
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Windows {
    /// `control_topic` is the physical name of the control topic.
    pub fn new(control_topic: impl Into<String>) -> Self {
        Self {
            table: ControlTable::new(control_topic),
            version: 0,
            known: HashMap::new(),
        }
    }

    /// W for a launch of `tenant` in `campaign` (`None`: the tenant-wide one).
    pub fn window(
        &mut self,
        ctx: &Context<'_>,
        tenant: &str,
        campaign: Option<&str>,
        default: Window,
    ) -> Window {
        let version = ctx.global_version(self.table.topic());
        if version != self.version {
            self.known.clear();
            self.version = version;
        }
        let known = self
            .known
            .get(tenant)
            .and_then(|k| k.iter().find(|(c, _)| c.as_deref() == campaign));
        if let Some((_, window)) = known {
            return *window;
        }
        let window = self.look_up(ctx, tenant, campaign, default);
        let entry = match self.known.get_mut(tenant) {
            Some(entry) => entry,
            None => self.known.entry(tenant.to_string()).or_default(),
        };
        entry.push((campaign.map(str::to_string), window));
        window
    }

    fn look_up(
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

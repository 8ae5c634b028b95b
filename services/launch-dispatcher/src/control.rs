//! Shadow mode, read from the `control` global table for every dial: a
//! campaign's own setting wins over its tenant's; nothing set means off.
//!
//! A value that does not decode counts as on: when the switch cannot be
//! read, not calling people is the safe side. It is logged, so a bad
//! control record cannot silently stop calling either.

use callstream_runtime::Context;
use callstream_schemas::{ControlChange, ControlSetting, Event};
use tracing::warn;

/// Whether launches of `tenant`'s `campaign` are intercepted.
pub fn shadow_mode(ctx: &Context<'_>, control_topic: &str, tenant: &str, campaign: &str) -> bool {
    let setting = ControlSetting::ShadowMode.as_str();
    let campaign_key = format!("{tenant}/{setting}/{campaign}");
    let tenant_key = format!("{tenant}/{setting}");
    for key in [campaign_key, tenant_key] {
        let Some(value) = ctx.global(control_topic, key.as_bytes()) else {
            continue;
        };
        match ControlChange::decode(value) {
            Ok(change) => match change.new_value.enabled {
                Some(enabled) => return enabled,
                None => continue,
            },
            Err(error) => {
                warn!(%key, %error, "unreadable shadow-mode setting; treating shadow mode as on");
                return true;
            }
        }
    }
    false
}

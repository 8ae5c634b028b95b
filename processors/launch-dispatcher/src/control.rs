//! What the dispatcher reads from the `control` global table, for every
//! dial, through the kit's typed view: shadow mode, the pauses that cover
//! the launch, and the tenant's own calling rules. A value that cannot be read counts as on (the view logs it
//! once): not calling people is the safe side.

use std::sync::Arc;

use callstream_kit::calling_rules::TenantCallingRules;
use callstream_kit::control::ControlTable;
use callstream_runtime::Context;

/// What `control` says of one launch now.
#[derive(Debug, Clone)]
pub struct LaunchControl {
    /// The tenant's launches are intercepted (shadow mode).
    pub shadow: bool,
    /// The pause covering the tenant or the campaign (`system_paused`,
    /// `campaign_paused`), if one does.
    pub pause: Option<&'static str>,
    /// The campaign's (else the tenant's) own calling rules and overrides (the statutory
    /// ones apply regardless).
    pub calling_rules: Arc<TenantCallingRules>,
}

/// What `control` says now of a launch of `tenant` in `campaign`.
pub fn for_launch(
    table: &ControlTable,
    ctx: &Context<'_>,
    tenant: &str,
    campaign: &str,
) -> LaunchControl {
    let view = table.view(ctx);
    LaunchControl {
        shadow: view.shadow_mode(tenant),
        pause: view.pause(tenant, campaign).map(|p| p.reason()),
        calling_rules: view.calling_rules(tenant, campaign),
    }
}

//! The write switch and shadow mode, read from the `control` global table
//! for every command (so a change applies from the next command on,
//! without a restart).
//!
//! [`Switches`] is the small seam the state machine reads through; the
//! production one is `callstream_kit::control`'s [`ControlTable`], whose typed
//! view reads the table's `tenant/crm_writes` and `tenant/shadow_mode` keys.
//!
//! Guarantee (the control view's): an unset switch reads as its default
//! (writes on, shadow off); a value that cannot be read reads as the safe
//! choice (writes off, shadow on): holding a write back can be undone, a
//! write cannot. Values are decoded once per distinct raw value.

use callstream_kit::control::ControlTable;
use callstream_runtime::Context;

/// The two switches a CRM command obeys.
pub trait Switches: Send + 'static {
    /// Whether CRM writes are allowed for `tenant`.
    fn crm_writes(&self, ctx: &Context<'_>, tenant: &str) -> bool;
    /// Whether `tenant`'s CRM commands are only logged, not sent.
    fn shadow_mode(&self, ctx: &Context<'_>, tenant: &str) -> bool;
}

impl Switches for ControlTable {
    fn crm_writes(&self, ctx: &Context<'_>, tenant: &str) -> bool {
        self.view(ctx).crm_writes(tenant)
    }

    fn shadow_mode(&self, ctx: &Context<'_>, tenant: &str) -> bool {
        self.view(ctx).shadow_mode(tenant)
    }
}

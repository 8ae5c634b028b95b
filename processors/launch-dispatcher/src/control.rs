//! Shadow mode, read from the `control` global table for every dial
//! through the control crate's typed view: the tenant's `shadow_mode`
//! setting, off when unset. A value that cannot be read counts as on (the
//! view logs it once): not calling people is the safe side.

use callstream_kit::control::ControlTable;
use callstream_runtime::Context;

/// Whether launches of `tenant` are intercepted.
pub fn shadow_mode(table: &ControlTable, ctx: &Context<'_>, tenant: &str) -> bool {
    table.view(ctx).shadow_mode(tenant)
}

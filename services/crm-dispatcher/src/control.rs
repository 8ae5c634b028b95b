//! The write switch and shadow mode, read from the `control` global table
//! for every command (so a change applies from the next command on,
//! without a restart).
//!
//! [`Switches`] is the small seam the state machine reads through;
//! [`ControlSwitches`] reads the table's `tenant/crm_writes` and
//! `tenant/shadow_mode` keys (as `ControlChange::record_key` writes them).
//! It will give way to the typed `ControlView` of `callstream-control`.
//!
//! Guarantee: an unset switch reads as its default (writes on, shadow off);
//! a value that cannot be read reads as the safe choice (writes off, shadow
//! on), logged once per distinct value: holding a write back can be undone,
//! a write cannot. Values are decoded once per distinct raw value.

use std::cell::RefCell;
use std::collections::HashMap;

use callstream_runtime::Context;
use callstream_schemas::{ControlChange, ControlSetting, Event};

/// The two switches a CRM command obeys.
pub trait Switches: Send + 'static {
    /// Whether CRM writes are allowed for `tenant`.
    fn crm_writes(&self, ctx: &Context<'_>, tenant: &str) -> bool;
    /// Whether `tenant`'s CRM commands are only logged, not sent.
    fn shadow_mode(&self, ctx: &Context<'_>, tenant: &str) -> bool;
}

/// Reads the switches from the control table `topic`.
#[derive(Debug)]
pub struct ControlSwitches {
    topic: String,
    /// Per record key: the raw value last seen and what it meant.
    memo: RefCell<HashMap<String, (Vec<u8>, Flag)>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    Set(bool),
    Unset,
    Unusable,
}

impl ControlSwitches {
    pub fn new(topic: impl Into<String>) -> Self {
        Self {
            topic: topic.into(),
            memo: RefCell::new(HashMap::new()),
        }
    }

    fn flag(&self, ctx: &Context<'_>, tenant: &str, setting: ControlSetting) -> Flag {
        let key = format!("{tenant}/{setting}");
        let Some(raw) = ctx.global(&self.topic, key.as_bytes()) else {
            return Flag::Unset;
        };
        let mut memo = self.memo.borrow_mut();
        if let Some((seen, flag)) = memo.get(&key) {
            if seen.as_slice() == raw {
                return *flag;
            }
        }
        let flag = match ControlChange::decode(raw) {
            Ok(change) if change.setting == setting => {
                change.new_value.enabled.map_or(Flag::Unset, Flag::Set)
            }
            Ok(_) => {
                tracing::warn!(
                    key,
                    "control value names another setting; using the safe default"
                );
                Flag::Unusable
            }
            Err(error) => {
                tracing::warn!(key, %error, "control value cannot be decoded; using the safe default");
                Flag::Unusable
            }
        };
        memo.insert(key, (raw.to_vec(), flag));
        flag
    }
}

// The memo is only touched from the processor's own thread; `RefCell` is
// `Send`, which is all `Processor` asks.
impl Switches for ControlSwitches {
    fn crm_writes(&self, ctx: &Context<'_>, tenant: &str) -> bool {
        match self.flag(ctx, tenant, ControlSetting::CrmWrites) {
            Flag::Set(on) => on,
            Flag::Unset => true,
            Flag::Unusable => false,
        }
    }

    fn shadow_mode(&self, ctx: &Context<'_>, tenant: &str) -> bool {
        match self.flag(ctx, tenant, ControlSetting::ShadowMode) {
            Flag::Set(on) => on,
            Flag::Unset => false,
            Flag::Unusable => true,
        }
    }
}

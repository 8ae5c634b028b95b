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
pub use settings::{
    CampaignConfig, CompletionWindow, NotificationPolicy, Origin, RouteRule, SettingError,
    TenantGrid,
};
pub use view::{ControlSnapshot, ControlTable, ControlView, Pause};

/// A promise deliberately broken, so a test can show that the soak's invariants catch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestBreak {
    /// Every pause reads as lifted: calls go out while an operator paused them.
    IgnorePauses,
}

/// Whether `what` is broken in this process: debug builds only, and only when
/// `CALLSTREAM_TEST_BREAK` names it (`ignore_pauses`). A release build never breaks a promise.
pub fn broken_for_test(what: TestBreak) -> bool {
    if !cfg!(debug_assertions) {
        return false;
    }
    static BROKEN: std::sync::OnceLock<Option<TestBreak>> = std::sync::OnceLock::new();
    let broken =
        BROKEN.get_or_init(
            || match std::env::var("CALLSTREAM_TEST_BREAK").ok().as_deref() {
                Some("ignore_pauses") => {
                    tracing::warn!(
                        "CALLSTREAM_TEST_BREAK=ignore_pauses: pauses are ignored (a test)"
                    );
                    Some(TestBreak::IgnorePauses)
                }
                _ => None,
            },
        );
    *broken == Some(what)
}

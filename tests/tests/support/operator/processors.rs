//! The processors under test, each on the runtime in a thread of this process under the
//! test's topic prefix: the contact processor, the completion detector (a one-second
//! window, so a completion goes missing at once), recovery (looking calls up at the voice
//! simulator) and the CRM dispatcher (writing to the CRM simulator).

use std::time::Duration;

use anyhow::Result;
use callstream_crm_dispatcher::CrmDispatcherConfig;
use callstream_e2e::runtime::Running;
use callstream_platform::Topics;

use super::sims::{ACCOUNT, AUTH_TOKEN, CRM_TOKEN};

pub fn start(topics: &Topics, voice_base: &str, crm_base: &str) -> Result<Vec<Running>> {
    let app_id = |name: &str| format!("{}{name}", topics.prefix);
    let fast = |c: &mut callstream_runtime::RuntimeConfig| {
        c.commit.interval = Duration::from_millis(50);
    };
    // A job held by a pause is looked at again every 2 s (60 s in production), so a test
    // sees it planned soon after the pause lifts.
    let mut contact_config = callstream_contact::ContactConfig::new(topics);
    contact_config.pause_recheck = Duration::from_secs(2);
    let contact = Running::start(
        callstream_contact::processor(contact_config),
        callstream_contact::spec(topics, &app_id(callstream_contact::APP_ID)),
        fast,
    );
    let detector = callstream_completion_detector::DetectorConfig {
        topics: topics.clone(),
        default_window_ms: 1_000,
        default_grace_ms: 0,
        ..callstream_completion_detector::DetectorConfig::default()
    };
    let detector = Running::start(
        callstream_completion_detector::processor(detector),
        callstream_completion_detector::spec(
            topics,
            &app_id(callstream_completion_detector::APP_ID),
        ),
        fast,
    );
    let mut recovery = callstream_recovery::RecoveryConfig::new(
        topics.clone(),
        callstream_recovery::TwilioAccess {
            base_url: voice_base.to_string(),
            account_sid: ACCOUNT.into(),
            auth_token: AUTH_TOKEN.into(),
        },
    );
    // A call still ringing is looked at again only after the test is over.
    recovery.poll_delay = Duration::from_secs(600);
    let effects = callstream_recovery::effect_runner(&recovery)?;
    let recovery = Running::start(
        callstream_recovery::processor(recovery.clone()),
        callstream_recovery::spec(topics, &app_id(callstream_recovery::APP_ID)),
        move |c| {
            fast(c);
            c.effects = Some(effects);
        },
    );
    let mut crm = CrmDispatcherConfig::new(topics.clone(), crm_base, CRM_TOKEN);
    // Two refused requests make a failure for good, a quarter of a second apart.
    crm.policy.retry.max_failures = 2;
    crm.policy.retry.base_delay = Duration::from_millis(250);
    crm.policy.retry.max_delay = Duration::from_secs(1);
    crm.policy.request_timeout = Duration::from_millis(1_500);
    crm.policy.connect_timeout = Duration::from_millis(500);
    crm.policy.settle = Duration::from_millis(500);
    // The simulator's search sees writes at once; the window still covers a
    // request asked for, sent and timed out (5 + 1.5 + 0.5 s).
    crm.policy.send_window = Duration::from_secs(5);
    crm.policy.settle_window = Duration::from_secs(8);
    crm.policy.search_interval = Duration::from_secs(1);
    let crm_effects = callstream_crm_dispatcher::effect_runner(&crm)?;
    let crm = Running::start(
        callstream_crm_dispatcher::processor(&crm),
        callstream_crm_dispatcher::spec(topics, &app_id(callstream_crm_dispatcher::APP_ID)),
        move |c| {
            fast(c);
            c.effects = Some(crm_effects);
        },
    );
    Ok(vec![contact, detector, recovery, crm])
}

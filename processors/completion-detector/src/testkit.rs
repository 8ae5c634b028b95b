//! Builders of the detector's inputs, as their producers write them (the
//! dispatcher's accepted `CallLaunch`, the gateway's live `CallEvent` with
//! `outcome = unknown` and the raw Twilio status), for tests here, in
//! recovery and in the end-to-end suite.

use callstream_schemas::{
    Actor, CallEvent, CallEventSource, CallLaunch, CallOutcome, CompletionSettings, ControlChange,
    ControlSetting, ControlValue, LaunchStatus,
};
use uuid::Uuid;

use crate::control::control_key;
use callstream_kit::emit::timestamp;

/// An accepted Twilio launch of `contact` with call `call_sid`, at `at_ms`.
pub fn accepted_launch(
    tenant: &str,
    contact: &str,
    launch_id: Uuid,
    call_sid: &str,
    at_ms: i64,
) -> CallLaunch {
    CallLaunch {
        event_id: Uuid::new_v5(&Uuid::NAMESPACE_OID, launch_id.as_bytes()),
        tenant_id: tenant.into(),
        occurred_at: timestamp(at_ms),
        causation_id: None,
        correlation_id: None,
        launch_id,
        job_id: Uuid::new_v5(&Uuid::NAMESPACE_URL, launch_id.as_bytes()),
        contact_id: contact.into(),
        campaign_id: "campaign-1".into(),
        status: LaunchStatus::Accepted,
        provider: "twilio".into(),
        provider_call_id: Some(call_sid.into()),
        attempts: 1,
        requested_at: timestamp(at_ms),
        reconciled: false,
        reason: None,
        reason_detail: None,
        not_before: None,
    }
}

/// A live Twilio status callback, as the gateway publishes it.
pub fn live_event(
    tenant: &str,
    contact: &str,
    launch_id: Option<Uuid>,
    call_sid: &str,
    status: &str,
    at_ms: i64,
) -> CallEvent {
    CallEvent {
        event_id: Uuid::new_v5(
            &Uuid::NAMESPACE_OID,
            format!("{tenant}/{call_sid}/{status}").as_bytes(),
        ),
        tenant_id: tenant.into(),
        occurred_at: timestamp(at_ms),
        causation_id: None,
        correlation_id: None,
        provider: "twilio".into(),
        integration_id: Some("twilio-main".into()),
        provider_event_id: format!("{call_sid}:{status}:3"),
        call_id: call_sid.into(),
        contact_id: contact.into(),
        launch_id,
        campaign_id: Some("campaign-1".into()),
        source: CallEventSource::Live,
        provider_status: status.into(),
        outcome: CallOutcome::Unknown,
        answered_by: None,
        duration_seconds: Some(30),
        sequence_number: Some(3),
        provider_error: None,
        reported_time_zone: None,
        received_at: timestamp(at_ms),
        analysis: None,
    }
}

/// The `control` record setting a completion window (key and value).
pub fn window_setting(
    tenant: &str,
    campaign: Option<&str>,
    window_ms: i64,
    grace_ms: i64,
) -> (String, ControlChange) {
    let change = ControlChange {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: timestamp(0),
        causation_id: None,
        correlation_id: None,
        setting: ControlSetting::CompletionWindow,
        campaign_id: campaign.map(str::to_string),
        new_value: ControlValue {
            completion: Some(CompletionSettings {
                window_ms,
                grace_ms,
            }),
            ..ControlValue::default()
        },
        old_value: None,
        actor: Actor::operator("ops"),
        reason: None,
    };
    (control_key(tenant, campaign), change)
}

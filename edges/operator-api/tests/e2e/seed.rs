//! The inputs of the end-to-end test, as their real producers write them: launch requests
//! from the gateway's intake, `launch_due` from the scheduler, accepted launches from the
//! launch dispatcher, a gateway call event (raw Twilio status, `outcome = unknown`), a CRM
//! command from the contact processor, exceptions of services that keep no case for them,
//! and the campaign's settings from `callstream control`. The processors under test and
//! the projections take it from there.

use callstream_schemas::{
    Actor, ActorKind, CallAnalysis, CallEvent, CallEventSource, CallLaunch, CallOutcome,
    CallingWindow, CampaignSettings, ContactCommand, ContactCommandKind, ContactDetails,
    ControlChange, ControlSetting, ControlValue, CrmAction, CrmCommand, ExceptionEvent,
    ExceptionStatus, ExceptionType, JobOrigin, LaunchStatus,
};
use chrono::{Timelike, Utc};
use uuid::Uuid;

pub const TENANT: &str = "tenant-e2e";
pub const CAMPAIGN: &str = "camp-e2e";

/// A zone where it is about noon now, so the calling window and federal quiet hours
/// let a launch through whenever the test runs (`Etc/GMT` signs are inverted).
pub fn noon_zone() -> String {
    let offset = 12 - i64::from(Utc::now().hour());
    match offset {
        0 => "Etc/GMT".to_owned(),
        o if o > 0 => format!("Etc/GMT-{o}"),
        o => format!("Etc/GMT+{}", -o),
    }
}

fn command(kind: ContactCommandKind, contact: &str, actor: Actor) -> ContactCommand {
    let id = Uuid::new_v4();
    ContactCommand {
        event_id: id,
        tenant_id: TENANT.into(),
        occurred_at: Utc::now(),
        causation_id: None,
        correlation_id: Some(id),
        kind,
        contact_id: contact.into(),
        actor,
        request_id: None,
        campaign_id: None,
        job_id: None,
        launch_id: None,
        exception_id: None,
        origin: None,
        slot: None,
        slot_at: None,
        requested_at: None,
        contact: None,
        reason: None,
    }
}

/// The gateway's launch intake enters `contact` into the campaign.
pub fn launch_request(contact: &str, do_not_call: bool) -> ContactCommand {
    let actor = Actor {
        kind: ActorKind::Integration,
        id: "launch-intake".into(),
    };
    ContactCommand {
        request_id: Some(format!("req-{contact}")),
        campaign_id: Some(CAMPAIGN.into()),
        contact: Some(ContactDetails {
            phone_number: Some("+13125550100".into()),
            time_zone: Some(noon_zone()),
            do_not_call: Some(do_not_call),
            ..ContactDetails::default()
        }),
        ..command(ContactCommandKind::LaunchRequest, contact, actor)
    }
}

/// The scheduler says the slot of `job` has come.
pub fn launch_due(contact: &str, job: Uuid) -> ContactCommand {
    let now = Utc::now();
    ContactCommand {
        job_id: Some(job),
        campaign_id: Some(CAMPAIGN.into()),
        origin: Some(JobOrigin::CampaignEntry),
        slot: Some(1),
        slot_at: Some(now),
        ..command(
            ContactCommandKind::LaunchDue,
            contact,
            Actor::system("scheduler"),
        )
    }
}

/// The launch dispatcher's report that the voice platform accepted call `sid`.
pub fn accepted(contact: &str, launch: Uuid, sid: &str) -> CallLaunch {
    let now = Utc::now();
    CallLaunch {
        event_id: Uuid::new_v4(),
        tenant_id: TENANT.into(),
        occurred_at: now,
        causation_id: None,
        correlation_id: None,
        launch_id: launch,
        job_id: Uuid::new_v4(),
        contact_id: contact.into(),
        campaign_id: CAMPAIGN.into(),
        status: LaunchStatus::Accepted,
        provider: "twilio".into(),
        provider_call_id: Some(sid.into()),
        attempts: 1,
        requested_at: now,
        reconciled: false,
        reason: None,
        reason_detail: None,
    }
}

/// A Twilio status callback as the gateway writes it: nothing interpreted. The lead
/// answered and asked for a person.
pub fn gateway_answered(contact: &str, launch: Uuid) -> CallEvent {
    let now = Utc::now();
    CallEvent {
        event_id: Uuid::new_v4(),
        tenant_id: TENANT.into(),
        occurred_at: now,
        causation_id: None,
        correlation_id: None,
        provider: "twilio".into(),
        integration_id: Some("int-twilio".into()),
        provider_event_id: Uuid::new_v4().to_string(),
        call_id: format!("CA{}", launch.simple()),
        contact_id: contact.into(),
        launch_id: Some(launch),
        campaign_id: Some(CAMPAIGN.into()),
        source: CallEventSource::Live,
        provider_status: "completed".into(),
        outcome: CallOutcome::Unknown,
        answered_by: Some("human".into()),
        duration_seconds: Some(40),
        sequence_number: Some(3),
        provider_error: None,
        reported_time_zone: None,
        received_at: now,
        analysis: Some(CallAnalysis {
            wants_person: true,
            request_phrase: Some("can I talk to a person".into()),
            ..CallAnalysis::default()
        }),
    }
}

/// An exception opened by another service (the CRM dispatcher's `crm_failed`, the
/// scheduler's `no_slot`): no processor keeps a case for it.
pub fn opened(contact: &str, exception_type: ExceptionType, service: &str) -> ExceptionEvent {
    ExceptionEvent {
        event_id: Uuid::new_v4(),
        tenant_id: TENANT.into(),
        occurred_at: Utc::now(),
        causation_id: None,
        correlation_id: None,
        exception_id: Uuid::new_v4(),
        status: ExceptionStatus::Open,
        exception_type,
        urgent: false,
        contact_id: contact.into(),
        campaign_id: Some(CAMPAIGN.into()),
        job_id: None,
        launch_id: None,
        call_id: None,
        operation_id: None,
        reason: format!("{exception_type}"),
        detail: Some("opened for the end-to-end test".into()),
        actor: Actor::system(service),
        assignee: None,
    }
}

/// A CRM note the contact processor sends after a call.
pub fn crm_note(contact: &str) -> CrmCommand {
    let now = Utc::now();
    CrmCommand {
        event_id: Uuid::new_v4(),
        tenant_id: TENANT.into(),
        occurred_at: now,
        causation_id: None,
        correlation_id: None,
        operation_id: Uuid::new_v4(),
        contact_id: contact.into(),
        action: CrmAction::AddNote,
        call_id: Some("CA-note".into()),
        campaign_id: Some(CAMPAIGN.into()),
        fact_at: now,
        properties: Default::default(),
        subject: Some("call summary".into()),
        body: Some("the lead will think about it".into()),
        due_at: None,
        owner_id: None,
    }
}

/// The campaign may call every day, around the clock (federal hours still bound it).
pub fn every_day() -> ControlChange {
    let id = Uuid::new_v4();
    ControlChange {
        event_id: id,
        tenant_id: TENANT.into(),
        occurred_at: Utc::now(),
        causation_id: None,
        correlation_id: Some(id),
        setting: ControlSetting::CampaignSettings,
        campaign_id: Some(CAMPAIGN.into()),
        new_value: ControlValue {
            campaign: Some(CampaignSettings {
                windows: vec![CallingWindow {
                    days_of_week: (1..=7).collect(),
                    start_minute: 0,
                    end_minute: 1440,
                }],
                retry_delays_minutes: vec![60],
                max_attempts: 3,
                next_campaign_id: None,
                move_buffer_minutes: 0,
            }),
            ..ControlValue::default()
        },
        old_value: None,
        actor: Actor::system("callstream-control"),
        reason: Some("end-to-end test".into()),
    }
}

//! The inputs of the end-to-end test, as their real producers write them: launch requests
//! from the gateway's intake, `launch_due` from the scheduler, accepted launches from the
//! launch dispatcher, a gateway call event (raw Twilio status, `outcome = unknown`), a CRM
//! command from the contact processor, exceptions of services that keep no case for them,
//! and the campaign's settings from `callstream control`. The processors under test and
//! the projections take it from there.

use callstream_e2e::fixtures;
use callstream_schemas::{
    Actor, CallAnalysis, CallEvent, CallLaunch, ContactCommand, ContactCommandKind, ContactDetails,
    ControlChange, ControlSetting, CrmAction, CrmCommand, ExceptionEvent, ExceptionStatus,
    ExceptionType, JobOrigin, LaunchStatus,
};
use chrono::Utc;
use uuid::Uuid;

pub const TENANT: &str = "tenant-e2e";
pub const CAMPAIGN: &str = "camp-e2e";

fn command(kind: ContactCommandKind, contact: &str, actor: Actor) -> ContactCommand {
    let id = Uuid::new_v4();
    ContactCommand {
        event_id: id,
        correlation_id: Some(id),
        ..fixtures::contact_command(TENANT, contact, kind, actor, Utc::now())
    }
}

/// The gateway's launch intake enters `contact` into the campaign.
pub fn launch_request(contact: &str, do_not_call: bool) -> ContactCommand {
    let id = Uuid::new_v4();
    let request = format!("req-{contact}");
    let phone = "+13125550100";
    ContactCommand {
        event_id: id,
        correlation_id: Some(id),
        contact: Some(ContactDetails {
            phone_number: Some(phone.into()),
            time_zone: Some(fixtures::noon_zone()),
            do_not_call: Some(do_not_call),
            ..ContactDetails::default()
        }),
        ..fixtures::launch_request(TENANT, contact, CAMPAIGN, &request, phone, Utc::now())
    }
}

/// The gateway's launch intake enters `contact`, a Kentucky lead (the CRM record says so)
/// where it is between 08:00 and 10:00 now: federal hours allow a call, Kentucky's
/// (from 10:00) do not, whenever the test runs.
pub fn kentucky_morning_request(contact: &str) -> ContactCommand {
    use chrono::Timelike;
    // At least half an hour before 10:00 there, for the launch to come due before it.
    let local_hour = if Utc::now().minute() < 30 { 9 } else { 8 };
    let mut request = launch_request(contact, false);
    if let Some(details) = request.contact.as_mut() {
        details.time_zone = Some(fixtures::zone_at(local_hour));
        details.state = Some("KY".into());
    }
    request
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
    let job = Uuid::new_v4();
    CallLaunch {
        provider_call_id: Some(sid.into()),
        ..fixtures::call_launch(
            TENANT,
            contact,
            CAMPAIGN,
            launch,
            job,
            LaunchStatus::Accepted,
            Utc::now(),
        )
    }
}

/// A Twilio status callback as the gateway writes it: nothing interpreted. The lead
/// answered and asked for a person.
pub fn gateway_answered(contact: &str, launch: Uuid) -> CallEvent {
    let call = format!("CA{}", launch.simple());
    CallEvent {
        integration_id: Some("int-twilio".into()),
        provider_event_id: Uuid::new_v4().to_string(),
        launch_id: Some(launch),
        campaign_id: Some(CAMPAIGN.into()),
        answered_by: Some("human".into()),
        duration_seconds: Some(40),
        sequence_number: Some(3),
        analysis: Some(CallAnalysis {
            wants_person: true,
            request_phrase: Some("can I talk to a person".into()),
            ..CallAnalysis::default()
        }),
        ..fixtures::call_event(TENANT, contact, &call, "completed", Utc::now())
    }
}

/// An exception opened by another service (the CRM dispatcher's `crm_failed`, the
/// scheduler's `no_slot`): no processor keeps a case for it.
pub fn opened(contact: &str, exception_type: ExceptionType, service: &str) -> ExceptionEvent {
    ExceptionEvent {
        campaign_id: Some(CAMPAIGN.into()),
        detail: Some("opened for the end-to-end test".into()),
        ..fixtures::exception(
            TENANT,
            contact,
            Uuid::new_v4(),
            ExceptionStatus::Open,
            exception_type,
            Actor::system(service),
            Utc::now(),
        )
    }
}

/// A CRM note the contact processor sends after a call.
pub fn crm_note(contact: &str) -> CrmCommand {
    CrmCommand {
        call_id: Some("CA-note".into()),
        campaign_id: Some(CAMPAIGN.into()),
        subject: Some("call summary".into()),
        body: Some("the lead will think about it".into()),
        ..fixtures::crm_command(
            TENANT,
            contact,
            Uuid::new_v4(),
            CrmAction::AddNote,
            Utc::now(),
        )
    }
}

/// The campaign may call every day, around the clock (federal hours still bound it).
pub fn every_day() -> ControlChange {
    let id = Uuid::new_v4();
    let value = fixtures::every_day_campaign(60);
    ControlChange {
        event_id: id,
        correlation_id: Some(id),
        reason: Some("end-to-end test".into()),
        ..fixtures::control_change(
            TENANT,
            ControlSetting::CampaignSettings,
            Some(CAMPAIGN),
            value,
            Actor::system("callstream-control"),
            Utc::now(),
        )
    }
}

//! Events as their producers write them, for tests in every crate: one builder per event
//! type, so a new field in a schema is filled in here once, not in a copy per crate.
//!
//! Each builder takes what tells one event from another (tenant, contact, ids, kind, time)
//! and fills the rest as a plain event of its kind has it: a fresh random `event_id`, no
//! causation or correlation, every optional field empty, Twilio as the provider. A test sets
//! what it cares about with struct update syntax, `Event { reason: .., ..fixtures::x(..) }`,
//! so the fields it names are the ones it depends on. Builders never read the clock (except
//! `noon_zone`, which is about now by definition): times are arguments.

use callstream_schemas::{
    Actor, ActorKind, AuditEvent, AuditResult, CallEvent, CallEventSource, CallLaunch, CallOutcome,
    CallingWindow, CampaignSettings, CompletionMissing, ContactCommand, ContactCommandKind,
    ContactDetails, ControlChange, ControlSetting, ControlValue, CrmAction, CrmCommand,
    ExceptionEvent, ExceptionStatus, ExceptionType, JobOrigin, LaunchCommand, LaunchStatus,
    MissingTrigger, ScheduleRequest, ScheduleRequestKind, Timestamp,
};
use chrono::Timelike;
use uuid::Uuid;

/// A deterministic id for `parts` (UUID v5 in the OID namespace): the same test input gets
/// the same ids on every run.
pub fn id(parts: &str) -> Uuid {
    Uuid::new_v5(&Uuid::NAMESPACE_OID, parts.as_bytes())
}

/// A fixed-offset zone where it is about noon now, so federal quiet hours and an all-day
/// calling window let a launch through whenever the test runs (`Etc/GMT` signs are
/// inverted: `Etc/GMT-3` is UTC+3).
pub fn noon_zone() -> String {
    zone_at(12)
}

/// An IANA zone (`Etc/GMT±N`, whole hours) where the hour now is `local_hour` (0-23), for
/// tests whose outcome depends on the lead's local time, whenever they run.
pub fn zone_at(local_hour: u32) -> String {
    let diff = (i64::from(local_hour) - i64::from(chrono::Utc::now().hour())).rem_euclid(24);
    // Etc zones run from UTC-12 to UTC+14: keep the offset in (-12, 12].
    let offset = if diff > 12 { diff - 24 } else { diff };
    match offset {
        0 => "Etc/GMT".to_owned(),
        o if o > 0 => format!("Etc/GMT-{o}"),
        o => format!("Etc/GMT+{}", -o),
    }
}

/// The gateway's launch intake entering `contact` into `campaign` (request `request`), with
/// the contact's phone number and nothing else known about it.
pub fn launch_request(
    tenant: &str,
    contact: &str,
    campaign: &str,
    request: &str,
    phone: &str,
    at: Timestamp,
) -> ContactCommand {
    let intake = Actor {
        kind: ActorKind::Integration,
        id: "launch-intake".into(),
    };
    ContactCommand {
        request_id: Some(request.into()),
        campaign_id: Some(campaign.into()),
        contact: Some(ContactDetails {
            phone_number: Some(phone.into()),
            ..ContactDetails::default()
        }),
        ..contact_command(
            tenant,
            contact,
            ContactCommandKind::LaunchRequest,
            intake,
            at,
        )
    }
}

/// A command of `kind` about `contact` on `contact-commands` (or `crm-commands`, for a CRM
/// retry), by `actor`.
pub fn contact_command(
    tenant: &str,
    contact: &str,
    kind: ContactCommandKind,
    actor: Actor,
    at: Timestamp,
) -> ContactCommand {
    ContactCommand {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
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

/// A change of `setting` (of `campaign`, or tenant-wide) on the `control` table.
pub fn control_change(
    tenant: &str,
    setting: ControlSetting,
    campaign: Option<&str>,
    new_value: ControlValue,
    actor: Actor,
    at: Timestamp,
) -> ControlChange {
    ControlChange {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
        setting,
        campaign_id: campaign.map(str::to_owned),
        new_value,
        old_value: None,
        actor,
        reason: None,
    }
}

/// A switch (a pause, shadow mode, the CRM write switch) of the tenant set to `enabled`
/// (`None` clears it).
pub fn switch(
    tenant: &str,
    setting: ControlSetting,
    enabled: Option<bool>,
    actor: Actor,
    at: Timestamp,
) -> ControlChange {
    let value = ControlValue {
        enabled,
        ..ControlValue::default()
    };
    control_change(tenant, setting, None, value, actor, at)
}

/// Campaign settings that let a campaign call every day, around the clock
/// (federal hours still bound it), retrying after `retry_minutes`, at most
/// three attempts.
pub fn every_day_campaign(retry_minutes: i32) -> ControlValue {
    ControlValue {
        campaign: Some(CampaignSettings {
            windows: vec![CallingWindow {
                days_of_week: (1..=7).collect(),
                start_minute: 0,
                end_minute: 1440,
            }],
            retry_delays_minutes: vec![retry_minutes],
            max_attempts: 3,
            next_campaign_id: None,
            move_buffer_minutes: 0,
        }),
        ..ControlValue::default()
    }
}

/// A Twilio status callback for call `call_id`, as the gateway writes it: the raw status,
/// nothing interpreted (`outcome = unknown`), `provider_event_id` `{call_id}:{status}`.
pub fn call_event(
    tenant: &str,
    contact: &str,
    call_id: &str,
    status: &str,
    at: Timestamp,
) -> CallEvent {
    CallEvent {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
        provider: "twilio".into(),
        integration_id: None,
        provider_event_id: format!("{call_id}:{status}"),
        call_id: call_id.into(),
        contact_id: contact.into(),
        launch_id: None,
        campaign_id: None,
        source: CallEventSource::Live,
        provider_status: status.into(),
        outcome: CallOutcome::Unknown,
        answered_by: None,
        duration_seconds: None,
        sequence_number: None,
        provider_error: None,
        reported_time_zone: None,
        received_at: at,
        analysis: None,
    }
}

/// A first-attempt launch command of job `job` (a campaign entry) to `to_number`, due at `at`.
pub fn launch_command(
    tenant: &str,
    contact: &str,
    campaign: &str,
    launch: Uuid,
    job: Uuid,
    to_number: &str,
    at: Timestamp,
) -> LaunchCommand {
    LaunchCommand {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
        launch_id: launch,
        job_id: job,
        contact_id: contact.into(),
        campaign_id: campaign.into(),
        origin: JobOrigin::CampaignEntry,
        attempt: 1,
        to_number: to_number.into(),
        from_number: None,
        provider: None,
        slot_at: at,
        expires_at: None,
        slot_ends_at: None,
        time_zone: None,
        jurisdictions: Vec::new(),
        jurisdiction_source: None,
        placed_calls: Vec::new(),
    }
}

/// The launch dispatcher's report on launch `launch`, requested at `at`, after one attempt.
pub fn call_launch(
    tenant: &str,
    contact: &str,
    campaign: &str,
    launch: Uuid,
    job: Uuid,
    status: LaunchStatus,
    at: Timestamp,
) -> CallLaunch {
    CallLaunch {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
        launch_id: launch,
        job_id: job,
        contact_id: contact.into(),
        campaign_id: campaign.into(),
        status,
        provider: "twilio".into(),
        provider_call_id: None,
        attempts: 1,
        requested_at: at,
        reconciled: false,
        reason: None,
        reason_detail: None,
        not_before: None,
    }
}

/// A CRM command `action` with operation id `operation`, for a fact at `at`.
pub fn crm_command(
    tenant: &str,
    contact: &str,
    operation: Uuid,
    action: CrmAction,
    at: Timestamp,
) -> CrmCommand {
    CrmCommand {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
        operation_id: operation,
        contact_id: contact.into(),
        action,
        call_id: None,
        campaign_id: None,
        fact_at: at,
        properties: Default::default(),
        subject: None,
        body: None,
        due_at: None,
        owner_id: None,
    }
}

/// Exception `exception` of `contact` in `status`, not urgent, by `actor`; its reason is its
/// type's name.
pub fn exception(
    tenant: &str,
    contact: &str,
    exception: Uuid,
    status: ExceptionStatus,
    exception_type: ExceptionType,
    actor: Actor,
    at: Timestamp,
) -> ExceptionEvent {
    ExceptionEvent {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
        exception_id: exception,
        status,
        exception_type,
        urgent: false,
        contact_id: contact.into(),
        campaign_id: None,
        job_id: None,
        launch_id: None,
        call_id: None,
        operation_id: None,
        reason: exception_type.to_string(),
        detail: None,
        actor,
        assignee: None,
    }
}

/// An audit of `action` on `subject_type` `subject_id` by `actor`, ending in `result`.
pub fn audit(
    tenant: &str,
    actor: Actor,
    action: &str,
    (subject_type, subject_id): (&str, &str),
    result: AuditResult,
    at: Timestamp,
) -> AuditEvent {
    AuditEvent {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
        actor,
        action: action.into(),
        subject_type: subject_type.into(),
        subject_id: subject_id.into(),
        contact_id: None,
        command_id: None,
        result,
        reason: None,
        detail: None,
    }
}

/// The detector's report that launch `launch` (Twilio call `call_id`) has had no completion
/// by `deadline` (by the wall clock), with a zero window and grace.
pub fn completion_missing(
    tenant: &str,
    contact: &str,
    launch: Uuid,
    call_id: &str,
    deadline: Timestamp,
) -> CompletionMissing {
    CompletionMissing {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: deadline,
        causation_id: None,
        correlation_id: None,
        launch_id: launch,
        job_id: None,
        contact_id: contact.into(),
        campaign_id: None,
        provider: "twilio".into(),
        provider_call_id: call_id.into(),
        accepted_at: deadline,
        deadline_at: deadline,
        window_ms: 0,
        grace_ms: 0,
        trigger: MissingTrigger::WallClock,
    }
}

/// A first-attempt plan of job `job` (a campaign entry) in `America/Chicago`, no earlier
/// than `at`.
pub fn schedule_plan(
    tenant: &str,
    contact: &str,
    campaign: &str,
    job: Uuid,
    at: Timestamp,
) -> ScheduleRequest {
    ScheduleRequest {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
        kind: ScheduleRequestKind::Plan,
        job_id: job,
        contact_id: contact.into(),
        campaign_id: campaign.into(),
        origin: JobOrigin::CampaignEntry,
        earliest_at: Some(at),
        requested_at: None,
        replaces_job_id: None,
        reason: "campaign_entry".into(),
        reason_detail: None,
        time_zone: Some("America/Chicago".into()),
        time_zone_source: None,
        windows: Vec::new(),
        attempt: Some(1),
        jurisdictions: Vec::new(),
        jurisdiction_source: None,
        placed_calls: Vec::new(),
    }
}

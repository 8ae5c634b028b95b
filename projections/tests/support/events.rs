//! A synthetic but consistent workload: for each contact, a planned job through the whole
//! pipeline (plan, allocation, due, launch command, launch, completion), with some moved
//! (a replacement job naming the one it replaces), some cancelled, some completions
//! missing and recovered, exceptions opened and resolved, control changes and operator
//! commands with their audit events. `Expected` says what the views must then hold.

use callstream_e2e::fixtures;
use callstream_schemas::*;
use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

/// What the views must hold after a workload.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Expected {
    pub jobs: i64,
    pub completed_jobs: i64,
    pub cancelled_jobs: i64,
    pub replaced_jobs: i64,
    pub launches: i64,
    pub missing_open: i64,
    pub exceptions: i64,
    pub open_exceptions: i64,
    pub booked_slots: i64,
    pub commands: i64,
    pub timeline: i64,
}

fn at(base: DateTime<Utc>, seconds: i64) -> DateTime<Utc> {
    base + Duration::seconds(seconds)
}

/// The events of `contacts` contacts of `tenant`, and what they add to the views.
pub fn workload(tenant: &str, contacts: usize, base: DateTime<Utc>) -> (Vec<AnyEvent>, Expected) {
    let mut out: Vec<AnyEvent> = Vec::new();
    let mut x = Expected::default();
    for i in 0..contacts {
        let contact = format!("c{i}");
        let campaign = format!("camp{}", i % 3);
        let t0 = at(base, i as i64 * 75);
        let job = Uuid::new_v4();
        let slot = 1_000_000 + i as i64;
        out.push(plan(tenant, &contact, &campaign, job, None, t0).into());
        out.push(
            schedule(
                tenant,
                &contact,
                &campaign,
                job,
                ScheduleEventKind::Allocated,
                Some(slot),
                t0,
            )
            .into(),
        );
        x.jobs += 1;
        x.timeline += 2;
        if i % 10 == 9 {
            // Cancelled before it is due: the slot is freed.
            out.push(
                schedule(
                    tenant,
                    &contact,
                    &campaign,
                    job,
                    ScheduleEventKind::Cancelled,
                    Some(slot),
                    at(t0, 1),
                )
                .into(),
            );
            x.cancelled_jobs += 1;
            x.timeline += 1;
            continue;
        }
        x.booked_slots += 1;
        let job = if i % 7 == 3 {
            // Moved out of the window: a new job replaces it.
            let new = Uuid::new_v4();
            out.push(plan(tenant, &contact, &campaign, new, Some(job), at(t0, 2)).into());
            let mut alloc = schedule(
                tenant,
                &contact,
                &campaign,
                new,
                ScheduleEventKind::Allocated,
                Some(slot + 100_000),
                at(t0, 2),
            );
            alloc.replaces_job_id = Some(job);
            out.push(alloc.into());
            x.jobs += 1;
            x.replaced_jobs += 1;
            x.booked_slots += 1;
            x.timeline += 2;
            new
        } else {
            job
        };
        out.push(
            schedule(
                tenant,
                &contact,
                &campaign,
                job,
                ScheduleEventKind::LaunchDue,
                None,
                at(t0, 3),
            )
            .into(),
        );
        let launch = Uuid::new_v4();
        out.push(launch_command(tenant, &contact, &campaign, job, launch, at(t0, 3)).into());
        out.push(call_launch(tenant, &contact, &campaign, job, launch, at(t0, 4)).into());
        x.launches += 1;
        x.timeline += 3;
        if i % 5 == 4 {
            // The completion never came: missing, then (for half of them) recovered.
            out.push(missing(tenant, &contact, &campaign, job, launch, at(t0, 1300)).into());
            x.timeline += 1;
            if i % 10 == 4 {
                let ev = call_event(
                    tenant,
                    &contact,
                    &campaign,
                    launch,
                    CallEventSource::Recovery,
                    at(t0, 1301),
                );
                out.push(resolved(tenant, &contact, launch, ev.event_id, at(t0, 1302)).into());
                out.push(ev.into());
                x.completed_jobs += 1;
                x.timeline += 2;
            } else {
                x.missing_open += 1;
            }
        } else {
            let ev = call_event(
                tenant,
                &contact,
                &campaign,
                launch,
                CallEventSource::Live,
                at(t0, 60),
            );
            out.push(ev.clone().into());
            // A duplicate delivery changes nothing.
            out.push(ev.into());
            x.completed_jobs += 1;
            x.timeline += 1;
        }
        if i % 4 == 0 {
            let id = Uuid::new_v4();
            out.push(exception(tenant, &contact, id, ExceptionStatus::Open, at(t0, 61)).into());
            x.exceptions += 1;
            x.timeline += 1;
            if i % 8 == 0 {
                out.push(
                    exception(tenant, &contact, id, ExceptionStatus::Resolved, at(t0, 62)).into(),
                );
                x.timeline += 1;
            } else {
                x.open_exceptions += 1;
                // An operator takes it (and the assignment is its own applied command).
                let assign = AuditEvent {
                    action: callstream_schemas::AUDIT_EXCEPTION_ASSIGN.into(),
                    subject_type: "exception".into(),
                    subject_id: id.to_string(),
                    detail: Some(format!("op{}", i % 3)),
                    actor: Actor::operator("lead@example.com"),
                    ..audit(tenant, Some(&contact), None, at(t0, 62))
                };
                let assign = AuditEvent {
                    command_id: Some(assign.event_id),
                    ..assign
                };
                out.push(assign.into());
                x.commands += 1;
                x.timeline += 1;
            }
        }
        if i % 6 == 0 {
            let cmd = operator_command(tenant, &contact, at(t0, 63));
            out.push(audit(tenant, Some(&contact), Some(cmd.event_id), at(t0, 64)).into());
            out.push(cmd.into());
            x.commands += 1;
            x.timeline += 2;
        }
    }
    // An operator replays a dead letter (the replays table does not need the letter).
    out.push(
        AuditEvent {
            action: callstream_schemas::AUDIT_DEAD_LETTER_REPLAY.into(),
            subject_type: "dead_letter".into(),
            subject_id: Uuid::new_v4().to_string(),
            actor: Actor::operator("lead@example.com"),
            ..audit(tenant, None, None, at(base, 3))
        }
        .into(),
    );
    out.push(control(tenant, ControlSetting::SystemPause, Some(false), base).into());
    out.push(control(tenant, ControlSetting::ShadowMode, Some(true), at(base, 5)).into());
    out.push(control(tenant, ControlSetting::ShadowMode, Some(false), at(base, 9)).into());
    x.commands += 3;
    // Every event about a job carries the origin its plan gave it, as the processors copy it.
    let origins: std::collections::HashMap<Uuid, JobOrigin> = out
        .iter()
        .filter_map(|e| match e {
            AnyEvent::ScheduleRequest(r) => Some((r.job_id, r.origin)),
            _ => None,
        })
        .collect();
    for event in &mut out {
        match event {
            AnyEvent::ScheduleEvent(e) => e.origin = origins[&e.job_id],
            AnyEvent::LaunchCommand(c) => c.origin = origins[&c.job_id],
            _ => {}
        }
    }
    (out, x)
}

fn env_ids() -> (Uuid, Option<Uuid>) {
    (Uuid::new_v4(), None)
}

pub fn plan(
    tenant: &str,
    contact: &str,
    campaign: &str,
    job: Uuid,
    replaces: Option<Uuid>,
    t: DateTime<Utc>,
) -> ScheduleRequest {
    ScheduleRequest {
        origin: if replaces.is_some() {
            JobOrigin::WindowMove
        } else {
            JobOrigin::CampaignEntry
        },
        replaces_job_id: replaces,
        reason: if replaces.is_some() {
            "outside_window".into()
        } else {
            "campaign_entry".into()
        },
        time_zone_source: Some(ZoneSource::Contact),
        ..fixtures::schedule_plan(tenant, contact, campaign, job, t)
    }
}

pub fn schedule(
    tenant: &str,
    contact: &str,
    campaign: &str,
    job: Uuid,
    kind: ScheduleEventKind,
    slot: Option<i64>,
    t: DateTime<Utc>,
) -> ScheduleEvent {
    let (event_id, causation_id) = env_ids();
    ScheduleEvent {
        event_id,
        tenant_id: tenant.into(),
        occurred_at: t,
        causation_id,
        correlation_id: None,
        kind,
        job_id: job,
        contact_id: contact.into(),
        campaign_id: campaign.into(),
        origin: JobOrigin::CampaignEntry,
        slot,
        slot_at: slot.map(|_| t + Duration::minutes(5)),
        earliest_at: Some(t),
        requested_at: None,
        replaces_job_id: None,
        time_zone: Some("America/Chicago".into()),
        time_zone_source: Some(ZoneSource::Contact),
        reason: format!("{kind}"),
        reason_detail: None,
    }
}

pub fn launch_command(
    tenant: &str,
    contact: &str,
    campaign: &str,
    job: Uuid,
    launch: Uuid,
    t: DateTime<Utc>,
) -> LaunchCommand {
    fixtures::launch_command(tenant, contact, campaign, launch, job, "+13125550100", t)
}

pub fn call_launch(
    tenant: &str,
    contact: &str,
    campaign: &str,
    job: Uuid,
    launch: Uuid,
    t: DateTime<Utc>,
) -> CallLaunch {
    CallLaunch {
        provider_call_id: Some(format!("CA{}", launch.simple())),
        ..fixtures::call_launch(
            tenant,
            contact,
            campaign,
            launch,
            job,
            LaunchStatus::Accepted,
            t,
        )
    }
}

pub fn call_event(
    tenant: &str,
    contact: &str,
    campaign: &str,
    launch: Uuid,
    source: CallEventSource,
    t: DateTime<Utc>,
) -> CallEvent {
    let call = format!("CA{}", launch.simple());
    CallEvent {
        provider_event_id: Uuid::new_v4().to_string(),
        launch_id: Some(launch),
        campaign_id: Some(campaign.into()),
        source,
        // Consistent with the outcome: the raw status (`completed`, below) wins over the
        // stated one.
        outcome: CallOutcome::Voicemail,
        answered_by: Some("machine_end_beep".into()),
        duration_seconds: Some(30),
        ..fixtures::call_event(tenant, contact, &call, "completed", t)
    }
}

pub fn missing(
    tenant: &str,
    contact: &str,
    campaign: &str,
    job: Uuid,
    launch: Uuid,
    t: DateTime<Utc>,
) -> CompletionMissing {
    let call = format!("CA{}", launch.simple());
    CompletionMissing {
        job_id: Some(job),
        campaign_id: Some(campaign.into()),
        accepted_at: t - Duration::minutes(21),
        window_ms: 1_200_000,
        grace_ms: 60_000,
        ..fixtures::completion_missing(tenant, contact, launch, &call, t)
    }
}

pub fn resolved(
    tenant: &str,
    contact: &str,
    launch: Uuid,
    completion: Uuid,
    t: DateTime<Utc>,
) -> CompletionResolved {
    CompletionResolved {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: t,
        causation_id: None,
        correlation_id: None,
        launch_id: launch,
        contact_id: contact.into(),
        provider_call_id: None,
        missing_event_id: Uuid::new_v4(),
        resolution: Resolution::Recovered,
        completion_event_id: Some(completion),
        outcome: Some(CallOutcome::Voicemail),
        actor: Actor::system("recovery"),
        late_by_ms: None,
    }
}

pub fn exception(
    tenant: &str,
    contact: &str,
    id: Uuid,
    status: ExceptionStatus,
    t: DateTime<Utc>,
) -> ExceptionEvent {
    let actor = if status == ExceptionStatus::Open {
        Actor::system("contact")
    } else {
        Actor::operator("ops@example.com")
    };
    ExceptionEvent {
        urgent: true,
        reason: "wants_person".into(),
        ..fixtures::exception(
            tenant,
            contact,
            id,
            status,
            ExceptionType::UrgentRequest,
            actor,
            t,
        )
    }
}

pub fn operator_command(tenant: &str, contact: &str, t: DateTime<Utc>) -> ContactCommand {
    let actor = Actor::operator("ops@example.com");
    ContactCommand {
        origin: Some(JobOrigin::OperatorRetry),
        reason: Some("asked".into()),
        ..fixtures::contact_command(tenant, contact, ContactCommandKind::RetryNow, actor, t)
    }
}

pub fn audit(
    tenant: &str,
    contact: Option<&str>,
    command: Option<Uuid>,
    t: DateTime<Utc>,
) -> AuditEvent {
    AuditEvent {
        causation_id: command,
        contact_id: contact.map(Into::into),
        command_id: command,
        ..fixtures::audit(
            tenant,
            Actor::system("contact"),
            "command.retry_now",
            ("contact", contact.unwrap_or("-")),
            AuditResult::Applied,
            t,
        )
    }
}

pub fn control(
    tenant: &str,
    setting: ControlSetting,
    enabled: Option<bool>,
    t: DateTime<Utc>,
) -> ControlChange {
    ControlChange {
        reason: Some("test".into()),
        ..fixtures::switch(
            tenant,
            setting,
            enabled,
            Actor::operator("admin@example.com"),
            t,
        )
    }
}

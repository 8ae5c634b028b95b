//! The events the projections benchmark feeds: the projections tests'
//! synthetic but consistent workload (projections/tests/utils/events.rs,
//! test-only, so copied here in short), about 7.4 events a contact: each
//! contact's job through the pipeline (plan, allocation, due, launch
//! command, launch, completion, a duplicate delivery), some moved to a
//! replacement job, some cancelled, some completions missing and recovered,
//! exceptions opened and resolved, operator commands with their audit.
//! Every view gets work; the timeline view gets every event.

use callstream_platform::topics::{self as t, Topics};
use callstream_schemas::*;
use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

/// Tenants the contacts are spread over (schedule topics are keyed by tenant).
const TENANTS: usize = 4;

/// The events of contacts `from..from + contacts`, named after `run`, in the
/// order a pipeline would emit them per contact.
pub fn workload(run: &str, from: usize, contacts: usize, base: DateTime<Utc>) -> Vec<AnyEvent> {
    let mut out: Vec<AnyEvent> = Vec::with_capacity(contacts * 8);
    for i in from..from + contacts {
        let c = Ids {
            tenant: format!("{run}-t{}", i % TENANTS),
            contact: format!("{run}-c{i}"),
            campaign: format!("camp{}", i % 3),
        };
        let t0 = base + Duration::seconds(i as i64 * 75);
        let at = |s: i64| t0 + Duration::seconds(s);
        let slot = 1_000_000 + i as i64;
        let first = Uuid::new_v4();
        out.push(c.plan(first, None, t0).into());
        out.push(
            c.schedule(first, ScheduleEventKind::Allocated, Some(slot), t0)
                .into(),
        );
        if i % 10 == 9 {
            // Cancelled before it is due: the slot is freed.
            out.push(
                c.schedule(first, ScheduleEventKind::Cancelled, Some(slot), at(1))
                    .into(),
            );
            continue;
        }
        let job = if i % 7 == 3 {
            // Moved out of the window: a new job replaces it.
            let new = Uuid::new_v4();
            out.push(c.plan(new, Some(first), at(2)).into());
            let mut alloc = c.schedule(
                new,
                ScheduleEventKind::Allocated,
                Some(slot + 100_000_000),
                at(2),
            );
            alloc.replaces_job_id = Some(first);
            alloc.origin = JobOrigin::WindowMove;
            out.push(alloc.into());
            new
        } else {
            first
        };
        let origin = if job == first {
            JobOrigin::CampaignEntry
        } else {
            JobOrigin::WindowMove
        };
        let mut due = c.schedule(job, ScheduleEventKind::LaunchDue, None, at(3));
        due.origin = origin;
        out.push(due.into());
        let launch = Uuid::new_v4();
        out.push(c.launch_command(job, launch, origin, at(3)).into());
        out.push(c.call_launch(job, launch, at(4)).into());
        if i % 5 == 4 {
            // The completion never came: missing, then (for half of them) recovered.
            out.push(c.missing(job, launch, at(1300)).into());
            if i % 10 == 4 {
                let ev = c.call_event(launch, CallEventSource::Recovery, at(1301));
                out.push(c.resolved(launch, ev.event_id, at(1302)).into());
                out.push(ev.into());
            }
        } else {
            let ev = c.call_event(launch, CallEventSource::Live, at(60));
            out.push(ev.clone().into());
            // A duplicate delivery changes nothing.
            out.push(ev.into());
        }
        if i % 4 == 0 {
            let id = Uuid::new_v4();
            out.push(c.exception(id, ExceptionStatus::Open, at(61)).into());
            if i % 8 == 0 {
                out.push(c.exception(id, ExceptionStatus::Resolved, at(62)).into());
            }
        }
        if i % 6 == 0 {
            let cmd = c.operator_command(at(63));
            out.push(c.audit(cmd.event_id, at(64)).into());
            out.push(cmd.into());
        }
    }
    out
}

/// The physical topic an event goes to, and its key, as the services route them.
pub fn route(topics: &Topics, event: &AnyEvent) -> (String, String) {
    let env = event.envelope();
    let (logical, key) = match event {
        AnyEvent::CallEvent(e) => (t::CALL_EVENTS, e.contact_id.clone()),
        AnyEvent::ContactCommand(e) => (t::CONTACT_COMMANDS, e.contact_id.clone()),
        AnyEvent::ScheduleRequest(_) => (t::SCHEDULE_REQUESTS, env.tenant_id.to_string()),
        AnyEvent::ScheduleEvent(_) => (t::SCHEDULE_EVENTS, env.tenant_id.to_string()),
        AnyEvent::LaunchCommand(e) => (t::LAUNCH_COMMANDS, e.contact_id.clone()),
        AnyEvent::CallLaunch(e) => (t::CALL_LAUNCHES, e.contact_id.clone()),
        AnyEvent::CompletionMissing(e) => (t::COMPLETION_MISSING, e.contact_id.clone()),
        AnyEvent::CompletionResolved(e) => (t::COMPLETION_RESOLVED, e.contact_id.clone()),
        AnyEvent::ExceptionEvent(e) => (t::EXCEPTIONS, e.contact_id.clone()),
        AnyEvent::AuditEvent(_) => (t::AUDIT, env.tenant_id.to_string()),
        _ => (t::DEAD_LETTERS, env.tenant_id.to_string()),
    };
    (topics.name(logical), key)
}

/// Who the events of one contact are about.
struct Ids {
    tenant: String,
    contact: String,
    campaign: String,
}

impl Ids {
    fn plan(&self, job: Uuid, replaces: Option<Uuid>, t: DateTime<Utc>) -> ScheduleRequest {
        let moved = replaces.is_some();
        ScheduleRequest {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: None,
            correlation_id: None,
            kind: ScheduleRequestKind::Plan,
            job_id: job,
            contact_id: self.contact.clone(),
            campaign_id: self.campaign.clone(),
            origin: if moved {
                JobOrigin::WindowMove
            } else {
                JobOrigin::CampaignEntry
            },
            earliest_at: Some(t),
            requested_at: None,
            replaces_job_id: replaces,
            reason: if moved {
                "outside_window"
            } else {
                "campaign_entry"
            }
            .into(),
            reason_detail: None,
            time_zone: Some("America/Chicago".into()),
            time_zone_source: Some(ZoneSource::Contact),
            windows: vec![],
            attempt: Some(1),
            jurisdictions: vec![],
            jurisdiction_source: None,
            placed_calls: vec![],
        }
    }

    fn schedule(
        &self,
        job: Uuid,
        kind: ScheduleEventKind,
        slot: Option<i64>,
        t: DateTime<Utc>,
    ) -> ScheduleEvent {
        ScheduleEvent {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: None,
            correlation_id: None,
            kind,
            job_id: job,
            contact_id: self.contact.clone(),
            campaign_id: self.campaign.clone(),
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

    fn launch_command(
        &self,
        job: Uuid,
        launch: Uuid,
        origin: JobOrigin,
        t: DateTime<Utc>,
    ) -> LaunchCommand {
        LaunchCommand {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: None,
            correlation_id: None,
            launch_id: launch,
            job_id: job,
            contact_id: self.contact.clone(),
            campaign_id: self.campaign.clone(),
            origin,
            attempt: 1,
            to_number: "+13125550100".into(),
            from_number: None,
            provider: None,
            slot_at: t,
            expires_at: None,
            slot_ends_at: None,
            time_zone: None,
            jurisdictions: vec![],
            jurisdiction_source: None,
            placed_calls: vec![],
        }
    }

    fn call_launch(&self, job: Uuid, launch: Uuid, t: DateTime<Utc>) -> CallLaunch {
        CallLaunch {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: None,
            correlation_id: None,
            launch_id: launch,
            job_id: job,
            contact_id: self.contact.clone(),
            campaign_id: self.campaign.clone(),
            status: LaunchStatus::Accepted,
            provider: "twilio".into(),
            provider_call_id: Some(format!("CA{}", launch.simple())),
            attempts: 1,
            requested_at: t,
            reconciled: false,
            reason: None,
            reason_detail: None,
            not_before: None,
        }
    }

    fn call_event(&self, launch: Uuid, source: CallEventSource, t: DateTime<Utc>) -> CallEvent {
        CallEvent {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: None,
            correlation_id: None,
            provider: "twilio".into(),
            integration_id: None,
            provider_event_id: Uuid::new_v4().to_string(),
            call_id: format!("CA{}", launch.simple()),
            contact_id: self.contact.clone(),
            launch_id: Some(launch),
            campaign_id: Some(self.campaign.clone()),
            source,
            provider_status: "completed".into(),
            outcome: CallOutcome::Voicemail,
            answered_by: None,
            duration_seconds: Some(30),
            sequence_number: None,
            provider_error: None,
            reported_time_zone: None,
            received_at: t,
            analysis: None,
        }
    }

    fn missing(&self, job: Uuid, launch: Uuid, t: DateTime<Utc>) -> CompletionMissing {
        CompletionMissing {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: None,
            correlation_id: None,
            launch_id: launch,
            job_id: Some(job),
            contact_id: self.contact.clone(),
            campaign_id: Some(self.campaign.clone()),
            provider: "twilio".into(),
            provider_call_id: format!("CA{}", launch.simple()),
            accepted_at: t - Duration::minutes(21),
            deadline_at: t,
            window_ms: 1_200_000,
            grace_ms: 60_000,
            trigger: MissingTrigger::WallClock,
        }
    }

    fn resolved(&self, launch: Uuid, completion: Uuid, t: DateTime<Utc>) -> CompletionResolved {
        CompletionResolved {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: None,
            correlation_id: None,
            launch_id: launch,
            contact_id: self.contact.clone(),
            provider_call_id: None,
            missing_event_id: Uuid::new_v4(),
            resolution: Resolution::Recovered,
            completion_event_id: Some(completion),
            outcome: Some(CallOutcome::Voicemail),
            actor: Actor::system("recovery"),
            late_by_ms: None,
        }
    }

    fn exception(&self, id: Uuid, status: ExceptionStatus, t: DateTime<Utc>) -> ExceptionEvent {
        ExceptionEvent {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: None,
            correlation_id: None,
            exception_id: id,
            status,
            exception_type: ExceptionType::UrgentRequest,
            urgent: true,
            contact_id: self.contact.clone(),
            campaign_id: None,
            job_id: None,
            launch_id: None,
            call_id: None,
            operation_id: None,
            reason: "wants_person".into(),
            detail: None,
            actor: if status == ExceptionStatus::Open {
                Actor::system("contact")
            } else {
                Actor::operator("ops@example.com")
            },
            assignee: None,
        }
    }

    fn operator_command(&self, t: DateTime<Utc>) -> ContactCommand {
        ContactCommand {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: None,
            correlation_id: None,
            kind: ContactCommandKind::RetryNow,
            contact_id: self.contact.clone(),
            actor: Actor::operator("ops@example.com"),
            request_id: None,
            campaign_id: None,
            job_id: None,
            launch_id: None,
            exception_id: None,
            origin: Some(JobOrigin::OperatorRetry),
            slot: None,
            slot_at: None,
            requested_at: None,
            contact: None,
            reason: Some("asked".into()),
        }
    }

    fn audit(&self, command: Uuid, t: DateTime<Utc>) -> AuditEvent {
        AuditEvent {
            event_id: Uuid::new_v4(),
            tenant_id: self.tenant.clone(),
            occurred_at: t,
            causation_id: Some(command),
            correlation_id: None,
            actor: Actor::system("contact"),
            action: "command.retry_now".into(),
            subject_type: "contact".into(),
            subject_id: self.contact.clone(),
            contact_id: Some(self.contact.clone()),
            command_id: Some(command),
            result: AuditResult::Applied,
            reason: None,
            detail: None,
        }
    }
}

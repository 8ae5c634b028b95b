//! The outbox of one handler call: builds the events a decision produces,
//! with their envelope (deterministic event id, causation, correlation),
//! encodes them and keys them for their topic.
//!
//! Guarantees: an event's id is UUIDv5 over the id of the event that caused
//! it and what it is (`callstream_domain::ids::contact::derived`), so handling the same input again
//! yields byte-identical records; every record carries `event-type`,
//! `schema-fingerprint`, `event-id`, `causation-id` and `correlation-id`
//! headers, matching the envelope fields.

use callstream_domain::timezone::{ResolvedZone, ZoneSource as DomainZoneSource};
use callstream_runtime::{Output, ProcessError};
use callstream_schemas::{
    Actor, AuditEvent, AuditResult, CallingWindow, ContactCommand, ContactCommandKind,
    ContactState, CrmCommand, Event, ExceptionEvent, ExceptionStatus, ExceptionType, LaunchCommand,
    ScheduleRequest, ScheduleRequestKind, ZoneSource,
};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::config::ContactTopics;
use crate::state::{Cause, Job};
use callstream_domain::ids::contact as ids;
use callstream_kit::keys::phone_key;

/// The envelope fields of an event being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    pub event_id: Uuid,
    pub occurred_at: DateTime<Utc>,
    pub causation_id: Uuid,
    pub correlation_id: Uuid,
}

/// What the state calling rules need to know of a lead, as schedule requests and launch
/// commands carry it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeadRulesWire {
    pub jurisdictions: Vec<String>,
    pub jurisdiction_source: Option<String>,
    pub placed_calls: Vec<DateTime<Utc>>,
}

/// An exception case to open or close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExceptionCase {
    pub exception_id: Uuid,
    pub status: ExceptionStatus,
    pub exception_type: ExceptionType,
    pub urgent: bool,
    pub campaign_id: Option<String>,
    pub job_id: Option<Uuid>,
    pub launch_id: Option<Uuid>,
    pub call_id: Option<String>,
    pub reason: String,
    pub detail: Option<String>,
    pub actor: Actor,
}

/// An audited action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    pub actor: Actor,
    pub action: String,
    pub command_id: Option<Uuid>,
    pub result: AuditResult,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

/// Collects the records one handler call emits.
pub struct Outbox<'a> {
    topics: &'a ContactTopics,
    tenant_id: String,
    contact_id: String,
    /// The event being handled (or, for timers, the one that last changed the job).
    pub cause: Cause,
    /// When the handled fact happened: the `occurred_at` of what is emitted.
    pub at: DateTime<Utc>,
    outputs: Vec<Output>,
}

impl<'a> Outbox<'a> {
    pub fn new(
        topics: &'a ContactTopics,
        tenant_id: &str,
        contact_id: &str,
        cause: Cause,
        at: DateTime<Utc>,
    ) -> Self {
        Self {
            topics,
            tenant_id: tenant_id.to_owned(),
            contact_id: contact_id.to_owned(),
            cause,
            at,
            outputs: Vec::new(),
        }
    }

    pub fn into_outputs(self) -> Vec<Output> {
        self.outputs
    }

    /// The envelope of the event `what` caused by the current cause.
    pub fn envelope(&self, what: &[&str]) -> Envelope {
        Envelope {
            event_id: ids::derived(self.cause.event_id, what),
            occurred_at: self.at,
            causation_id: self.cause.event_id,
            correlation_id: self.cause.correlation_id,
        }
    }

    fn push<E: Event>(&mut self, topic: String, key: &str, event: &E) -> Result<(), ProcessError> {
        // Our own events not fitting their schema is a bug; the input goes to
        // the dead letters with the reason rather than being lost.
        let output = callstream_kit::emit::output_or_refuse(&topic, key, event)?;
        self.outputs.push(output);
        Ok(())
    }

    /// Asks the scheduler to plan `job` (keyed by tenant: the scheduler owns the grid per tenant).
    pub fn plan(
        &mut self,
        job: &Job,
        zone: &ResolvedZone,
        windows: Vec<CallingWindow>,
        lead: LeadRulesWire,
    ) -> Result<(), ProcessError> {
        let job_id = job.job_id.to_string();
        let env = self.envelope(&["schedule-request/plan", &job_id]);
        let request = ScheduleRequest {
            event_id: env.event_id,
            tenant_id: self.tenant_id.clone(),
            occurred_at: env.occurred_at,
            causation_id: Some(env.causation_id),
            correlation_id: Some(env.correlation_id),
            kind: ScheduleRequestKind::Plan,
            job_id: job.job_id,
            contact_id: self.contact_id.clone(),
            campaign_id: job.campaign_id.clone(),
            origin: job.origin,
            earliest_at: Some(job.earliest_at),
            requested_at: job.requested_at,
            replaces_job_id: job.replaces,
            reason: job.reason.clone(),
            reason_detail: job.reason_detail.clone(),
            // Every candidate zone (an area code may span two): the scheduler
            // books a slot open in all of them, as the launch guards check.
            time_zone: Some(
                zone.zones
                    .iter()
                    .map(|z| z.name())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            time_zone_source: Some(zone_source(zone.source)),
            windows,
            attempt: Some(i32::try_from(job.attempt).unwrap_or(i32::MAX)),
            jurisdictions: lead.jurisdictions,
            jurisdiction_source: lead.jurisdiction_source,
            placed_calls: lead.placed_calls,
        };
        let key = self.tenant_id.clone();
        self.push(self.topics.schedule_requests.clone(), &key, &request)
    }

    /// Asks the scheduler to free `job`'s slot, with the reason.
    pub fn cancel(&mut self, job: &Job) -> Result<(), ProcessError> {
        let job_id = job.job_id.to_string();
        let env = self.envelope(&["schedule-request/cancel", &job_id]);
        let request = ScheduleRequest {
            event_id: env.event_id,
            tenant_id: self.tenant_id.clone(),
            occurred_at: env.occurred_at,
            causation_id: Some(env.causation_id),
            correlation_id: Some(env.correlation_id),
            kind: ScheduleRequestKind::Cancel,
            job_id: job.job_id,
            contact_id: self.contact_id.clone(),
            campaign_id: job.campaign_id.clone(),
            origin: job.origin,
            earliest_at: None,
            requested_at: job.requested_at,
            replaces_job_id: job.replaces,
            reason: job.reason.clone(),
            reason_detail: job.reason_detail.clone(),
            time_zone: None,
            time_zone_source: None,
            windows: Vec::new(),
            attempt: Some(i32::try_from(job.attempt).unwrap_or(i32::MAX)),
            jurisdictions: Vec::new(),
            jurisdiction_source: None,
            placed_calls: Vec::new(),
        };
        let key = self.tenant_id.clone();
        self.push(self.topics.schedule_requests.clone(), &key, &request)
    }

    /// A launch for the dispatcher, keyed by tenant and the number it calls, where the
    /// dispatcher counts every call to that number against the caps.
    pub fn launch(&mut self, command: &LaunchCommand) -> Result<(), ProcessError> {
        let key = phone_key(&self.tenant_id, &command.to_number);
        self.push(self.topics.launch_commands.clone(), &key, command)
    }

    /// Tells the dispatcher that launch `launch_id` (of job `job_id`, sent to `to`) may no
    /// longer be placed, for `reason`: a `cancel_future_jobs` command on
    /// `launch-commands`, on the launch's own key, so it comes after the launch (a launch
    /// recorded before launches were keyed by number was keyed by contact).
    pub fn stop_launch(
        &mut self,
        job_id: Uuid,
        launch_id: Uuid,
        to: Option<&str>,
        reason: &str,
        actor: Actor,
    ) -> Result<(), ProcessError> {
        let env = self.envelope(&["stop-launch", &launch_id.to_string()]);
        let command = ContactCommand {
            event_id: env.event_id,
            tenant_id: self.tenant_id.clone(),
            occurred_at: env.occurred_at,
            causation_id: Some(env.causation_id),
            correlation_id: Some(env.correlation_id),
            kind: ContactCommandKind::CancelFutureJobs,
            contact_id: self.contact_id.clone(),
            actor,
            request_id: None,
            campaign_id: None,
            job_id: Some(job_id),
            launch_id: Some(launch_id),
            exception_id: None,
            origin: None,
            slot: None,
            slot_at: None,
            requested_at: None,
            contact: None,
            reason: Some(reason.to_owned()),
        };
        let key = match to {
            Some(to) => phone_key(&self.tenant_id, to),
            None => self.contact_id.clone(),
        };
        self.push(self.topics.launch_commands.clone(), &key, &command)
    }

    /// A CRM write, keyed by contact.
    pub fn crm(&mut self, command: &CrmCommand) -> Result<(), ProcessError> {
        let key = self.contact_id.clone();
        self.push(self.topics.crm_commands.clone(), &key, command)
    }

    /// A change of an exception case, keyed by contact.
    pub fn exception(&mut self, case: ExceptionCase) -> Result<(), ProcessError> {
        let id = case.exception_id.to_string();
        let env = self.envelope(&["exception", &id, case.status.as_str()]);
        let event = ExceptionEvent {
            event_id: env.event_id,
            tenant_id: self.tenant_id.clone(),
            occurred_at: env.occurred_at,
            causation_id: Some(env.causation_id),
            correlation_id: Some(env.correlation_id),
            exception_id: case.exception_id,
            status: case.status,
            exception_type: case.exception_type,
            urgent: case.urgent,
            contact_id: self.contact_id.clone(),
            campaign_id: case.campaign_id,
            job_id: case.job_id,
            launch_id: case.launch_id,
            call_id: case.call_id,
            operation_id: None,
            reason: case.reason,
            detail: case.detail,
            actor: case.actor,
            assignee: None,
        };
        let key = self.contact_id.clone();
        self.push(self.topics.exceptions.clone(), &key, &event)
    }

    /// An audit event about the contact, keyed by tenant.
    pub fn audit(&mut self, audit: Audit) -> Result<(), ProcessError> {
        let env = self.envelope(&["audit", &audit.action]);
        let event = AuditEvent {
            event_id: env.event_id,
            tenant_id: self.tenant_id.clone(),
            occurred_at: env.occurred_at,
            causation_id: Some(env.causation_id),
            correlation_id: Some(env.correlation_id),
            actor: audit.actor,
            action: audit.action,
            subject_type: "contact".to_owned(),
            subject_id: self.contact_id.clone(),
            contact_id: Some(self.contact_id.clone()),
            command_id: audit.command_id,
            result: audit.result,
            reason: audit.reason,
            detail: audit.detail,
        };
        let key = self.tenant_id.clone();
        self.push(self.topics.audit.clone(), &key, &event)
    }

    /// The contact's state after the change, keyed by contact (compacted).
    pub fn state(&mut self, state: &ContactState) -> Result<(), ProcessError> {
        let key = self.contact_id.clone();
        self.push(self.topics.contact_state.clone(), &key, state)
    }
}

/// The schema's name for where a zone came from.
pub fn zone_source(source: DomainZoneSource) -> ZoneSource {
    match source {
        DomainZoneSource::Contact => ZoneSource::Contact,
        DomainZoneSource::VoicePlatform => ZoneSource::Provider,
        DomainZoneSource::AreaCode => ZoneSource::AreaCode,
        DomainZoneSource::TenantDefault => ZoneSource::TenantDefault,
    }
}

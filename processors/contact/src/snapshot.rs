//! The contact's state as published on `contact-state` (schema
//! `ContactState`): everything a view needs, nothing internal (the dedupe
//! memory and job causes stay in the store).

use callstream_domain::restrictions::Restriction;
use callstream_domain::workflow::WorkflowState as DomainState;
use callstream_schemas::{CallOutcome, CampaignAttempts, ContactJob, ContactState, WorkflowState};
use uuid::Uuid;

use crate::emit::{zone_source, Envelope};
use crate::state::Contact;

fn i32_of(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub fn workflow_state(state: DomainState) -> WorkflowState {
    match state {
        DomainState::Received => WorkflowState::Received,
        DomainState::NeedsReview => WorkflowState::NeedsReview,
        DomainState::Scheduled => WorkflowState::Scheduled,
        DomainState::Dispatching => WorkflowState::Dispatching,
        DomainState::AwaitingResult => WorkflowState::AwaitingResult,
        DomainState::Completed => WorkflowState::Completed,
        DomainState::Failed => WorkflowState::Failed,
    }
}

/// The published state of `contact`, with `envelope`.
pub fn snapshot(contact: &Contact, envelope: &Envelope) -> ContactState {
    let zone = contact.zone.as_ref();
    ContactState {
        event_id: envelope.event_id,
        tenant_id: contact.tenant_id.clone(),
        occurred_at: envelope.occurred_at,
        causation_id: Some(envelope.causation_id),
        correlation_id: Some(envelope.correlation_id),
        contact_id: contact.contact_id.clone(),
        version: i64_of(contact.version),
        phone_number: contact.phone.clone(),
        time_zone: zone.map(|z| z.primary().name().to_owned()),
        time_zone_source: zone.map(|z| zone_source(z.source)),
        candidate_time_zones: zone
            .map(|z| z.zones.iter().map(|tz| tz.name().to_owned()).collect())
            .unwrap_or_default(),
        do_not_call: contact.flags.is_set(Restriction::DoNotCall),
        blocked: contact.flags.is_set(Restriction::Blocked),
        enrolled_student: contact.flags.is_set(Restriction::Enrolled),
        spam: contact.flags.is_set(Restriction::Spam),
        urgent_request_open: contact.hold.as_ref().is_some_and(|h| h.urgent),
        hold_exception_id: contact.hold.as_ref().map(|h| h.exception_id),
        hold_reason: contact.hold.as_ref().map(|h| h.reason.clone()),
        workflow_state: workflow_state(contact.workflow.state()),
        workflow_step: i64_of(contact.workflow.step()),
        campaign_id: contact.campaign.clone(),
        attempts: contact
            .counters
            .iter()
            .map(|(campaign, c)| CampaignAttempts {
                campaign_id: campaign.clone(),
                attempts: i32_of(c.attempts_in_campaign),
                consecutive_provider_failures: i32_of(c.consecutive_provider_failures),
            })
            .collect(),
        rejected_transitions: i64_of(contact.rejected_transitions),
        jobs: contact
            .jobs
            .iter()
            .map(|j| ContactJob {
                job_id: j.job_id,
                campaign_id: j.campaign_id.clone(),
                origin: j.origin,
                state: j.state,
                attempt: i32_of(j.attempt),
                step: i64_of(j.step),
                earliest_at: Some(j.earliest_at),
                requested_at: j.requested_at,
                slot_at: j.slot_at,
                launch_id: j.launch_id,
                replaces_job_id: j.replaces,
                replaced_by_job_id: j.replaced_by,
                reason: j.reason.clone(),
                reason_detail: j.reason_detail.clone(),
                outcome: j.outcome.map(CallOutcome::from),
                updated_at: j.updated_at,
            })
            .collect(),
    }
}

/// The published state without its envelope and version, to tell whether a
/// change is visible.
pub fn visible(contact: &Contact) -> ContactState {
    let blank = Envelope {
        event_id: Uuid::nil(),
        occurred_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        causation_id: Uuid::nil(),
        correlation_id: Uuid::nil(),
    };
    let mut state = snapshot(contact, &blank);
    state.version = 0;
    state
}

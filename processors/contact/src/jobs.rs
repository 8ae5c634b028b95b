//! Job bookkeeping shared by every handler: plan a job (a schedule
//! request), cancel one (with its reason), replace one by another (a move,
//! with lineage both ways), all through one [`Step`].
//!
//! Guarantees: a job changes state only here, and every change that the
//! scheduler must know about is sent to it in the same transaction: a plan
//! names the job it replaces and the old job names its replacement.

use callstream_domain::timezone::ResolvedZone;
use callstream_kit::control::settings::window_to_wire;
use callstream_runtime::ProcessError;
use callstream_schemas::{JobOrigin, JobState};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::config::ContactConfig;
use crate::control::ControlRead;
use crate::emit::LeadRulesWire;
use crate::emit::Outbox;
use crate::state::{Contact, Job};
use crate::telemetry::{ContactMetrics, DecisionKind};

/// One handler call: the contact being changed, the settings in force and
/// the outbox for what the change emits.
pub struct Step<'s, 'o> {
    pub contact: &'s mut Contact,
    pub control: &'s dyn ControlRead,
    pub config: &'s ContactConfig,
    pub out: &'s mut Outbox<'o>,
    pub metrics: &'s ContactMetrics,
    /// Set when a job waits for a pause to lift: the processor arms the re-check timer.
    pub recheck_pauses: bool,
}

/// A job to put on the grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    pub job_id: Uuid,
    pub campaign_id: String,
    pub origin: JobOrigin,
    pub earliest_at: DateTime<Utc>,
    pub requested_at: Option<DateTime<Utc>>,
    pub replaces: Option<Uuid>,
    pub reason: String,
    pub reason_detail: Option<String>,
    pub requested_in_call: Option<String>,
    /// Attempt number; `None`: the next attempt of its campaign.
    pub attempt: Option<u32>,
}

impl Step<'_, '_> {
    /// The id of the job `label` caused by the current cause.
    pub fn job_id(&self, label: &[&str]) -> Uuid {
        let mut what = vec!["job"];
        what.extend_from_slice(label);
        callstream_domain::ids::contact::derived(self.out.cause.event_id, &what)
    }

    /// The lead's zone, resolved now (the tenant default may have changed).
    pub fn zone(&mut self) -> ResolvedZone {
        let default = self.control.default_zone(&self.contact.tenant_id);
        self.contact.resolve_zone(default)
    }

    /// What the state calling rules need to know of the lead, for a call of `campaign`:
    /// its states, and the calls placed within the tenant's cap subject.
    pub fn lead_rules(&self, campaign: &str) -> LeadRulesWire {
        let rules = self
            .control
            .calling_rules(&self.contact.tenant_id, campaign);
        let (jurisdictions, jurisdiction_source) =
            self.contact.jurisdictions(rules.default_state.as_deref());
        LeadRulesWire {
            jurisdictions,
            jurisdiction_source,
            placed_calls: self.contact.placed_on(rules.cap_subject.key(campaign)),
        }
    }

    /// What the frequency caps count a call of `campaign` within (the campaign's or the
    /// tenant's setting).
    pub fn cap_subject<'c>(&self, campaign: &'c str) -> &'c str {
        let rules = self
            .control
            .calling_rules(&self.contact.tenant_id, campaign);
        rules.cap_subject.key(campaign)
    }

    /// Records `new` and asks the scheduler to plan it.
    pub fn plan(&mut self, new: NewJob) -> Result<Uuid, ProcessError> {
        let zone = self.zone();
        let rules = self
            .control
            .campaign(&self.contact.tenant_id, &new.campaign_id);
        let attempt = new
            .attempt
            .unwrap_or_else(|| self.contact.next_attempt(&new.campaign_id));
        let job = Job {
            job_id: new.job_id,
            campaign_id: new.campaign_id,
            origin: new.origin,
            state: JobState::Planned,
            attempt,
            step: self.contact.workflow.step(),
            earliest_at: new.earliest_at,
            requested_at: new.requested_at,
            slot_at: None,
            launch_id: None,
            launch_to: None,
            replaces: new.replaces,
            replaced_by: None,
            reason: new.reason,
            reason_detail: new.reason_detail,
            outcome: None,
            updated_at: self.out.at,
            requested_in_call: new.requested_in_call,
            cause: self.out.cause,
        };
        let lead = self.lead_rules(&job.campaign_id);
        self.out
            .plan(&job, &zone, window_to_wire(&rules.window), lead)?;
        let id = job.job_id;
        self.metrics.decision(DecisionKind::Plan, id, &job.reason);
        self.contact.jobs.push(job);
        Ok(id)
    }

    /// Cancels an active job with its reason; `tell_scheduler` frees its slot
    /// (not needed for a job whose slot has already come).
    pub fn cancel(
        &mut self,
        job_id: Uuid,
        reason: &str,
        detail: Option<String>,
        tell_scheduler: bool,
    ) -> Result<(), ProcessError> {
        let (at, cause) = (self.out.at, self.out.cause);
        let Some(job) = self.contact.job_mut(job_id) else {
            return Ok(());
        };
        job.set_state(JobState::Cancelled, reason, detail, at);
        job.cause = cause;
        let job = job.clone();
        self.metrics.decision(DecisionKind::Cancel, job_id, reason);
        if tell_scheduler {
            self.out.cancel(&job)?;
        }
        Ok(())
    }

    /// Ends a launched job that will have no call result: its launch was
    /// refused, failed or intercepted (`state` is `Cancelled` or `Completed`).
    pub fn finish(&mut self, job_id: Uuid, state: JobState, reason: &str, detail: Option<String>) {
        let (at, cause) = (self.out.at, self.out.cause);
        if let Some(job) = self.contact.job_mut(job_id) {
            job.set_state(state, reason, detail, at);
            job.cause = cause;
            self.metrics.decision(DecisionKind::Cancel, job_id, reason);
        }
    }

    /// Tells the dispatcher that no launch of the contact still on its way
    /// may be placed, for `reason` (a restriction came): it hears it on each
    /// launch's own key, behind the launch.
    pub fn stop_launches_in_flight(&mut self, reason: &str) -> Result<(), ProcessError> {
        let actor = callstream_schemas::Actor::system(self.config.service_name.clone());
        let in_flight: Vec<_> = self
            .contact
            .jobs
            .iter()
            .filter(|j| j.state == JobState::Launched && j.outcome.is_none())
            .filter_map(|j| Some((j.job_id, j.launch_id?, j.launch_to.clone())))
            .collect();
        for (job_id, launch_id, to) in in_flight {
            self.out
                .stop_launch(job_id, launch_id, to.as_deref(), reason, actor.clone())?;
        }
        Ok(())
    }

    /// Cancels every job still to be called.
    pub fn cancel_all(&mut self, reason: &str, detail: Option<String>) -> Result<(), ProcessError> {
        for id in self.contact.active_jobs() {
            let planned = self
                .contact
                .job(id)
                .is_some_and(|j| j.state == JobState::Planned);
            // A held job's slot has already come and gone: only planned
            // jobs still occupy the grid.
            self.cancel(id, reason, detail.clone(), planned)?;
        }
        Ok(())
    }

    /// Replaces `old` with `new` (a move): the new job names the old, the old
    /// names the new, and a still-planned old job's slot is freed.
    pub fn replace(&mut self, old: Uuid, mut new: NewJob) -> Result<Uuid, ProcessError> {
        new.replaces = Some(old);
        if let Some(previous) = self.contact.job(old) {
            // What the lead asked for stays on the job when it moves.
            if new.requested_at.is_none() {
                new.requested_at = previous.requested_at;
            }
            if new.requested_in_call.is_none() {
                new.requested_in_call = previous.requested_in_call.clone();
            }
        }
        let (at, cause) = (self.out.at, self.out.cause);
        let (reason, detail) = (new.reason.clone(), new.reason_detail.clone());
        if let Some(job) = self.contact.job_mut(old) {
            let was_planned = job.state == JobState::Planned;
            if job.is_active() {
                job.set_state(JobState::Replaced, &reason, detail, at);
            }
            job.replaced_by = Some(new.job_id);
            job.cause = cause;
            let job = job.clone();
            self.metrics.decision(DecisionKind::Move, old, &reason);
            if was_planned {
                self.out.cancel(&job)?;
            }
        }
        self.plan(new)
    }
}

//! What the processor keeps per contact (the `contacts` store, JSON), and
//! the small questions asked of it.
//!
//! Guarantees: the stored record is the whole truth about a contact for
//! this processor; every handler loads it, changes a copy, and writes it
//! back in the same transaction as the outputs the change caused. Jobs are
//! kept newest last; finished ones beyond a bound are dropped oldest first
//! (the schedule requests on the log keep the full history).

use std::collections::BTreeMap;

use callstream_domain::normaliser::Outcome;
use callstream_domain::policy::{ContactFlags, Counters};
use callstream_domain::restrictions::{Restriction, Restrictions};
use callstream_domain::timezone::{resolve_zone, ResolvedZone, ZoneInputs, ZoneSource};
use callstream_domain::workflow::{Deduplicator, Workflow};
use callstream_schemas::{JobOrigin, JobState};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Calls are held until an exception has an outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// The exception whose outcome releases the hold.
    pub exception_id: Uuid,
    /// Reason code: `person_requested` or `provider_failures_exhausted`.
    pub reason: String,
    /// A person was asked for (an urgent request).
    pub urgent: bool,
    /// The call in which the hold began; a callback asked for in that call still goes.
    pub call_id: Option<String>,
    pub campaign_id: Option<String>,
}

/// The event that last changed a job and its chain: the cause of what a
/// timer later emits for the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    pub event_id: Uuid,
    pub correlation_id: Uuid,
}

/// One planned call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub job_id: Uuid,
    pub campaign_id: String,
    pub origin: JobOrigin,
    pub state: JobState,
    pub attempt: u32,
    pub step: u64,
    pub earliest_at: DateTime<Utc>,
    pub requested_at: Option<DateTime<Utc>>,
    pub slot_at: Option<DateTime<Utc>>,
    pub launch_id: Option<Uuid>,
    /// The number the launch went to: its stop goes on the same key (see
    /// [`callstream_kit::keys::phone_key`]) even if the contact's number changes meanwhile.
    #[serde(default)]
    pub launch_to: Option<String>,
    pub replaces: Option<Uuid>,
    pub replaced_by: Option<Uuid>,
    pub reason: String,
    pub reason_detail: Option<String>,
    pub outcome: Option<Outcome>,
    pub updated_at: DateTime<Utc>,
    /// The call in which the lead asked for this call back (exempt from the
    /// hold that same call opened).
    pub requested_in_call: Option<String>,
    pub cause: Cause,
}

impl Job {
    /// Still to be called: the scheduler has it, or it waits for a pause to lift.
    pub fn is_active(&self) -> bool {
        matches!(self.state, JobState::Planned | JobState::Held)
    }

    /// Nothing more will happen to it.
    pub fn is_finished(&self) -> bool {
        matches!(
            self.state,
            JobState::Completed | JobState::Cancelled | JobState::Replaced
        )
    }

    /// Moves the job to `state` with its reason.
    pub fn set_state(
        &mut self,
        state: JobState,
        reason: &str,
        detail: Option<String>,
        at: DateTime<Utc>,
    ) {
        self.state = state;
        self.reason = reason.to_owned();
        self.reason_detail = detail;
        self.updated_at = at;
    }
}

/// Everything the processor knows about one contact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contact {
    pub tenant_id: String,
    pub contact_id: String,
    /// Changes applied so far (published as the state's version).
    pub version: u64,
    pub phone: Option<String>,
    /// The zone on the contact record (the first source).
    pub contact_zone: Option<String>,
    /// The zone the voice platform last reported (the second source).
    pub platform_zone: Option<String>,
    /// The zone as last resolved, with its source.
    pub zone: Option<ResolvedZone>,
    /// What bars calls, and who set it (the lead's own opt-out is sticky).
    pub flags: Restrictions,
    pub hold: Option<Hold>,
    pub workflow: Workflow,
    /// The campaign the contact is in now.
    pub campaign: Option<String>,
    pub counters: BTreeMap<String, Counters>,
    pub rejected_transitions: u64,
    pub dedupe: Deduplicator,
    /// Newest last.
    pub jobs: Vec<Job>,
    /// The US state on the contact record (the first source of the state calling rules).
    #[serde(default)]
    pub contact_state: Option<String>,
    /// Calls placed to the lead per subject (the campaign), oldest first, kept for the
    /// longest frequency-cap window: what the rolling caps count.
    #[serde(default)]
    pub placed_calls: BTreeMap<String, Vec<PlacedCall>>,
}

/// A call the voice platform took (a launch accepted, or a result heard for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedCall {
    pub launch_id: Uuid,
    pub at: DateTime<Utc>,
}

use callstream_kit::calling_rules::keep_countable;

impl Contact {
    pub fn new(tenant_id: &str, contact_id: &str, dedupe_capacity: usize) -> Self {
        Self {
            tenant_id: tenant_id.to_owned(),
            contact_id: contact_id.to_owned(),
            version: 0,
            phone: None,
            contact_zone: None,
            platform_zone: None,
            zone: None,
            flags: Restrictions::default(),
            hold: None,
            workflow: Workflow::new(),
            campaign: None,
            counters: BTreeMap::new(),
            rejected_transitions: 0,
            dedupe: Deduplicator::new(dedupe_capacity),
            jobs: Vec::new(),
            contact_state: None,
            placed_calls: BTreeMap::new(),
        }
    }

    /// Records a call placed on `subject` (once per launch), and forgets what no cap
    /// can count any more.
    pub fn record_placed(&mut self, subject: &str, launch_id: Uuid, at: DateTime<Utc>) {
        let calls = self.placed_calls.entry(subject.to_owned()).or_default();
        if calls.iter().any(|c| c.launch_id == launch_id) {
            return;
        }
        calls.push(PlacedCall { launch_id, at });
        keep_countable(calls, |c| c.at.timestamp_millis());
    }

    /// When calls were placed on `subject`, oldest first.
    pub fn placed_on(&self, subject: &str) -> Vec<DateTime<Utc>> {
        self.placed_calls
            .get(subject)
            .map(|calls| calls.iter().map(|c| c.at).collect())
            .unwrap_or_default()
    }

    /// The lead's state(s) as the events carry them: the contact record's, else the
    /// phone's area code's (both when they disagree), else the tenant's default state;
    /// none when nothing says.
    pub fn jurisdictions(&self, tenant_default: Option<&str>) -> (Vec<String>, Option<String>) {
        let inputs = callstream_domain::calling_rules::JurisdictionInputs {
            contact_state: self.contact_state.as_deref(),
            phone: self.phone.as_deref(),
            tenant_default,
        };
        match callstream_domain::calling_rules::resolve_jurisdictions(&inputs) {
            Ok(states) => callstream_kit::calling_rules::to_wire(&states),
            Err(_) => (Vec::new(), None),
        }
    }

    /// The store key: tenant and contact, length-prefixed, so two tenants'
    /// contacts with the same id never share state.
    pub fn store_key(tenant_id: &str, contact_id: &str) -> Vec<u8> {
        callstream_kit::keys::contact_key(tenant_id, contact_id)
    }

    /// The flags as the policy sees them.
    pub fn policy_flags(&self) -> ContactFlags {
        ContactFlags {
            do_not_call: self.flags.is_set(Restriction::DoNotCall),
            blocked: self.flags.is_set(Restriction::Blocked),
            enrolled: self.flags.is_set(Restriction::Enrolled),
            spam: self.flags.is_set(Restriction::Spam),
            urgent_open: self.hold.as_ref().is_some_and(|h| h.urgent),
        }
    }

    /// Why the contact may not be called at all, if it may not.
    pub fn barred_reason(&self) -> Option<&'static str> {
        self.flags.barred_reason()
    }

    pub fn counters(&self, campaign: &str) -> Counters {
        self.counters.get(campaign).copied().unwrap_or_default()
    }

    /// The attempt number the next call of `campaign` will be.
    pub fn next_attempt(&self, campaign: &str) -> u32 {
        self.counters(campaign)
            .attempts_in_campaign
            .saturating_add(1)
    }

    /// Resolves (and records) the lead's zone: contact record, voice
    /// platform, area code, then `tenant_default`.
    pub fn resolve_zone(&mut self, tenant_default: Tz) -> ResolvedZone {
        let inputs = ZoneInputs {
            contact_zone: self.contact_zone.as_deref(),
            platform_zone: self.platform_zone.as_deref(),
            phone: self.phone.as_deref(),
            tenant_default: Some(tenant_default.name()),
        };
        let zone = resolve_zone(&inputs).unwrap_or_else(|failed| ResolvedZone {
            // A `Tz` always has a valid name, so this is unreachable; keep
            // the answer total anyway.
            zones: vec![tenant_default],
            source: ZoneSource::TenantDefault,
            skipped: failed.skipped,
        });
        self.zone = Some(zone.clone());
        zone
    }

    pub fn job(&self, job_id: Uuid) -> Option<&Job> {
        self.jobs.iter().find(|j| j.job_id == job_id)
    }

    pub fn job_mut(&mut self, job_id: Uuid) -> Option<&mut Job> {
        self.jobs.iter_mut().find(|j| j.job_id == job_id)
    }

    /// The job whose launch had this operation id.
    pub fn job_by_launch(&self, launch_id: Uuid) -> Option<&Job> {
        self.jobs.iter().find(|j| j.launch_id == Some(launch_id))
    }

    /// Ids of the jobs still to be called, oldest first.
    pub fn active_jobs(&self) -> Vec<Uuid> {
        self.jobs
            .iter()
            .filter(|j| j.is_active())
            .map(|j| j.job_id)
            .collect()
    }

    /// Drops the oldest finished jobs beyond `keep_finished`.
    pub fn prune_jobs(&mut self, keep_finished: usize) {
        let finished = self.jobs.iter().filter(|j| j.is_finished()).count();
        let mut drop = finished.saturating_sub(keep_finished);
        self.jobs.retain(|j| {
            if drop > 0 && j.is_finished() {
                drop -= 1;
                false
            } else {
                true
            }
        });
    }
}

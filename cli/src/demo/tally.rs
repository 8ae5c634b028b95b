//! What the run's topics say, folded into counters and per-id maps as the
//! records arrive (read with `read_committed`, so only what the pipeline
//! committed counts).
//!
//! Every map is keyed by the id the pipeline gives a thing (command id, job
//! id, launch id, operation id), so a record read twice, or an event the
//! pipeline repeated on purpose (a dispatcher's reconciliation, a replayed
//! completion), is counted once: the summary counts things, not records.

use std::collections::{BTreeMap, HashMap, HashSet};

use callstream_completion_detector::completion::final_outcome;
use callstream_schemas::{
    AnyEvent, AuditResult, CallEvent, CallEventSource, CallLaunch, ContactCommandKind,
    ContactState, ExceptionStatus, JobState, LaunchStatus, ScheduleEvent, ScheduleEventKind,
    ScheduleRequest, ScheduleRequestKind, WorkflowState,
};
use uuid::Uuid;

/// A job as the scheduler placed it.
#[derive(Debug, Clone)]
pub struct Allocation {
    pub tenant: String,
    pub slot_at_ms: i64,
    /// `allocated`, or `moved_out_of_window` when the earliest time was outside every window.
    pub reason: String,
    pub time_zone: Option<String>,
}

/// A launch as the dispatcher reported it (its latest report).
#[derive(Debug, Clone)]
pub struct Launch {
    pub status: LaunchStatus,
    pub accepted_at_ms: Option<i64>,
    pub reconciled: bool,
}

/// Everything the summary and the progress line need.
#[derive(Debug, Default)]
pub struct Tally {
    pub records: u64,
    pub undecodable: u64,
    pub dead_letters: u64,

    /// Launch requests that reached `contact-commands`, by command id.
    pub launch_requests: HashSet<Uuid>,
    /// `contact.launch_request` refusals by reason.
    pub requests_refused: BTreeMap<String, u64>,
    /// Messages the notifier recorded as sent (`notification.sent`), by message id.
    pub notifications_sent: std::collections::BTreeSet<String>,
    pub launch_due: HashSet<Uuid>,

    /// Plan requests by job id: origin, reason.
    pub plans: HashMap<Uuid, (String, String)>,
    /// Cancel requests by job id: the reason.
    pub cancel_requests: HashMap<Uuid, String>,
    pub allocations: HashMap<Uuid, Allocation>,
    pub slot_freed: HashSet<Uuid>,
    /// Refusals by job id: the reason.
    pub refused: HashMap<Uuid, String>,
    /// Jobs the scheduler fired (LaunchDue emitted).
    pub fired: HashSet<Uuid>,

    /// The latest workflow state of every contact (tenant, contact), from `contact-state`.
    pub workflows: HashMap<(String, String), WorkflowState>,
    /// The latest state and reason of every job, from `contact-state`.
    pub job_states: HashMap<Uuid, (JobState, String)>,
    /// Jobs ever seen held, with the reason.
    pub held: HashMap<Uuid, String>,

    /// Launch commands by launch id: tenant and slot time.
    pub launch_commands: HashMap<Uuid, (String, i64)>,
    pub launches: HashMap<Uuid, Launch>,
    /// Launch ids by provider call id, to match completions without a launch id.
    pub call_ids: HashMap<String, Uuid>,
    /// Launches whose completion the platform delivered itself: first final outcome and time.
    pub delivered: HashMap<Uuid, (String, i64)>,
    /// Launches completed by a recovered event: outcome and time.
    pub recovered_events: HashMap<Uuid, (String, i64)>,
    /// Final events naming no launch id whose call id no launch has
    /// reported yet (a callback can beat the dispatcher's report): the
    /// launch claims them when its report arrives.
    pub unmatched: HashMap<String, (CallEventSource, String, i64)>,

    /// `completion-missing` by launch id: when it was emitted.
    pub missing: HashMap<Uuid, i64>,
    /// `completion-resolved` by launch id: resolution and when.
    pub resolved: HashMap<Uuid, (String, i64)>,

    /// CRM commands by operation id: the action.
    pub crm_commands: HashMap<Uuid, String>,
    /// CRM commands by operation id: the contact and the provider call id,
    /// so CRM objects can be counted per contact and launch.
    pub crm_targets: HashMap<Uuid, (String, Option<String>)>,
    /// CRM results by operation id: action, status, attempts (the latest result).
    pub crm_results: HashMap<Uuid, (String, String, i32)>,

    /// Exceptions by id: type and latest status.
    pub exceptions: HashMap<Uuid, (String, ExceptionStatus)>,
    /// Launches and CRM operations some exception names.
    pub exception_launches: HashSet<Uuid>,
    pub exception_operations: HashSet<Uuid>,
    /// Contacts (tenant, contact) some opened exception names.
    pub exception_contacts: HashSet<(String, String)>,
    /// Every event id on `call-events`.
    pub call_event_ids: HashSet<Uuid>,
    /// Alerts raised and resolved, by alert id: latest status.
    pub alerts: HashMap<Uuid, String>,
    /// Audit events by action and result.
    pub audit: BTreeMap<String, u64>,
    /// Final call events by event id: when the gateway received them (business ms).
    pub completions_received: HashMap<Uuid, i64>,
    /// The first plan each event caused: cause's event id -> when it was planned (business ms).
    pub plans_by_cause: HashMap<Uuid, i64>,
}

fn ms(at: chrono::DateTime<chrono::Utc>) -> i64 {
    at.timestamp_millis()
}

impl Tally {
    /// Folds one record's value in; `dead_letter` for the dead-letter topic,
    /// whose values are whatever could not be processed.
    pub fn add(&mut self, value: &[u8], dead_letter: bool) {
        self.records += 1;
        if dead_letter {
            self.dead_letters += 1;
            return;
        }
        match callstream_schemas::decode_any(value) {
            Ok(event) => self.add_event(event),
            Err(_) => self.undecodable += 1,
        }
    }

    fn add_event(&mut self, event: AnyEvent) {
        match event {
            AnyEvent::ContactCommand(c) => match c.kind {
                ContactCommandKind::LaunchRequest => {
                    self.launch_requests.insert(c.event_id);
                }
                ContactCommandKind::LaunchDue => {
                    if let Some(job) = c.job_id {
                        self.launch_due.insert(job);
                    }
                }
                _ => {}
            },
            AnyEvent::ScheduleRequest(r) => self.schedule_request(r),
            AnyEvent::ScheduleEvent(e) => self.schedule_event(e),
            AnyEvent::ContactState(s) => self.contact_state(s),
            AnyEvent::LaunchCommand(l) => {
                self.launch_commands
                    .insert(l.launch_id, (l.tenant_id, ms(l.slot_at)));
            }
            AnyEvent::CallLaunch(l) => self.call_launch(l),
            AnyEvent::CallEvent(e) => self.call_event(&e),
            AnyEvent::CompletionMissing(m) => {
                self.missing
                    .entry(m.launch_id)
                    .or_insert_with(|| ms(m.occurred_at));
            }
            AnyEvent::CompletionResolved(r) => {
                self.resolved
                    .entry(r.launch_id)
                    .or_insert_with(|| (r.resolution.as_str().to_owned(), ms(r.occurred_at)));
            }
            AnyEvent::CrmCommand(c) => {
                self.crm_commands
                    .insert(c.operation_id, c.action.as_str().to_owned());
                self.crm_targets
                    .insert(c.operation_id, (c.contact_id, c.call_id));
            }
            AnyEvent::CrmResult(r) => {
                self.crm_results.insert(
                    r.operation_id,
                    (
                        r.action.as_str().to_owned(),
                        r.status.as_str().to_owned(),
                        r.attempts,
                    ),
                );
            }
            AnyEvent::ExceptionEvent(x) => {
                self.exception_launches.extend(x.launch_id);
                self.exception_operations.extend(x.operation_id);
                if x.status == ExceptionStatus::Open {
                    self.exception_contacts
                        .insert((x.tenant_id.clone(), x.contact_id.clone()));
                }
                self.exceptions.insert(
                    x.exception_id,
                    (x.exception_type.as_str().to_owned(), x.status),
                );
            }
            AnyEvent::Alert(a) => {
                self.alerts.insert(a.alert_id, a.status.as_str().to_owned());
            }
            AnyEvent::AuditEvent(a) => {
                if a.action == callstream_notifier::AUDIT_SENT {
                    self.notifications_sent.insert(a.subject_id.clone());
                }
                let result = match a.result {
                    AuditResult::Applied => "applied",
                    _ => "rejected",
                };
                *self
                    .audit
                    .entry(format!("{} {result}", a.action))
                    .or_default() += 1;
                if a.action == "contact.launch_request" && result == "rejected" {
                    let reason = a.reason.unwrap_or_else(|| "unknown".into());
                    *self.requests_refused.entry(reason).or_default() += 1;
                }
            }
            // Notifications are counted by their `notification.sent` audits.
            AnyEvent::ControlChange(_) | AnyEvent::Notification(_) => {}
        }
    }

    fn schedule_request(&mut self, r: ScheduleRequest) {
        match r.kind {
            ScheduleRequestKind::Plan => {
                if let Some(cause) = r.causation_id {
                    self.plans_by_cause
                        .entry(cause)
                        .or_insert_with(|| ms(r.occurred_at));
                }
                self.plans
                    .entry(r.job_id)
                    .or_insert_with(|| (r.origin.as_str().to_owned(), r.reason));
            }
            _ => {
                self.cancel_requests.entry(r.job_id).or_insert(r.reason);
            }
        }
    }

    fn schedule_event(&mut self, e: ScheduleEvent) {
        match e.kind {
            ScheduleEventKind::Allocated => {
                if let Some(at) = e.slot_at {
                    self.allocations.insert(
                        e.job_id,
                        Allocation {
                            tenant: e.tenant_id,
                            slot_at_ms: ms(at),
                            reason: e.reason,
                            time_zone: e.time_zone,
                        },
                    );
                }
            }
            ScheduleEventKind::Cancelled => {
                self.slot_freed.insert(e.job_id);
            }
            ScheduleEventKind::Refused => {
                self.refused.insert(e.job_id, e.reason);
            }
            ScheduleEventKind::LaunchDue => {
                self.fired.insert(e.job_id);
            }
            ScheduleEventKind::Unknown => {}
        }
    }

    fn contact_state(&mut self, s: ContactState) {
        self.workflows.insert(
            (s.tenant_id.clone(), s.contact_id.clone()),
            s.workflow_state,
        );
        for job in s.jobs {
            if job.state == JobState::Held {
                self.held
                    .entry(job.job_id)
                    .or_insert_with(|| job.reason.clone());
            }
            self.job_states.insert(job.job_id, (job.state, job.reason));
        }
    }

    fn call_launch(&mut self, l: CallLaunch) {
        if let Some(call) = &l.provider_call_id {
            self.call_ids.insert(call.clone(), l.launch_id);
            if let Some((source, outcome, at)) = self.unmatched.remove(call) {
                self.completed(l.launch_id, source, outcome, at);
            }
        }
        let accepted_at_ms = (l.status == LaunchStatus::Accepted).then(|| ms(l.occurred_at));
        let entry = self.launches.entry(l.launch_id).or_insert(Launch {
            status: l.status,
            accepted_at_ms,
            reconciled: l.reconciled,
        });
        // An ambiguous launch is later settled; a settled one stays settled.
        if entry.status == LaunchStatus::Ambiguous {
            entry.status = l.status;
            entry.accepted_at_ms = accepted_at_ms;
        }
        entry.reconciled |= l.reconciled;
    }

    fn call_event(&mut self, e: &CallEvent) {
        self.call_event_ids.insert(e.event_id);
        let Some(outcome) = final_outcome(e) else {
            return;
        };
        let (outcome, at) = (outcome.as_str().to_owned(), ms(e.received_at));
        self.completions_received.entry(e.event_id).or_insert(at);
        // The launch id comes from the signed callback URL; without one,
        // the call id names the launch once the dispatcher has reported it.
        match e
            .launch_id
            .or_else(|| self.call_ids.get(&e.call_id).copied())
        {
            Some(launch) => self.completed(launch, e.source, outcome, at),
            None => {
                self.unmatched
                    .entry(e.call_id.clone())
                    .or_insert((e.source, outcome, at));
            }
        }
    }

    fn completed(&mut self, launch: Uuid, source: CallEventSource, outcome: String, at: i64) {
        let map = match source {
            CallEventSource::Live => &mut self.delivered,
            _ => &mut self.recovered_events,
        };
        map.entry(launch).or_insert((outcome, at));
    }

    /// From a completion's arrival at the gateway to the next job it planned, in business
    /// ms, for every final call event that planned one (sorted).
    pub fn completion_to_plan_ms(&self) -> Vec<i64> {
        let mut out: Vec<i64> = self
            .completions_received
            .iter()
            .filter_map(|(id, received)| Some(self.plans_by_cause.get(id)? - received))
            .collect();
        out.sort_unstable();
        out
    }

    /// Accepted launches with no completion and no closed missing case yet.
    /// With `recovery` off, a reported missing completion counts as closed
    /// (nothing would ever close it).
    pub fn open_launches(&self, recovery: bool) -> usize {
        self.launches
            .iter()
            .filter(|(id, l)| {
                l.status == LaunchStatus::Accepted
                    && !self.delivered.contains_key(*id)
                    && !self.resolved.contains_key(*id)
                    && (recovery || !self.missing.contains_key(*id))
            })
            .count()
    }

    /// Allocated jobs the scheduler has not fired or freed, due before `until_ms`.
    pub fn due_before(&self, until_ms: i64) -> usize {
        self.live_allocations()
            .filter(|(_, a)| a.slot_at_ms < until_ms)
            .count()
    }

    /// Allocated jobs neither fired nor freed.
    pub fn live_allocations(&self) -> impl Iterator<Item = (&Uuid, &Allocation)> {
        self.allocations
            .iter()
            .filter(|(id, _)| !self.fired.contains(*id) && !self.slot_freed.contains(*id))
    }

    /// Work handed on and not answered yet: plans without a placement,
    /// launch commands without a dispatcher's report, CRM commands without a
    /// final result.
    pub fn unanswered(&self) -> usize {
        let plans = self
            .plans
            .keys()
            .filter(|id| !self.allocations.contains_key(*id) && !self.refused.contains_key(*id))
            .count();
        let launches = self
            .launch_commands
            .keys()
            .filter(|id| {
                self.launches
                    .get(*id)
                    .is_none_or(|l| l.status == LaunchStatus::Ambiguous)
            })
            .count();
        let crm = self
            .crm_commands
            .keys()
            .filter(|id| !self.crm_results.contains_key(*id))
            .count();
        plans + launches + crm
    }

    /// Launches accepted by the platform.
    pub fn accepted(&self) -> usize {
        self.launches
            .values()
            .filter(|l| l.status == LaunchStatus::Accepted)
            .count()
    }
}

#[cfg(test)]
#[path = "tally_tests.rs"]
mod tests;

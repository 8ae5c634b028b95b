//! The run's summary: the views the projections built (the figures an
//! operator sees), what the topics hold (the tally), what the simulators
//! counted, and checks by launch id; with the pipeline's invariants decided.
//!
//! Each section is a plain struct: printed for people by `render`, and as
//! one JSON line each (`{"summary": "<section>", ...}`) for tools and the
//! end-to-end test.

use serde::Serialize;

use super::api::Api;
use super::by_launch::{self, CrmPerLaunch, Dropped};
use super::notify_sink::Notifications;
use super::promises::Promises;
use super::records::{self, Records};
use super::sections::{self, Calls, Completions, Crm, Exceptions, Intake, Jobs};
use super::sims::SimStats;
use super::slots::{self, Slots};
use super::tally::Tally;
use super::views::Views;

#[derive(Debug, Serialize)]
pub struct Summary {
    pub run: RunInfo,
    pub intake: Intake,
    pub jobs: Jobs,
    pub slots: Vec<Slots>,
    pub calls: Calls,
    pub completions: Completions,
    pub by_launch: ByLaunch,
    pub crm: Crm,
    pub exceptions: Exceptions,
    pub views: Views,
    pub api: Option<Api>,
    pub promises: Promises,
    pub records: Records,
    pub notifications: Notifications,
    pub invariants: Invariants,
}

#[derive(Debug, Serialize)]
pub struct RunInfo {
    pub run_id: String,
    pub topic_prefix: String,
    /// The run's own Postgres database (the views, the API's tokens).
    pub database: String,
    pub contacts: usize,
    pub seconds: f64,
    pub settled: bool,
    pub roles: Vec<String>,
    /// Roles of the design this binary cannot run yet.
    pub roles_missing: Vec<String>,
    pub log_dir: String,
}

/// The checks by launch id (see `by_launch`).
#[derive(Debug, Serialize)]
pub struct ByLaunch {
    pub dropped: Dropped,
    pub crm: CrmPerLaunch,
}

#[derive(Debug, Serialize)]
pub struct Invariants {
    pub every_request_accepted: bool,
    /// Some launches went out, or no job was due during the run.
    pub launches_when_due: bool,
    pub one_call_per_launch: bool,
    pub no_crm_duplicates: bool,
    /// At most one call record and one task per contact and launch, even
    /// where a completion was replayed.
    pub one_crm_record_per_launch: bool,
    pub five_minute_cap_held: bool,
    /// The promises to the people called, from the voice simulator's records.
    pub no_call_to_opted_out_lead: bool,
    pub no_call_while_paused: bool,
    pub cap_held_by_send_time: bool,
    pub no_call_outside_window: bool,
    /// No call against the state calling rules of the lead's states, in its local time.
    pub no_call_against_state_rules: bool,
    pub no_contact_stuck: bool,
    /// Every webhook answered 2xx is on `call-events` (by the event id the answer named).
    pub webhooks_on_call_events: bool,
    /// Every launch and CRM command that failed for good has an exception naming it.
    pub failures_have_exceptions: bool,
    /// Checked by launch id: each dropped completion recovered (advanced
    /// when the platform lost the call), and no missing case left open.
    pub every_dropped_completion_closed: bool,
    pub views_agree_with_topics: bool,
    /// Nothing reached the dead-letter topic, and every record on the topics decoded.
    pub no_dead_letters: bool,
    pub operator_api_answers: bool,
    /// Every message the notifier recorded as sent reached the demo's sink, signed.
    pub notifications_delivered: bool,
    pub settled: bool,
}

impl Invariants {
    /// The names of the invariants that failed.
    pub fn failed(&self) -> Vec<&'static str> {
        self.all()
            .into_iter()
            .filter(|(_, ok)| !ok)
            .map(|(name, _)| name)
            .collect()
    }

    /// Every invariant, with its name.
    pub fn all(&self) -> [(&'static str, bool); 20] {
        [
            ("every launch request accepted", self.every_request_accepted),
            ("launches went out when due", self.launches_when_due),
            ("one call per launch id", self.one_call_per_launch),
            ("no CRM duplicates", self.no_crm_duplicates),
            (
                "one CRM call record and task per contact and launch",
                self.one_crm_record_per_launch,
            ),
            ("5-minute cap held", self.five_minute_cap_held),
            (
                "no call to a lead after they opted out (simulator)",
                self.no_call_to_opted_out_lead,
            ),
            (
                "no call while a pause covered it (simulator)",
                self.no_call_while_paused,
            ),
            (
                "pace cap held by send time (simulator)",
                self.cap_held_by_send_time,
            ),
            (
                "no call outside the lead's window (simulator)",
                self.no_call_outside_window,
            ),
            (
                "no call against the lead's state rules (simulator)",
                self.no_call_against_state_rules,
            ),
            ("no contact stuck in dispatching", self.no_contact_stuck),
            (
                "every webhook answered 202 is on call-events",
                self.webhooks_on_call_events,
            ),
            (
                "every permanent failure has an exception",
                self.failures_have_exceptions,
            ),
            (
                "every dropped completion closed (by launch id)",
                self.every_dropped_completion_closed,
            ),
            ("views agree with the topics", self.views_agree_with_topics),
            ("no dead letters", self.no_dead_letters),
            ("operator API answers", self.operator_api_answers),
            (
                "every notification sent reached its channel, signed",
                self.notifications_delivered,
            ),
            ("pipeline settled", self.settled),
        ]
    }
}

/// What the orchestrator knows besides the topics and the simulators.
pub struct Context<'a> {
    pub run: RunInfo,
    pub workload: &'a callstream_workload::SendReport,
    pub control: &'a callstream_control::ControlFile,
    pub bucket_ms: i64,
    pub recovery: bool,
    pub views: Views,
    pub api: Option<Api>,
    pub promises: Promises,
    pub notifications: Notifications,
}

pub fn build(t: &Tally, sims: &SimStats, cx: Context<'_>) -> Summary {
    let intake = sections::intake(t, cx.workload);
    let jobs = sections::jobs(t);
    let slots = slots::occupancy(t, cx.control);
    let calls = sections::calls(&sims.voice);
    let completions = sections::completions(t, cx.bucket_ms);
    let crm = sections::crm(t, &sims.crm);
    let exceptions = sections::exceptions(t);
    let sim_calls = by_launch::sim_calls(&sims.calls);
    let by_launch = ByLaunch {
        dropped: by_launch::dropped(&sim_calls, t, cx.recovery),
        crm: by_launch::crm_per_launch(&sims.crm, &sim_calls, t),
    };
    let records = records::check(&sim_calls, t);
    let due_during_run = t.fired.len() + t.launch_due.len();
    let invariants = Invariants {
        every_request_accepted: intake.requests == intake.accepted && intake.failed == 0,
        launches_when_due: completions.launch_commands > 0 || due_during_run == 0,
        one_call_per_launch: calls.max_calls_per_launch <= 1,
        no_crm_duplicates: crm.duplicates == 0,
        one_crm_record_per_launch: by_launch.crm.over_one == 0,
        five_minute_cap_held: slots.iter().all(Slots::cap_held),
        no_call_to_opted_out_lead: cx.promises.no_call_to_opted_out_lead.ok(),
        no_call_while_paused: cx.promises.no_call_while_paused.ok(),
        cap_held_by_send_time: cx.promises.cap_held_by_send_time.ok(),
        no_call_outside_window: cx.promises.no_call_outside_window.ok(),
        no_call_against_state_rules: cx.promises.no_call_against_state_rules.ok(),
        no_contact_stuck: cx.promises.no_contact_stuck.ok(),
        webhooks_on_call_events: records.webhooks_on_call_events.ok(),
        failures_have_exceptions: records.failures_have_exceptions.ok(),
        every_dropped_completion_closed: by_launch.dropped.not_closed == 0
            && completions.unresolved == 0
            && completions.still_open == 0,
        views_agree_with_topics: cx.views.agree(),
        no_dead_letters: exceptions.dead_letters == 0 && exceptions.undecodable == 0,
        operator_api_answers: cx.api.as_ref().is_some_and(Api::answered),
        notifications_delivered: cx.notifications.ok(),
        settled: cx.run.settled,
    };
    Summary {
        run: cx.run,
        intake,
        jobs,
        slots,
        calls,
        completions,
        by_launch,
        crm,
        exceptions,
        views: cx.views,
        api: cx.api,
        promises: cx.promises,
        records,
        notifications: cx.notifications,
        invariants,
    }
}

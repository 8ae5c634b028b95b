//! The contact processor on the runtime's in-memory driver: builders for
//! the events that come in, setters for `control`, and typed readers of
//! what went out. Times are fixed instants, so every test is deterministic.
#![allow(dead_code, clippy::unwrap_used)]

use callstream_contact::{processor_with_metrics, spec, ContactConfig, ContactMetrics, APP_ID};
use callstream_e2e::fixtures;
use callstream_platform::Topics;
use callstream_runtime::{header, Input, Processor, TestDriver};
use callstream_schemas::*;
use chrono::{DateTime, TimeZone, Utc};
use uuid::Uuid;

pub const TENANT: &str = "acme";
pub const CAMPAIGN: &str = "enrol";
/// A Chicago number (area code 312); the contact record names no zone.
pub const PHONE: &str = "+13125550100";

/// Tuesday 5 March 2024, 16:00 UTC: 10:00 in Chicago, inside weekday windows.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 3, 5, 16, 0, 0).unwrap()
}

pub fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

pub fn minutes(n: i64) -> chrono::TimeDelta {
    chrono::TimeDelta::minutes(n)
}

pub struct Harness<P: Processor> {
    pub driver: TestDriver<P>,
    pub topics: Topics,
    pub config: ContactConfig,
}

pub fn harness() -> Harness<impl Processor> {
    harness_with(ContactMetrics::default())
}

/// A harness whose processor counts into `metrics`.
pub fn harness_with(metrics: ContactMetrics) -> Harness<impl Processor> {
    let topics = Topics::with_prefix("");
    let config = ContactConfig::new(&topics);
    let driver = TestDriver::new(
        processor_with_metrics(config.clone(), metrics),
        spec(&topics, APP_ID),
        4,
        t0().timestamp_millis(),
    );
    Harness {
        driver,
        topics,
        config,
    }
}

pub fn launch_request(contact: &str, campaign: &str, request: &str) -> ContactCommand {
    ContactCommand {
        event_id: fixtures::id(&format!("lr/{contact}/{request}")),
        ..fixtures::launch_request(TENANT, contact, campaign, request, PHONE, t0())
    }
}

/// An operator (or scheduler) command of `kind` about `contact`.
pub fn command(kind: ContactCommandKind, contact: &str, name: &str) -> ContactCommand {
    ContactCommand {
        event_id: fixtures::id(&format!("cmd/{contact}/{name}")),
        kind,
        actor: Actor::operator("ops@acme"),
        request_id: None,
        campaign_id: None,
        contact: None,
        ..launch_request(contact, CAMPAIGN, name)
    }
}

pub fn launch_due(contact: &str, job: &ScheduleRequest, slot_at: DateTime<Utc>) -> ContactCommand {
    ContactCommand {
        actor: Actor::system("scheduler"),
        job_id: Some(job.job_id),
        campaign_id: Some(job.campaign_id.clone()),
        origin: Some(job.origin),
        slot: Some(1),
        slot_at: Some(slot_at),
        occurred_at: slot_at,
        causation_id: Some(job.event_id),
        correlation_id: job.correlation_id,
        ..command(
            ContactCommandKind::LaunchDue,
            contact,
            &format!("due/{}", job.job_id),
        )
    }
}

/// A Twilio status callback for the call of `launch` (`completed` with `AnsweredBy`, `busy`, ...).
pub fn call_event(
    contact: &str,
    call_id: &str,
    launch: Option<Uuid>,
    status: &str,
    answered_by: Option<&str>,
    occurred_at: DateTime<Utc>,
) -> CallEvent {
    CallEvent {
        event_id: fixtures::id(&format!("ce/{call_id}/{status}/{answered_by:?}")),
        integration_id: Some("twilio-main".into()),
        launch_id: launch,
        answered_by: answered_by.map(str::to_owned),
        duration_seconds: Some(42),
        ..fixtures::call_event(TENANT, contact, call_id, status, occurred_at)
    }
}

pub fn answered(
    contact: &str,
    call_id: &str,
    launch: Option<Uuid>,
    analysis: CallAnalysis,
    at: DateTime<Utc>,
) -> CallEvent {
    CallEvent {
        analysis: Some(analysis),
        ..call_event(contact, call_id, launch, "completed", Some("human"), at)
    }
}

pub fn control_change(
    setting: ControlSetting,
    campaign: Option<&str>,
    value: ControlValue,
) -> ControlChange {
    let actor = Actor::operator("ops@acme");
    fixtures::control_change(TENANT, setting, campaign, value, actor, t0())
}

impl<P: Processor> Harness<P> {
    pub fn command(&mut self, cmd: &ContactCommand, at: DateTime<Utc>) {
        let input = Input::new(
            self.topics.name("contact-commands"),
            cmd.contact_id.clone(),
            cmd.encode().unwrap(),
        )
        .header(header::EVENT_ID, cmd.event_id.to_string())
        .at(at.timestamp_millis());
        self.driver.pipe(input);
    }

    /// The dispatcher's outcome of a launch, as it lands on `call-launches`.
    pub fn launch_outcome(&mut self, outcome: &CallLaunch) {
        let input = Input::new(
            self.topics.name("call-launches"),
            outcome.contact_id.clone(),
            outcome.encode().unwrap(),
        )
        .header(header::EVENT_ID, outcome.event_id.to_string())
        .at(outcome.occurred_at.timestamp_millis());
        self.driver.pipe(input);
    }

    pub fn call(&mut self, event: &CallEvent) {
        let input = Input::new(
            self.topics.name("call-events"),
            event.contact_id.clone(),
            event.encode().unwrap(),
        )
        .header(header::EVENT_ID, event.event_id.to_string())
        .at(event.occurred_at.timestamp_millis());
        self.driver.pipe(input);
    }

    pub fn set_control(&mut self, change: &ControlChange) {
        let topic = self.topics.name("control");
        self.driver
            .set_global(&topic, change.record_key(), Some(change.encode().unwrap()));
    }

    pub fn clear_control(&mut self, setting: ControlSetting, campaign: Option<&str>) {
        let change = control_change(setting, campaign, ControlValue::default());
        let topic = self.topics.name("control");
        self.driver.set_global(&topic, change.record_key(), None);
    }

    pub fn pause(&mut self, setting: ControlSetting, campaign: Option<&str>, on: bool) {
        let value = ControlValue {
            enabled: Some(on),
            ..ControlValue::default()
        };
        self.set_control(&control_change(setting, campaign, value));
    }

    pub fn campaign_settings(&mut self, campaign: &str, settings: CampaignSettings) {
        let value = ControlValue {
            campaign: Some(settings),
            ..ControlValue::default()
        };
        self.set_control(&control_change(
            ControlSetting::CampaignSettings,
            Some(campaign),
            value,
        ));
    }

    pub fn schedule_requests(&self) -> Vec<ScheduleRequest> {
        self.driver.outputs(&self.topics.name("schedule-requests"))
    }

    pub fn plans(&self) -> Vec<ScheduleRequest> {
        self.schedule_requests()
            .into_iter()
            .filter(|r| r.kind == ScheduleRequestKind::Plan)
            .collect()
    }

    pub fn cancels(&self) -> Vec<ScheduleRequest> {
        self.schedule_requests()
            .into_iter()
            .filter(|r| r.kind == ScheduleRequestKind::Cancel)
            .collect()
    }

    /// The launches sent to the dispatcher (`launch-commands` also carries
    /// the stops of launches whose lead became barred: see `stops`).
    pub fn launches(&self) -> Vec<LaunchCommand> {
        self.launch_topic()
    }

    /// The stops sent to the dispatcher (`cancel_future_jobs` naming a launch).
    pub fn stops(&self) -> Vec<ContactCommand> {
        self.launch_topic()
    }

    /// The keys of the records on `launch-commands`, in order.
    pub fn launch_keys(&self) -> Vec<String> {
        self.driver
            .records(&self.topics.name("launch-commands"))
            .iter()
            .filter_map(|r| String::from_utf8(r.key.clone()?).ok())
            .collect()
    }

    fn launch_topic<E: Event>(&self) -> Vec<E> {
        self.driver
            .records(&self.topics.name("launch-commands"))
            .iter()
            .filter_map(|r| E::decode(r.value.as_deref()?).ok())
            .collect()
    }

    pub fn crm(&self) -> Vec<CrmCommand> {
        self.driver.outputs(&self.topics.name("crm-commands"))
    }

    pub fn exceptions(&self) -> Vec<ExceptionEvent> {
        self.driver.outputs(&self.topics.name("exceptions"))
    }

    pub fn audits(&self) -> Vec<AuditEvent> {
        self.driver.outputs(&self.topics.name("audit"))
    }

    pub fn states(&self) -> Vec<ContactState> {
        self.driver.outputs(&self.topics.name("contact-state"))
    }

    /// The latest published state of `contact`.
    pub fn state(&self, contact: &str) -> ContactState {
        self.states()
            .into_iter()
            .rev()
            .find(|s| s.contact_id == contact)
            .unwrap()
    }

    /// How many records went to any output topic so far.
    pub fn output_count(&self) -> usize {
        [
            "schedule-requests",
            "launch-commands",
            "crm-commands",
            "exceptions",
            "audit",
            "contact-state",
            "dead-letters",
        ]
        .iter()
        .map(|t| self.driver.records(&self.topics.name(t)).len())
        .sum()
    }

    /// Enters `contact` into `campaign` and returns the plan sent to the scheduler.
    pub fn enter(&mut self, contact: &str, campaign: &str) -> ScheduleRequest {
        self.command(&launch_request(contact, campaign, "r1"), t0());
        self.plans()
            .into_iter()
            .rev()
            .find(|p| p.contact_id == contact)
            .unwrap()
    }

    /// The scheduler says `job`'s slot has come at `slot_at`; returns the
    /// launch if the guards passed it.
    pub fn due(
        &mut self,
        contact: &str,
        job: &ScheduleRequest,
        slot_at: DateTime<Utc>,
    ) -> Option<LaunchCommand> {
        let before = self.launches().len();
        self.command(&launch_due(contact, job, slot_at), slot_at);
        let launches = self.launches();
        (launches.len() > before).then(|| launches.last().unwrap().clone())
    }

    /// Enters and launches `contact`; returns the launch.
    pub fn launched(&mut self, contact: &str) -> LaunchCommand {
        let plan = self.enter(contact, CAMPAIGN);
        self.due(contact, &plan, t0() + minutes(5)).unwrap()
    }
}

/// The job `job_id` in a published state.
pub fn job(state: &ContactState, job_id: Uuid) -> &ContactJob {
    state.jobs.iter().find(|j| j.job_id == job_id).unwrap()
}

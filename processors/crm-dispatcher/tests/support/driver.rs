//! The test kit of the driver tests: the dispatcher on the runtime's
//! in-memory driver, commands to pipe in, control switches to flip, and
//! readers for the effects asked for and the records emitted.
#![allow(dead_code, clippy::unwrap_used)]

use callstream_crm_dispatcher::wire::{CrmRequest, EffectCall, Outcome};
use callstream_crm_dispatcher::{self as crm, ControlTable, CrmDispatcher, CrmDispatcherConfig};
use callstream_e2e::fixtures;
use callstream_platform::Topics;
use callstream_runtime::{EffectRequest, Input, TestDriver};
use callstream_schemas::{
    Actor, AuditEvent, ContactCommand, ContactCommandKind, ControlSetting, CrmAction, CrmCommand,
    CrmResult, CrmResultStatus, Event, ExceptionEvent,
};
use chrono::DateTime;
use uuid::Uuid;

pub const START: i64 = 1_700_000_000_000;
pub const TENANT: &str = "t1";

pub fn topics() -> Topics {
    Topics::default()
}

pub fn config() -> CrmDispatcherConfig {
    CrmDispatcherConfig::new(topics(), "http://crm.test", "token")
}

pub struct Kit {
    pub driver: TestDriver<CrmDispatcher<ControlTable>>,
    pub config: CrmDispatcherConfig,
}

/// A command numbered `n` (its operation id), for `contact`.
pub fn command(n: u128, contact: &str, action: CrmAction) -> CrmCommand {
    let at = DateTime::from_timestamp_millis(START).unwrap();
    CrmCommand {
        event_id: Uuid::from_u128(0xe000 + n),
        call_id: Some(format!("call-{n}")),
        campaign_id: Some("camp".into()),
        subject: Some(format!("subject {n}")),
        body: Some(format!("body {n}")),
        ..fixtures::crm_command(TENANT, contact, op(n), action, at)
    }
}

pub fn op(n: u128) -> Uuid {
    Uuid::from_u128(0x0a00_0000 + n)
}

/// An update of `contact` setting `properties`, for a fact at `fact_ms`.
pub fn update(n: u128, contact: &str, fact_ms: i64, properties: &[(&str, &str)]) -> CrmCommand {
    let mut cmd = command(n, contact, CrmAction::UpdateContact);
    cmd.fact_at = DateTime::from_timestamp_millis(fact_ms).unwrap();
    cmd.properties = properties
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    cmd
}

/// An operator's retry (numbered `n`) of the failed command behind
/// `exception`, as the operator API publishes it on `crm-commands`.
pub fn retry_request(n: u128, contact: &str, exception: Uuid) -> ContactCommand {
    let at = DateTime::from_timestamp_millis(START).unwrap();
    let actor = Actor::operator("ana");
    ContactCommand {
        event_id: Uuid::from_u128(0xf000 + n),
        exception_id: Some(exception),
        reason: Some("CRM is back".into()),
        ..fixtures::contact_command(TENANT, contact, ContactCommandKind::RetryNow, actor, at)
    }
}

pub fn written(id: &str) -> Outcome {
    Outcome::Written {
        status: 201,
        object_id: id.into(),
    }
}

pub fn refused(status: u16, retry_after_ms: Option<u64>) -> Outcome {
    Outcome::Refused {
        status,
        retry_after_ms,
        message: format!("answered {status}"),
    }
}

pub fn unanswered() -> Outcome {
    Outcome::Unanswered {
        message: "operation timed out".into(),
    }
}

impl Kit {
    pub fn new() -> Self {
        Self::with(config())
    }

    pub fn with(config: CrmDispatcherConfig) -> Self {
        let spec = crm::spec(&config.topics, crm::APP_ID);
        let control = ControlTable::new(config.topics.name("control"));
        let processor = crm::processor_with(&config, control);
        Self {
            driver: TestDriver::new(processor, spec, 4, START),
            config,
        }
    }

    pub fn pipe(&mut self, command: &CrmCommand) {
        let topic = self.config.topics.name("crm-commands");
        self.driver.pipe(Input::new(
            topic,
            command.contact_id.clone(),
            command.encode().unwrap(),
        ));
    }

    /// Pipes an operator's retry, keyed by its contact.
    pub fn pipe_retry(&mut self, request: &ContactCommand) {
        let topic = self.config.topics.name("crm-commands");
        self.driver.pipe(Input::new(
            topic,
            request.contact_id.clone(),
            request.encode().unwrap(),
        ));
    }

    /// Sets a control flag of the tenant (`None` unsets it).
    pub fn switch(&mut self, setting: ControlSetting, enabled: Option<bool>) {
        let at = DateTime::from_timestamp_millis(START).unwrap();
        let change = fixtures::switch(TENANT, setting, enabled, Actor::operator("ops"), at);
        let topic = self.config.topics.name("control");
        self.driver.set_global(
            &topic,
            change.record_key().into_bytes(),
            Some(change.encode().unwrap()),
        );
    }

    /// The pending effects with their decoded calls.
    pub fn pending(&self) -> Vec<(EffectRequest, EffectCall)> {
        self.driver
            .pending_effects()
            .iter()
            .map(|r| (r.clone(), serde_json::from_slice(&r.payload).unwrap()))
            .collect()
    }

    /// The one pending effect for `contact`.
    pub fn pending_for(&self, contact: &str) -> (EffectRequest, CrmRequest) {
        let mut mine: Vec<_> = self
            .pending()
            .into_iter()
            .filter(|(r, _)| callstream_kit::keys::contact_of(&r.key) == contact)
            .collect();
        assert_eq!(
            mine.len(),
            1,
            "one request in flight for {contact}: {mine:?}"
        );
        let (request, call) = mine.remove(0);
        (request, call.request)
    }

    /// Completes `contact`'s pending effect with `outcome`; returns what it asked.
    pub fn answer(&mut self, contact: &str, outcome: Outcome) -> CrmRequest {
        let (request, crm_request) = self.pending_for(contact);
        self.driver.complete_effect(request, outcome.encode());
        crm_request
    }

    pub fn results(&self) -> Vec<CrmResult> {
        self.driver.outputs(&self.config.topics.name("crm-results"))
    }

    pub fn statuses(&self) -> Vec<(Uuid, CrmResultStatus)> {
        self.results()
            .iter()
            .map(|r| (r.operation_id, r.status))
            .collect()
    }

    pub fn exceptions(&self) -> Vec<ExceptionEvent> {
        self.driver.outputs(&self.config.topics.name("exceptions"))
    }

    pub fn audits(&self) -> Vec<AuditEvent> {
        self.driver.outputs(&self.config.topics.name("audit"))
    }

    pub fn advance_s(&mut self, seconds: i64) {
        self.driver.advance_wall_clock_ms(seconds * 1000);
    }
}

impl Kit {
    /// Answers `contact`'s searches with "not found", 10 s of business time
    /// apart, until it asks for a write instead; returns the searches
    /// answered and the seconds that passed.
    pub fn search_out_the_window(&mut self, contact: &str) -> (i32, i64) {
        let (mut searches, mut waited) = (0, 0);
        loop {
            let out = self
                .pending()
                .into_iter()
                .find(|(r, _)| callstream_kit::keys::contact_of(&r.key) == contact);
            match out {
                Some((_, call)) if is_search(&call.request) => {
                    self.answer(contact, Outcome::NotFound);
                    searches += 1;
                }
                Some(_) => return (searches, waited),
                None => {
                    assert!(
                        waited < 3_600,
                        "{contact} neither searched nor wrote in an hour"
                    );
                    self.advance_s(10);
                    waited += 10;
                }
            }
        }
    }
}

pub fn is_create(request: &CrmRequest) -> bool {
    matches!(request, CrmRequest::Create { .. })
}

pub fn is_search(request: &CrmRequest) -> bool {
    matches!(request, CrmRequest::Search { .. })
}

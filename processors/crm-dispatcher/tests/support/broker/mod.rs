//! The kit of the end-to-end tests: the CRM simulator on 127.0.0.1 (port
//! 0) with a log of the API requests it got, a fresh set of topics on the
//! real broker behind a unique prefix, the dispatcher in-process or as an
//! OS process (to SIGKILL it), command, operator-retry and control
//! producers, and a `read_committed` collector of results, exceptions and
//! audit events.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use callstream_crm_dispatcher::{self as crm, CrmDispatcherConfig};
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{
    bootstrap_servers, create_topic, create_topic_with, fixtures, produce, unique_name,
};
use callstream_platform::Topics;
use callstream_schemas::{
    Actor, AuditEvent, ContactCommand, ContactCommandKind, ControlSetting, CrmAction, CrmCommand,
    CrmResult, CrmResultStatus, Event, ExceptionEvent,
};
use callstream_sim_crm::{CrmBehaviour, CrmState, SimCrmConfig};
use rdkafka::message::Message;
use rdkafka::producer::FutureProducer;
use serde_json::Value;
use tokio::net::TcpListener;
use uuid::Uuid;

mod collect;
mod requests;

pub use collect::Collected;
// Not every test reads the request log's entries.
#[allow(unused_imports)]
pub use requests::{Logged, RequestLog};

pub const TOKEN: &str = "pat-na1-callstream-test";
pub const TENANT: &str = "t1";
pub const PARTITIONS: i32 = 4;

/// The simulator, served on a port of its own.
pub struct Sim {
    pub state: CrmState,
    pub base: String,
    pub log: RequestLog,
    http: reqwest::Client,
}

/// HubSpot's search lag, its shape kept and its scale cut to fit a test:
/// log-normal, a median of 500 ms, p99 about 8 s, the longest 8 s.
pub fn scaled_search_lag(behaviour: CrmBehaviour) -> CrmBehaviour {
    CrmBehaviour {
        search_lag_ms: 500,
        search_lag_sigma: 1.2,
        search_lag_max_ms: 8_000,
        ..behaviour
    }
}

impl Sim {
    pub async fn start(behaviour: CrmBehaviour) -> Result<Self> {
        let config = SimCrmConfig {
            tokens: vec![TOKEN.into()],
            seed: 7,
            behaviour,
            ..SimCrmConfig::default()
        };
        let state = CrmState::new(&config)?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let log = RequestLog::default();
        let app = callstream_sim_crm::app(state.clone()).layer(
            axum::middleware::from_fn_with_state(log.clone(), requests::record),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self {
            state,
            base,
            log,
            http: reqwest::Client::new(),
        })
    }

    pub async fn stats(&self) -> Result<Value> {
        let url = format!("{}/_sim/stats", self.base);
        Ok(self.http.get(url).send().await?.json().await?)
    }

    pub async fn admin(&self, path: &str, body: Value) -> Result<()> {
        let url = format!("{}{path}", self.base);
        let status = self.http.post(url).json(&body).send().await?.status();
        anyhow::ensure!(status.is_success(), "{path}: {status}");
        Ok(())
    }

    /// A contact's properties as the CRM holds them.
    pub async fn contact(&self, id: &str, properties: &str) -> Result<Value> {
        // Encoded like the dispatcher's own requests: the id is one segment.
        let id = callstream_crm_dispatcher::wire::segment("contact id", id)?;
        let url = format!("{}/crm/v3/objects/contacts/{id}", self.base);
        let response = self
            .http
            .get(url)
            .query(&[("properties", properties)])
            .bearer_auth(TOKEN)
            .send()
            .await?;
        Ok(response.json().await?)
    }
}

/// A fresh set of topics and the dispatcher's configuration for them.
pub struct Stack {
    pub topics: Topics,
    pub app_id: String,
    pub config: CrmDispatcherConfig,
    pub producer: FutureProducer,
}

impl Stack {
    /// Topics behind a unique prefix, and a dispatcher configuration for
    /// `sim` with short timeouts (so crashes reconcile in seconds).
    pub async fn new(prefix: &str, sim: &Sim) -> Result<Self> {
        let app_id = unique_name(prefix);
        let topics = Topics {
            prefix: format!("{app_id}."),
            partitions: PARTITIONS,
            ..Topics::default()
        };
        for logical in [
            "crm-commands",
            "crm-results",
            "exceptions",
            "audit",
            "dead-letters",
        ] {
            create_topic(&topics.name(logical), PARTITIONS).await?;
        }
        create_topic_with(&topics.name("control"), 1, &[("cleanup.policy", "compact")]).await?;
        let mut config = CrmDispatcherConfig::new(topics.clone(), sim.base.clone(), TOKEN);
        config.policy.request_timeout = Duration::from_millis(1_500);
        config.policy.connect_timeout = Duration::from_millis(500);
        config.policy.send_window = Duration::from_secs(5);
        config.policy.settle = Duration::from_millis(500);
        // Covers the send window, the request timeout, the settle time and
        // the longest lag of `scaled_search_lag` (8 s).
        config.policy.settle_window = Duration::from_secs(16);
        config.policy.search_interval = Duration::from_secs(2);
        config.policy.retry.base_delay = Duration::from_millis(250);
        config.policy.retry.max_delay = Duration::from_secs(4);
        config.policy.retry.max_failures = 30;
        Ok(Self {
            topics,
            app_id,
            config,
            producer: callstream_e2e::producer()?,
        })
    }

    pub async fn send(&self, command: &CrmCommand) -> Result<()> {
        produce(
            &self.producer,
            &self.topics.name("crm-commands"),
            &command.contact_id,
            &command.encode()?,
        )
        .await
        .map(|_| ())
    }

    /// An operator's retry, as the operator API publishes it.
    pub async fn send_retry(&self, request: &ContactCommand) -> Result<()> {
        produce(
            &self.producer,
            &self.topics.name("crm-commands"),
            &request.contact_id,
            &request.encode()?,
        )
        .await
        .map(|_| ())
    }

    /// Sets a tenant switch on the control topic.
    pub async fn switch(&self, setting: ControlSetting, enabled: bool) -> Result<()> {
        let actor = Actor::operator("test");
        let change = fixtures::switch(TENANT, setting, Some(enabled), actor, chrono::Utc::now());
        produce(
            &self.producer,
            &self.topics.name("control"),
            &change.record_key(),
            &change.encode()?,
        )
        .await
        .map(|_| ())
    }

    /// The dispatcher on a thread of this process.
    pub fn run_in_process(&self) -> Result<Running> {
        let spec = crm::spec(&self.topics, &self.app_id);
        let effects = crm::effect_runner(&self.config)?;
        let processor = crm::processor(&self.config);
        Ok(Running::start(processor, spec, |runtime| {
            runtime.effects = Some(effects);
        }))
    }

    /// The dispatcher as an OS process (the `crm-dispatcher` binary).
    pub fn spawn(&self) -> Result<Child> {
        let log = std::env::temp_dir().join(format!("{}.log", self.app_id));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        let c = &self.config;
        let p = &c.policy;
        let millis = |d: Duration| d.as_millis().to_string();
        Command::new(env!("CARGO_BIN_EXE_crm-dispatcher"))
            .env("KAFKA_BOOTSTRAP_SERVERS", bootstrap_servers())
            .env("CALLSTREAM_TOPIC_PREFIX", &self.topics.prefix)
            .env("CALLSTREAM_TOPIC_PARTITIONS", PARTITIONS.to_string())
            .env("CALLSTREAM_APP_ID", &self.app_id)
            .env("CALLSTREAM_CRM_BASE_URL", &c.base_url)
            .env("CALLSTREAM_CRM_TOKEN", TOKEN)
            .env(
                "CALLSTREAM_CRM_RATE_LIMIT_MAX",
                c.rate_limit.max_requests.to_string(),
            )
            .env(
                "CALLSTREAM_CRM_RATE_LIMIT_WINDOW_MS",
                millis(c.rate_limit.window),
            )
            .env(
                "CALLSTREAM_CRM_REQUEST_TIMEOUT_MS",
                millis(p.request_timeout),
            )
            .env(
                "CALLSTREAM_CRM_CONNECT_TIMEOUT_MS",
                millis(p.connect_timeout),
            )
            .env("CALLSTREAM_CRM_SEND_WINDOW_MS", millis(p.send_window))
            .env("CALLSTREAM_CRM_SETTLE_MS", millis(p.settle))
            .env("CALLSTREAM_CRM_SETTLE_WINDOW_MS", millis(p.settle_window))
            .env(
                "CALLSTREAM_CRM_SEARCH_INTERVAL_MS",
                millis(p.search_interval),
            )
            .env(
                "CALLSTREAM_CRM_SEARCH_RATE_MAX",
                c.search_limit.max_requests.to_string(),
            )
            .env("CALLSTREAM_CRM_RETRY_BASE_MS", millis(p.retry.base_delay))
            .env("CALLSTREAM_CRM_RETRY_MAX_MS", millis(p.retry.max_delay))
            .env(
                "CALLSTREAM_CRM_MAX_FAILURES",
                p.retry.max_failures.to_string(),
            )
            .env("CALLSTREAM_CRM_CONCURRENCY", c.concurrency.to_string())
            .env("CALLSTREAM_TRANSACTION_TIMEOUT_MS", "10000")
            .env("CALLSTREAM_SESSION_TIMEOUT_MS", "6000")
            .env("CALLSTREAM_LOG_FORMAT", "text")
            .env("RUST_LOG", "warn,callstream_crm_dispatcher=info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting the crm-dispatcher binary")
    }

    /// Collects every committed result, exception and audit event from now on.
    pub fn collect(&self) -> Result<Collected> {
        let collected = Collected::default();
        for topic in ["crm-results", "exceptions", "audit"] {
            let consumer = reader(&self.topics.name(topic), PARTITIONS)?;
            let sink = collected.clone();
            tokio::spawn(async move {
                loop {
                    let Ok(message) = consumer.recv().await else {
                        continue;
                    };
                    let Some(value) = message.payload() else {
                        continue;
                    };
                    let mut inner = sink.0.lock().unwrap();
                    match topic {
                        "exceptions" => inner.exceptions.extend(ExceptionEvent::decode(value)),
                        "audit" => inner.audits.extend(AuditEvent::decode(value)),
                        _ => {
                            if let Ok(r) = CrmResult::decode(value) {
                                inner.results.push((Instant::now(), r));
                            }
                        }
                    }
                }
            });
        }
        Ok(collected)
    }
}

/// An operator's retry of the failed command behind `exception`, as
/// `POST /v1/exceptions/{id}/retry` publishes it.
pub fn retry_request(contact: &str, exception: Uuid) -> ContactCommand {
    let id = Uuid::new_v4();
    let actor = Actor::operator("test-operator");
    ContactCommand {
        event_id: id,
        correlation_id: Some(id),
        exception_id: Some(exception),
        reason: Some("the CRM is back".into()),
        ..fixtures::contact_command(
            TENANT,
            contact,
            ContactCommandKind::RetryNow,
            actor,
            chrono::Utc::now(),
        )
    }
}

/// A command of `action` for `contact`, fact at `fact_ms`, its body saying `seq`.
pub fn command(contact: &str, action: CrmAction, seq: u64, fact_ms: i64) -> CrmCommand {
    let at = chrono::DateTime::from_timestamp_millis(fact_ms).unwrap();
    let mut properties = BTreeMap::new();
    if action == CrmAction::UpdateContact {
        properties.insert("callstream_seq".to_owned(), seq.to_string());
    }
    CrmCommand {
        call_id: Some(format!("call-{seq}")),
        campaign_id: Some("camp-1".into()),
        properties,
        subject: Some(format!("step {seq}")),
        body: Some(format!("seq {seq}")),
        ..fixtures::crm_command(TENANT, contact, Uuid::new_v4(), action, at)
    }
}

/// Whether a status is one a command may end with.
pub fn is_final(status: CrmResultStatus) -> bool {
    use CrmResultStatus::*;
    matches!(
        status,
        Applied | AlreadyApplied | SkippedStale | Suppressed | Failed
    )
}

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

//! The whole operator path in one process, on the real broker and a fresh Postgres
//! database: the projections (`callstream_e2e::views`), the processors that act on operator
//! commands (see `processors`) against the project's voice and CRM simulators (see `sims`),
//! all under the test's own topic prefix, and the operator API's router. Nothing is faked:
//! a test sends the inputs upstream services would (see `seed`) and drives the API. Used by
//! `operator_api_actions_e2e.rs` and `operator_api_schemathesis.rs`.

pub mod action;
pub mod processors;
pub mod seed;
pub mod sims;

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use base64::Engine;
use callstream_e2e::runtime::Running;
use callstream_e2e::views::Views;
use callstream_operator_api::{app, create_token, state, OperatorApiConfig, Role};
use callstream_platform::topics as t;
use callstream_schemas::AnyEvent;
use callstream_sim_crm::CrmState;
use callstream_sim_voice::SimState;
use http_body_util::BodyExt;
use rdkafka::producer::FutureProducer;
use serde_json::Value;
use tower::ServiceExt;

use sims::{ACCOUNT, AUTH_TOKEN};

/// How long the CRM refuses every request from the start: long enough for the dispatcher
/// to join its group and fail a command for good, short next to the whole run.
pub const CRM_OUTAGE: Duration = Duration::from_secs(15);

pub struct Stack {
    pub router: axum::Router,
    /// The API's configuration (a test may serve it on a socket too).
    pub config: OperatorApiConfig,
    /// The database, the topics and the projections on them.
    pub views: Views,
    pub sim: SimState,
    pub crm: CrmState,
    /// When the CRM answers again.
    pub crm_back_at: Instant,
    pub viewer: String,
    pub operator: String,
    pub admin: String,
    producer: FutureProducer,
    processors: Vec<Running>,
}

impl Stack {
    pub async fn start() -> Result<Self> {
        let views = Views::start("callstream_test_actions", "act").await?;

        let (sim, voice_base) = sims::voice_simulator().await?;
        let crm_back_at = Instant::now() + CRM_OUTAGE;
        let (crm, crm_base) = sims::crm_simulator(CRM_OUTAGE).await?;
        let processors = processors::start(&views.topics, &voice_base, &crm_base)?;

        let config = OperatorApiConfig::new(
            views.db.url.clone(),
            views.kafka.clone(),
            views.topics.clone(),
        );
        let router = app(state(&config)?);
        let token = |role, who: &'static str| create_token(&views.db.pool, seed::TENANT, role, who);
        let viewer = token(Role::Viewer, "viewer@e2e").await?.token;
        let operator = token(Role::Operator, "operator@e2e").await?.token;
        let admin = token(Role::Admin, "admin@e2e").await?.token;
        Ok(Self {
            router,
            config,
            views,
            sim,
            crm,
            crm_back_at,
            viewer,
            operator,
            admin,
            producer: callstream_e2e::producer()?,
            processors,
        })
    }

    /// Produces `event` where its producer would, keyed as it would.
    pub async fn produce(&self, event: impl Into<AnyEvent>) -> Result<()> {
        let event = event.into();
        let (topic, key) = match &event {
            AnyEvent::ContactCommand(c) => (t::CONTACT_COMMANDS, c.contact_id.clone()),
            AnyEvent::CallLaunch(l) => (t::CALL_LAUNCHES, l.contact_id.clone()),
            AnyEvent::CallEvent(e) => (t::CALL_EVENTS, e.contact_id.clone()),
            AnyEvent::ExceptionEvent(e) => (t::EXCEPTIONS, e.contact_id.clone()),
            AnyEvent::ControlChange(c) => (t::CONTROL, c.record_key()),
            AnyEvent::CrmCommand(c) => (t::CRM_COMMANDS, c.contact_id.clone()),
            other => bail!("not an input of this test: {:?}", other.kind()),
        };
        let topic = self.views.topics.name(topic);
        callstream_e2e::produce(&self.producer, &topic, &key, &event.encode()?).await?;
        Ok(())
    }

    /// One request through the router; the body is JSON (or `Null` when it is not).
    pub async fn call(
        &self,
        method: &str,
        uri: &str,
        token: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Value)> {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))?;
        let response = self.router.clone().oneshot(request).await?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        Ok((
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ))
    }

    /// A read as the viewer, which must answer 200.
    pub async fn get(&self, uri: &str) -> Result<Value> {
        let (status, body) = self.call("GET", uri, &self.viewer, None).await?;
        if status != StatusCode::OK {
            bail!("GET {uri}: {status} {body}");
        }
        Ok(body)
    }

    /// One request to the voice simulator's Twilio API, as its account.
    async fn sim_request(
        &self,
        method: &str,
        path: &str,
        form: &str,
    ) -> Result<(StatusCode, Value)> {
        let auth =
            base64::engine::general_purpose::STANDARD.encode(format!("{ACCOUNT}:{AUTH_TOKEN}"));
        let request = Request::builder()
            .method(method)
            .uri(format!("/2010-04-01/Accounts/{ACCOUNT}/{path}"))
            .header("authorization", format!("Basic {auth}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(form.to_string()))?;
        let response = callstream_sim_voice::app(self.sim.clone())
            .oneshot(request)
            .await?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        Ok((
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ))
    }

    /// Places a call at the voice simulator with the behaviour now in force; its sid.
    pub async fn place_call(&self) -> Result<String> {
        let form = "To=%2B13125550100&From=%2B15005550006&Twiml=%3CResponse%2F%3E\
                    &MachineDetection=DetectMessageEnd";
        let (status, call) = self.sim_request("POST", "Calls.json", form).await?;
        match call["sid"].as_str() {
            Some(sid) if status == StatusCode::CREATED => Ok(sid.to_string()),
            _ => bail!("placing a call: {status} {call}"),
        }
    }

    /// The status the voice platform reports for call `sid`.
    pub async fn call_status(&self, sid: &str) -> Result<String> {
        let (_, call) = self
            .sim_request("GET", &format!("Calls/{sid}.json"), "")
            .await?;
        Ok(call["status"].as_str().unwrap_or_default().to_string())
    }

    /// Stops the processors (an error of theirs fails the test) and the projections.
    pub fn stop(mut self) -> Result<()> {
        self.views.stop_projections();
        for running in std::mem::take(&mut self.processors) {
            running.stop()?;
        }
        Ok(())
    }
}

/// Polls `check` until it yields a value, for at most `within`.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if Instant::now() > deadline {
            bail!("{what}: not seen within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

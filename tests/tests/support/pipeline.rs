//! The calling path in one process, on the real broker: the contact processor,
//! the scheduler and the launch dispatcher, each on the runtime in a thread of
//! its own under the test's topic prefix, against the project's voice
//! simulator (status callbacks go to a sink that answers 204). Each processor
//! can be stopped and started again under its app id, as a crash and restart
//! would (state restored from its changelogs). Used by `lead_safety.rs`.
//!
//! What reached the platform is read from the simulator's own records, never
//! from callstream's counters.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{fixtures, producer, unique_name};
use callstream_platform::{KafkaSettings, Topics};
use callstream_schemas::*;
use callstream_sim_voice::store::CallRecord;
use callstream_sim_voice::{serve_state, Behaviour, SimState, SimVoiceConfig};
use rdkafka::consumer::StreamConsumer;
use rdkafka::message::Message;
use rdkafka::producer::FutureProducer;

pub const TENANT: &str = "acme";
pub const CAMPAIGN: &str = "enrol";
pub const PARTITIONS: i32 = 3;

/// The processors of the calling path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Contact,
    Scheduler,
    Dispatcher,
}

pub struct Pipeline {
    pub topics: Topics,
    pub sim: SimState,
    sim_url: String,
    callbacks: String,
    producer: FutureProducer,
    running: BTreeMap<Role, Running>,
    /// How often the contact processor looks at jobs a pause holds.
    pause_recheck: Duration,
}

impl Pipeline {
    /// Topics, the simulator and the callback sink; no processor runs yet.
    pub async fn new(name: &str, behaviour: Behaviour) -> Result<Self> {
        let mut topics = Topics::with_prefix(format!("{}-", unique_name(name)));
        topics.partitions = PARTITIONS;
        let settings = KafkaSettings::from_env("lead-safety-test");
        callstream_platform::admin::ensure_topics(&settings, &topics.specs()).await?;
        let config = SimVoiceConfig {
            seed: 5,
            behaviour,
            ..SimVoiceConfig::default()
        };
        let sim = SimState::new(&config).context("voice simulator config")?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let sim_url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(serve_state(sim.clone(), listener, std::future::pending()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let callbacks = format!("http://{}", listener.local_addr()?);
        let sink = axum::Router::new().fallback(|| async { axum::http::StatusCode::NO_CONTENT });
        tokio::spawn(async move { axum::serve(listener, sink).await });
        Ok(Self {
            topics,
            sim,
            sim_url,
            callbacks,
            producer: producer()?,
            running: BTreeMap::new(),
            pause_recheck: Duration::from_millis(500),
        })
    }

    fn app(&self, role: Role) -> String {
        format!("{}{role:?}", self.topics.prefix).to_lowercase()
    }

    /// Starts `roles` (each under its own app id: a restart resumes it).
    pub fn start(&mut self, roles: &[Role]) -> Result<()> {
        let fast = |c: &mut callstream_runtime::RuntimeConfig| {
            c.commit.interval = Duration::from_millis(50);
        };
        for role in roles {
            let app = self.app(*role);
            let running = match role {
                Role::Contact => {
                    let mut config = callstream_contact::ContactConfig::new(&self.topics);
                    config.pause_recheck = self.pause_recheck;
                    Running::start(
                        callstream_contact::processor(config),
                        callstream_contact::spec(&self.topics, &app),
                        fast,
                    )
                }
                Role::Scheduler => Running::start(
                    callstream_scheduler::processor(callstream_scheduler::SchedulerConfig::new(
                        &self.topics,
                    )),
                    callstream_scheduler::spec(&self.topics, &app),
                    fast,
                ),
                Role::Dispatcher => {
                    let config = self.dispatcher_config();
                    let runner = callstream_launch_dispatcher::effect_runner(&config)?;
                    Running::start(
                        callstream_launch_dispatcher::processor(&config),
                        callstream_launch_dispatcher::spec(&self.topics, &app),
                        move |c| {
                            fast(c);
                            c.effects = Some(runner);
                            c.transaction_timeout = Duration::from_secs(10);
                        },
                    )
                }
            };
            self.running.insert(*role, running);
        }
        Ok(())
    }

    /// Stops `roles`, as a clean shutdown does.
    pub fn stop(&mut self, roles: &[Role]) -> Result<()> {
        for role in roles {
            if let Some(running) = self.running.remove(role) {
                running.stop()?;
            }
        }
        Ok(())
    }

    /// Stops everything still running.
    pub fn stop_all(mut self) -> Result<()> {
        let roles: Vec<Role> = self.running.keys().copied().collect();
        self.stop(&roles)
    }

    fn dispatcher_config(&self) -> callstream_launch_dispatcher::DispatcherConfig {
        let mut config = callstream_launch_dispatcher::DispatcherConfig::new(
            self.topics.clone(),
            &self.sim_url,
            callstream_sim_voice::config::DEFAULT_ACCOUNT_SID,
            callstream_sim_voice::config::DEFAULT_AUTH_TOKEN,
            &self.callbacks,
        );
        config.twilio.default_from = Some("+15550001000".into());
        let p = &mut config.policy;
        p.request_timeout = Duration::from_millis(2_000);
        p.connect_timeout = Duration::from_millis(500);
        p.settle = Duration::from_millis(500);
        config.calls_per_second = 1_000;
        config
    }

    /// Produces `event` where its producer would, keyed as it would.
    pub async fn produce(&self, event: impl Into<AnyEvent>) -> Result<()> {
        let event = event.into();
        let (topic, key, bytes) = match &event {
            AnyEvent::ContactCommand(c) => ("contact-commands", c.contact_id.clone(), c.encode()?),
            AnyEvent::ControlChange(c) => ("control", c.record_key(), c.encode()?),
            AnyEvent::CallEvent(c) => ("call-events", c.contact_id.clone(), c.encode()?),
            other => bail!("not an input of the calling path: {other:?}"),
        };
        callstream_e2e::produce(&self.producer, &self.topics.name(topic), &key, &bytes).await?;
        Ok(())
    }

    /// Grid and campaign settings: `slot_seconds` slots of `per_slot`
    /// launches, a campaign open all day every day (federal hours still
    /// apply: contacts live where it is about noon).
    pub async fn settings(&self, slot_seconds: i32, per_slot: i32) -> Result<()> {
        let actor = Actor::operator("ops@acme");
        let now = chrono::Utc::now();
        let grid = fixtures::control_change(
            TENANT,
            ControlSetting::GridSettings,
            None,
            ControlValue {
                grid: Some(GridSettings {
                    slot_seconds,
                    launches_per_slot: per_slot,
                    default_time_zone: fixtures::noon_zone(),
                }),
                ..ControlValue::default()
            },
            actor.clone(),
            now,
        );
        let campaign = fixtures::control_change(
            TENANT,
            ControlSetting::CampaignSettings,
            Some(CAMPAIGN),
            fixtures::every_day_campaign(60),
            actor,
            now,
        );
        self.produce(grid).await?;
        self.produce(campaign).await
    }

    /// Sets or lifts the tenant's system pause.
    pub async fn system_pause(&self, on: bool) -> Result<()> {
        let actor = Actor::operator("ops@acme");
        let change = fixtures::switch(
            TENANT,
            ControlSetting::SystemPause,
            Some(on),
            actor,
            chrono::Utc::now(),
        );
        self.produce(change).await
    }

    /// The CRM's launch request for contact `n`, no earlier than `not_before`.
    pub fn launch_request(&self, n: usize, not_before: Option<Timestamp>) -> ContactCommand {
        let contact = contact(n);
        let phone = format!("+1312555{:04}", n % 10_000);
        let mut request =
            fixtures::launch_request(TENANT, &contact, CAMPAIGN, "r1", &phone, chrono::Utc::now());
        request.event_id = fixtures::id(&format!("{}{contact}/r1", self.topics.prefix));
        request.requested_at = not_before;
        if let Some(details) = request.contact.as_mut() {
            details.time_zone = Some(fixtures::noon_zone());
        }
        request
    }

    /// The calls the simulator created, oldest first.
    pub fn creates(&self) -> Vec<CallRecord> {
        let mut all = self.sim.store().all();
        all.sort_by_key(|c| c.created_at);
        all
    }

    /// A `read_committed` reader of `topic` from its start.
    pub fn reader(&self, topic: &str) -> Result<StreamConsumer> {
        reader(&self.topics.name(topic), PARTITIONS)
    }
}

/// The completed status callback of call `sid`, as the gateway writes it.
pub fn completed(sid: &str, contact: &str, launch: Option<uuid::Uuid>) -> CallEvent {
    let mut event = fixtures::call_event(TENANT, contact, sid, "completed", chrono::Utc::now());
    event.launch_id = launch;
    event.campaign_id = Some(CAMPAIGN.into());
    event.answered_by = Some("human".into());
    event.duration_seconds = Some(30);
    event
}

/// The id of contact `n`.
pub fn contact(n: usize) -> String {
    format!("c{n}")
}

/// Reads events of type `E` from `consumer` into `into` until `done` says
/// so, within `within`; other event types on the topic are skipped.
pub async fn read_until<E: Event>(
    consumer: &StreamConsumer,
    into: &mut Vec<E>,
    within: Duration,
    mut done: impl FnMut(&[E]) -> bool,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + within;
    while !done(into) {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            bail!("{} read, not done within {within:?}", into.len());
        }
        if let Ok(message) =
            tokio::time::timeout(left.min(Duration::from_secs(1)), consumer.recv()).await
        {
            if let Ok(event) = E::decode(message?.payload().unwrap_or_default()) {
                into.push(event);
            }
        }
    }
    Ok(())
}

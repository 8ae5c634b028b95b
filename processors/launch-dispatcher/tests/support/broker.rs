//! Shared helpers of the tests against the real broker and the real voice
//! simulator (over HTTP on loopback): topics behind a unique prefix, a
//! simulator and a callback sink on port 0, launch commands in, and the
//! committed `call-launches` read back as a `read_committed` consumer sees
//! them.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use callstream_e2e::{fixtures, unique_name};
use callstream_launch_dispatcher::DispatcherConfig;
use callstream_platform::topics::{
    TopicKind, AUDIT, CALL_LAUNCHES, CONTROL, DEAD_LETTERS, EXCEPTIONS, LAUNCH_COMMANDS,
};
use callstream_platform::{KafkaSettings, Topics};
use callstream_schemas::{CallLaunch, ControlSetting, Event, LaunchCommand, LaunchStatus};
use callstream_sim_voice::config::DEFAULT_ACCOUNT_SID;
use callstream_sim_voice::{Behaviour, SimState, SimVoiceConfig};
use chrono::Utc;
use rdkafka::consumer::StreamConsumer;
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;
use uuid::Uuid;

pub const PARTITIONS: i32 = 4;
pub const TENANT: &str = "acme";

/// Topics behind a fresh prefix, created on the broker.
pub async fn topics(name: &str) -> Result<Topics> {
    let topics = Topics {
        prefix: format!("{}-", unique_name(name)),
        partitions: PARTITIONS,
        ..Topics::default()
    };
    let kinds = [
        (LAUNCH_COMMANDS, TopicKind::Events),
        (CALL_LAUNCHES, TopicKind::Events),
        (EXCEPTIONS, TopicKind::Events),
        (AUDIT, TopicKind::Events),
        (CONTROL, TopicKind::Table),
        (DEAD_LETTERS, TopicKind::DeadLetters),
    ];
    let specs: Vec<_> = kinds.iter().map(|(t, k)| topics.spec(t, *k)).collect();
    let settings = KafkaSettings::new(callstream_e2e::bootstrap_servers(), "ld-test-admin");
    callstream_platform::admin::ensure_topics(&settings, &specs)
        .await
        .context("creating topics")?;
    Ok(topics)
}

/// A running simulator.
pub struct Sim {
    pub state: SimState,
    pub url: String,
}

/// Plays calls out a thousand times faster than real time.
pub fn fast() -> Behaviour {
    Behaviour {
        time_scale: 0.001,
        ..Behaviour::default()
    }
}

pub async fn sim(behaviour: Behaviour) -> Result<Sim> {
    let config = SimVoiceConfig {
        seed: 7,
        behaviour,
        ..SimVoiceConfig::default()
    };
    let state = SimState::new(&config)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(callstream_sim_voice::serve_state(
        state.clone(),
        listener,
        std::future::pending(),
    ));
    Ok(Sim { state, url })
}

/// An HTTP server that answers every status callback `204`, as the
/// gateway would once Kafka has the event.
pub async fn callback_sink() -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let app = axum::Router::new().fallback(|| async { axum::http::StatusCode::NO_CONTENT });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// The dispatcher's configuration for the simulator, with timeouts short
/// enough for tests.
pub fn config(topics: &Topics, sim: &Sim, callbacks: &str) -> DispatcherConfig {
    let mut config = DispatcherConfig::new(
        topics.clone(),
        &sim.url,
        DEFAULT_ACCOUNT_SID,
        callstream_sim_voice::config::DEFAULT_AUTH_TOKEN,
        callbacks,
    );
    config.twilio.default_from = Some("+15550001000".into());
    let p = &mut config.policy;
    p.request_timeout = Duration::from_millis(1_000);
    p.connect_timeout = Duration::from_millis(500);
    p.send_deadline = Duration::from_millis(2_000);
    p.settle = Duration::from_millis(500);
    p.retry.base_delay = Duration::from_millis(100);
    p.retry.max_delay = Duration::from_millis(800);
    config.calls_per_second = 2_000;
    config
}

/// A launch command for launch number `n` of a run.
pub fn command(run: u128, n: u128) -> LaunchCommand {
    fixtures::launch_command(
        TENANT,
        &format!("c-{n}"),
        "enrol",
        Uuid::from_u128((run << 64) | n),
        Uuid::new_v4(),
        &format!("+1555{:07}", n % 10_000_000),
        Utc::now(),
    )
}

pub fn run_id() -> u128 {
    Uuid::new_v4().as_u128() >> 64
}

fn headers(pairs: Vec<(&'static str, String)>) -> OwnedHeaders {
    pairs.iter().fold(OwnedHeaders::new(), |h, (k, v)| {
        h.insert(Header {
            key: k,
            value: Some(v.as_bytes()),
        })
    })
}

pub async fn send_command(
    producer: &FutureProducer,
    topics: &Topics,
    cmd: &LaunchCommand,
) -> Result<()> {
    let topic = topics.name(LAUNCH_COMMANDS);
    let value = cmd.encode()?;
    let mut pairs = cmd.kafka_headers();
    pairs.push(("event-id", cmd.event_id.to_string()));
    // Keyed as the contact processor keys it: by tenant and number.
    let key = callstream_kit::keys::phone_key(&cmd.tenant_id, &cmd.to_number);
    let record = FutureRecord::to(&topic)
        .key(&key)
        .payload(&value)
        .headers(headers(pairs));
    producer
        .send(record, Timeout::After(Duration::from_secs(30)))
        .await
        .map_err(|(e, _)| e)
        .context("producing a launch command")?;
    Ok(())
}

/// Sets `TENANT`'s shadow mode on the control topic.
pub async fn set_shadow(producer: &FutureProducer, topics: &Topics, on: bool) -> Result<()> {
    set_shadow_for(producer, topics, TENANT, on).await
}

/// Sets a tenant's shadow mode on the control topic.
pub async fn set_shadow_for(
    producer: &FutureProducer,
    topics: &Topics,
    tenant: &str,
    on: bool,
) -> Result<()> {
    let actor = callstream_schemas::Actor::system("test");
    let change = fixtures::switch(
        tenant,
        ControlSetting::ShadowMode,
        Some(on),
        actor,
        Utc::now(),
    );
    let topic = topics.name(CONTROL);
    let value = change.encode()?;
    let key = change.record_key();
    producer
        .send(
            FutureRecord::to(&topic).key(&key).payload(&value),
            Timeout::After(Duration::from_secs(30)),
        )
        .await
        .map_err(|(e, _)| e)
        .context("producing a control change")?;
    Ok(())
}

/// The committed `call-launches`, grouped by launch id, in order.
#[derive(Debug, Default)]
pub struct Outcomes {
    pub by_launch: BTreeMap<Uuid, Vec<CallLaunch>>,
}

impl Outcomes {
    pub fn finals(&self) -> impl Iterator<Item = (&Uuid, &CallLaunch)> {
        self.by_launch.iter().filter_map(|(id, all)| {
            all.iter()
                .rev()
                .find(|l| l.status != LaunchStatus::Ambiguous)
                .map(|l| (id, l))
        })
    }

    pub fn finished(&self) -> usize {
        self.finals().count()
    }

    pub fn statuses(&self, launch: &Uuid) -> Vec<LaunchStatus> {
        self.by_launch
            .get(launch)
            .map(|all| all.iter().map(|l| l.status).collect())
            .unwrap_or_default()
    }
}

/// Reads `call-launches` (read_committed) until `done` says so.
pub struct LaunchReader {
    consumer: StreamConsumer,
    pub outcomes: Outcomes,
}

impl LaunchReader {
    pub fn new(topics: &Topics) -> Result<Self> {
        Ok(Self {
            consumer: callstream_e2e::runtime::reader(&topics.name(CALL_LAUNCHES), PARTITIONS)?,
            outcomes: Outcomes::default(),
        })
    }

    /// Reads until `done(outcomes)` or `timeout`; an error on timeout.
    pub async fn until(
        &mut self,
        timeout: Duration,
        done: impl Fn(&Outcomes) -> bool,
    ) -> Result<&Outcomes> {
        let deadline = Instant::now() + timeout;
        while !done(&self.outcomes) {
            if Instant::now() >= deadline {
                bail!(
                    "timed out with {} launches finished: {:?}",
                    self.outcomes.finished(),
                    self.outcomes.by_launch.values().last()
                );
            }
            self.poll(Duration::from_millis(200)).await?;
        }
        Ok(&self.outcomes)
    }

    /// Reads whatever arrives within `window`.
    pub async fn poll(&mut self, window: Duration) -> Result<()> {
        let until = Instant::now() + window;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            match tokio::time::timeout(left, self.consumer.recv()).await {
                Err(_) => return Ok(()),
                Ok(message) => {
                    let message = message.context("reading call-launches")?;
                    let launch = CallLaunch::decode(message.payload().unwrap_or_default())?;
                    self.outcomes
                        .by_launch
                        .entry(launch.launch_id)
                        .or_default()
                        .push(launch);
                }
            }
        }
    }
}

/// The simulator's call sid per launch id (every call it placed).
pub fn sim_calls(sim: &Sim) -> BTreeMap<String, Vec<String>> {
    let mut calls: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for record in sim.state.store().all() {
        let launch = record
            .target
            .as_ref()
            .and_then(|t| t.launch_id.clone())
            .unwrap_or_default();
        calls.entry(launch).or_default().push(record.sid.clone());
    }
    calls
}

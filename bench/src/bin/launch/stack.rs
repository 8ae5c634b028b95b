//! What the launch benchmark runs against, all in this process: fresh
//! topics, the voice simulator (instant calls, no faults) and a callback
//! sink, each on a tokio runtime of its own (threads `ld-sim`, `ld-sink`), and the launch
//! dispatcher on the processor runtime, on a thread of its own, exactly as
//! `callstream process launch-dispatcher` runs it (exactly-once, the real
//! Twilio adapter over HTTP, effects after commit).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use callstream_launch_dispatcher::telemetry::RequestLabels;
use callstream_launch_dispatcher::{
    effect_runner, processor, spec, DispatchMetrics, DispatcherConfig,
};
use callstream_platform::topics::{
    TopicKind, AUDIT, CALL_LAUNCHES, CONTROL, DEAD_LETTERS, EXCEPTIONS, LAUNCH_COMMANDS,
};
use callstream_platform::{KafkaSettings, Topics};
use callstream_runtime::CommitPolicy;
use callstream_sim_voice::config::{DEFAULT_ACCOUNT_SID, DEFAULT_AUTH_TOKEN};
use callstream_sim_voice::{Behaviour, SimState, SimVoiceConfig};

use callstream_bench::kafka::{create_topics, unique_name};
use callstream_bench::processor::{effects_config, RunningProcessor};

/// Thread name prefix of the simulator's runtime.
pub const SIM_THREADS: &str = "ld-sim";
/// Thread name prefix of the callback sink's runtime.
pub const SINK_THREADS: &str = "ld-sink";
/// Name of the dispatcher's event-loop thread.
pub const DISPATCHER_THREAD: &str = "ld-dispatcher";

/// One run's names: the app id and its topics.
pub struct Names {
    pub app: String,
    pub topics: Topics,
}

impl Names {
    pub fn fresh(partitions: i32) -> Self {
        let app = unique_name("bench-ld");
        let topics = Topics {
            partitions,
            ..Topics::with_prefix(format!("{app}-"))
        };
        Self { app, topics }
    }

    /// Creates the dispatcher's topics (its changelogs it makes itself).
    pub fn create(&self, settings: &KafkaSettings) -> Result<()> {
        let name = |logical| self.topics.name(logical);
        let events = [
            name(LAUNCH_COMMANDS),
            name(CALL_LAUNCHES),
            name(EXCEPTIONS),
            name(AUDIT),
        ];
        let p = self.topics.partitions;
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        create_topics(settings, &events, TopicKind::Events, p)?;
        create_topics(settings, &[&name(CONTROL)], TopicKind::Table, p)?;
        create_topics(settings, &[&name(DEAD_LETTERS)], TopicKind::DeadLetters, p)
    }

    /// Every topic a run makes, changelogs included, for cleaning up.
    pub fn all(&self) -> Vec<String> {
        let spec = spec(&self.topics, &self.app);
        let mut all: Vec<String> = [
            LAUNCH_COMMANDS,
            CALL_LAUNCHES,
            EXCEPTIONS,
            AUDIT,
            CONTROL,
            DEAD_LETTERS,
        ]
        .iter()
        .map(|t| self.topics.name(t))
        .collect();
        all.extend(spec.changelog_topics(callstream_launch_dispatcher::STORES));
        all
    }
}

/// Which calls the simulator plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Outcomes {
    /// Every call busy: two status callbacks a call (initiated, busy), the
    /// fewest the dispatcher's subscription allows, so the simulator's
    /// callbacks take as little of the shared CPU as possible.
    Short,
    /// The simulator's default mix (up to four callbacks a call).
    Mix,
}

/// The simulator and the sink, serving.
pub struct Sim {
    pub state: SimState,
    pub url: String,
    pub sink_url: String,
    /// Serve the simulator and the sink for as long as this lives (apart,
    /// so their CPU shows apart).
    _runtimes: [tokio::runtime::Runtime; 2],
}

fn runtime(name: &str, threads: usize) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .thread_name(name)
        .enable_all()
        .build()
        .with_context(|| format!("starting the {name} runtime"))
}

impl Sim {
    pub fn start(outcomes: Outcomes, threads: usize) -> Result<Self> {
        let (sim_runtime, sink_runtime) =
            (runtime(SIM_THREADS, threads)?, runtime(SINK_THREADS, 1)?);
        let mut behaviour = Behaviour {
            // Instant calls: a 60 s call plays out in 60 µs.
            time_scale: 1e-6,
            ..Behaviour::default()
        };
        if outcomes == Outcomes::Short {
            behaviour.weight_human = 0.0;
            behaviour.weight_voicemail = 0.0;
            behaviour.weight_no_answer = 0.0;
            behaviour.weight_failed = 0.0;
            behaviour.weight_busy = 1.0;
        }
        let config = SimVoiceConfig {
            seed: 7,
            behaviour,
            ..SimVoiceConfig::default()
        };
        let state = SimState::new(&config).context("configuring the voice simulator")?;
        let sim = sim_runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let url = format!("http://{}", sim.local_addr()?);
        sim_runtime.spawn(callstream_sim_voice::serve_state(
            state.clone(),
            sim,
            std::future::pending(),
        ));
        let sink = sink_runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let sink_url = format!("http://{}", sink.local_addr()?);
        // Answers every status callback 204, as the gateway would once
        // Kafka has the event.
        let app = axum::Router::new().fallback(|| async { axum::http::StatusCode::NO_CONTENT });
        sink_runtime.spawn(async move { axum::serve(sink, app).await });
        Ok(Self {
            state,
            url,
            sink_url,
            _runtimes: [sim_runtime, sink_runtime],
        })
    }

    /// The most calls the simulator placed for one launch id, and all calls.
    pub fn calls(&self) -> (u64, u64) {
        let stats = self.state.store().stats();
        let max = stats.calls_by_launch.values().copied().max().unwrap_or(0);
        (max, stats.calls_created)
    }

    pub fn callbacks_sent(&self) -> u64 {
        self.state.store().stats().callbacks_sent
    }
}

/// How the dispatcher runs.
#[derive(Debug, Clone, Copy)]
pub struct DispatchSetup {
    pub concurrency: usize,
    pub commit: CommitPolicy,
    /// The dispatcher's `send_deadline`: how long a create may wait here
    /// before it is given up unsent (and tried again later).
    pub send_deadline: Duration,
}

/// Starts the dispatcher on its own thread ([`DISPATCHER_THREAD`]) as
/// `setup` asks, against the simulator and the sink, with no provider-wide
/// cap, its effects the Twilio adapter; returns it with its own metrics
/// (see [`creates`]).
pub fn start_dispatcher(
    settings: &KafkaSettings,
    names: &Names,
    sim: &Sim,
    setup: DispatchSetup,
) -> Result<(RunningProcessor, Arc<DispatchMetrics>)> {
    let mut config = DispatcherConfig::new(
        names.topics.clone(),
        &sim.url,
        DEFAULT_ACCOUNT_SID,
        DEFAULT_AUTH_TOKEN,
        &sim.sink_url,
    );
    config.twilio.default_from = Some("+15550001000".into());
    // The provider-wide cap is a safety net (default 50/s); here it
    // would be all that is measured.
    config.calls_per_second = NonZeroU32::MAX.get();
    config.concurrency = setup.concurrency;
    config.policy.send_deadline = setup.send_deadline;
    config
        .validate()
        .context("the dispatcher's configuration")?;
    let twilio = effect_runner(&config).context("building the Twilio adapter")?;
    let runtime = effects_config(settings, &names.app, twilio, setup.commit);
    let spec = spec(&config.topics, &names.app);
    let dispatcher = RunningProcessor::start(DISPATCHER_THREAD, processor(&config), spec, runtime)?;
    Ok((dispatcher, config.metrics))
}

/// Provider creates so far that ended as `outcome` (`accepted`,
/// `not_sent`: queued here past their send deadline, `transient`, ...).
pub fn creates(dispatch: &DispatchMetrics, outcome: &str) -> u64 {
    dispatch
        .requests
        .get_or_create(&RequestLabels {
            op: "create".into(),
            outcome: outcome.into(),
        })
        .get()
}

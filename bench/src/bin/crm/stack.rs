//! What one CRM measurement runs on: fresh topics behind a unique prefix,
//! the CRM simulator on a loopback port of this process, and the CRM
//! dispatcher on the processor runtime on a thread of its own, exactly as
//! `callstream process crm-dispatcher` runs it.

use std::time::Duration;

use anyhow::{Context, Result};
use callstream_crm_dispatcher::{self as crm, CrmDispatcherConfig, RateLimit};
use callstream_platform::topics::{self, Topics};
use callstream_platform::KafkaSettings;
use callstream_runtime::CommitPolicy;
use callstream_sim_crm::state::RequestStats;
use callstream_sim_crm::{serve_state, CrmBehaviour, CrmState, SimCrmConfig};
use tokio::sync::oneshot;

use callstream_bench::kafka::{create_topics, unique_name, TopicKind};
use callstream_bench::processor::{effects_config, RunningProcessor};

/// The bearer token the simulator accepts and the dispatcher sends.
pub const TOKEN: &str = "pat-na1-callstream-bench";
/// The tenant of every command (one token, so one rate-limit window).
pub const TENANT: &str = "bench";

/// Fresh names for one measurement.
#[derive(Debug, Clone)]
pub struct Names {
    pub app: String,
    pub topics: Topics,
}

impl Names {
    pub fn fresh(label: &str, partitions: i32) -> Self {
        let app = unique_name(&format!("bench-crm-{label}"));
        let topics = Topics {
            prefix: format!("{app}."),
            partitions,
            ..Topics::default()
        };
        Self { app, topics }
    }

    pub fn commands(&self) -> String {
        self.topics.name(topics::CRM_COMMANDS)
    }

    pub fn results(&self) -> String {
        self.topics.name(topics::CRM_RESULTS)
    }

    /// Creates the dispatcher's topics as the design makes them: events
    /// with the run's partitions, dead letters with their retention,
    /// `control` compacted with one partition (as the tests make it).
    pub fn create(&self, settings: &KafkaSettings) -> Result<()> {
        let events = [
            topics::CRM_COMMANDS,
            topics::CRM_RESULTS,
            topics::EXCEPTIONS,
        ]
        .map(|t| self.topics.name(t));
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        let partitions = self.topics.partitions;
        create_topics(settings, &events, TopicKind::Events, partitions)?;
        let dead_letters = self.topics.name(topics::DEAD_LETTERS);
        create_topics(
            settings,
            &[&dead_letters],
            TopicKind::DeadLetters,
            partitions,
        )?;
        create_topics(
            settings,
            &[&self.topics.name(topics::CONTROL)],
            TopicKind::Table,
            1,
        )
    }

    /// Every topic a run with these names creates (the runtime adds the
    /// changelogs), for cleaning up.
    pub fn all_topics(&self) -> Vec<String> {
        let spec = crm::spec(&self.topics, &self.app);
        let mut all: Vec<String> = [
            topics::CRM_COMMANDS,
            topics::CRM_RESULTS,
            topics::EXCEPTIONS,
            topics::DEAD_LETTERS,
            topics::CONTROL,
        ]
        .iter()
        .map(|t| self.topics.name(t))
        .collect();
        all.extend(spec.changelog_topics(crm::state::STORES));
        all
    }
}

/// The simulator, served by `runtime` until dropped.
pub struct Sim {
    pub state: CrmState,
    pub base_url: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Sim {
    /// Starts the simulator with `rate_limit_max` requests per `window_ms`
    /// (0: no limit), no faults and search at once (nothing searches when
    /// nothing fails).
    pub fn start(
        runtime: &tokio::runtime::Runtime,
        rate_limit_max: u32,
        window_ms: u64,
    ) -> Result<Self> {
        let behaviour = CrmBehaviour {
            rate_limit_max,
            rate_limit_window_ms: window_ms,
            ..CrmBehaviour::default().with_instant_search()
        };
        Self::start_with(runtime, behaviour)
    }

    /// Starts the simulator behaving as `behaviour` says.
    pub fn start_with(runtime: &tokio::runtime::Runtime, behaviour: CrmBehaviour) -> Result<Self> {
        let config = SimCrmConfig {
            tokens: vec![TOKEN.into()],
            behaviour,
            ..SimCrmConfig::default()
        };
        let state = CrmState::new(&config).context("configuring the CRM simulator")?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .context("binding the CRM simulator to a loopback port")?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = oneshot::channel::<()>();
        let served = state.clone();
        runtime.spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(error) = serve_state(served, listener, shutdown).await {
                tracing::error!(%error, "the CRM simulator failed");
            }
        });
        Ok(Self {
            state,
            base_url,
            stop: Some(stop),
        })
    }

    pub fn stats(&self) -> RequestStats {
        self.state.request_stats()
    }

    /// Most requests that arrived in any one window of the limit (refused
    /// ones included), over every token.
    pub fn max_requests_in_window(&self) -> u32 {
        self.state.limits().iter().map(|l| l.3).max().unwrap_or(0)
    }

    /// Creates written twice for one operation id (must be 0).
    pub fn duplicate_creates(&self) -> u64 {
        self.state.db().stats().duplicate_creates_total
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The dispatcher's configuration for a run: the product's defaults except
/// the simulator's URL, the limit and the concurrency the run asks for.
pub fn dispatcher_config(
    names: &Names,
    sim: &Sim,
    rate_limit: RateLimit,
    concurrency: usize,
) -> Result<CrmDispatcherConfig> {
    let mut config = CrmDispatcherConfig::new(names.topics.clone(), sim.base_url.clone(), TOKEN);
    config.rate_limit = rate_limit;
    config.concurrency = concurrency;
    config
        .validate()
        .context("the dispatcher's configuration")?;
    Ok(config)
}

/// Starts the dispatcher on its own thread (`crm-dispatcher`), its
/// effects the CRM client, committing every `commit_interval`.
pub fn start_dispatcher(
    settings: &KafkaSettings,
    names: &Names,
    config: &CrmDispatcherConfig,
    commit_interval: Duration,
) -> Result<RunningProcessor> {
    let client = crm::effect_runner(config).context("the CRM client")?;
    let commit = CommitPolicy {
        interval: commit_interval,
        ..CommitPolicy::default()
    };
    let runtime = effects_config(settings, &names.app, client, commit);
    let spec = crm::spec(&names.topics, &names.app);
    Ok(RunningProcessor::start(
        "crm-dispatcher",
        crm::processor(config),
        spec,
        runtime,
    )?)
}

//! `callstream process <name>`: runs one stream processor on the runtime,
//! with `/metrics` (the runtime's metrics and the processor's own, where it
//! keeps any, as one OpenMetrics exposition), `/healthz` (the process
//! answers) and `/readyz` (the runtime has joined its group and restored
//! and is processing every partition it was given) on a small HTTP server.
//!
//! The runtime loop blocks (rdkafka's transaction calls do), so it runs on
//! a blocking thread; the HTTP server and the signal handler stay async.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use callstream_platform::metrics::{encode, merge_expositions, response};
use callstream_platform::{KafkaSettings, Topics};
use callstream_runtime::{Processor, ProcessorSpec, RuntimeConfig, RuntimeMetrics};
use clap::Args;

/// Settings every processor shares.
#[derive(Args, Debug, Clone)]
pub struct ProcessArgs {
    /// Stable id of this instance (a pod ordinal, a host name); with the
    /// processor's name it forms the transactional id that fences a zombie.
    #[arg(long, env = "CALLSTREAM_INSTANCE_ID", default_value = "0")]
    pub instance_id: String,
    /// Where `/metrics`, `/healthz` and `/readyz` are served.
    #[arg(
        long,
        env = "CALLSTREAM_METRICS_ADDR",
        default_value = "127.0.0.1:9400"
    )]
    pub metrics_addr: SocketAddr,
    /// Commit interval in milliseconds.
    #[arg(long, env = "CALLSTREAM_COMMIT_INTERVAL_MS", default_value_t = 100)]
    pub commit_interval_ms: u64,
}

impl ProcessArgs {
    pub fn topics(&self) -> Result<Topics> {
        Topics::from_env().context("reading the topic settings")
    }
}

/// A processor's own metrics in the OpenMetrics text format, served on
/// `/metrics` after the runtime's.
pub(crate) type OwnMetrics = Arc<dyn Fn() -> String + Send + Sync>;

#[derive(Clone)]
struct Health {
    metrics: Arc<RuntimeMetrics>,
    own: Option<OwnMetrics>,
}

impl Health {
    fn exposition(&self) -> String {
        let mut parts = vec![self.metrics.encode()];
        parts.extend(self.own.as_ref().map(|own| own()));
        merge_expositions(&parts)
    }
}

/// The contact processor's counters in a registry of their own (names
/// `callstream_contact_*`), served after the runtime's.
pub(crate) fn contact_metrics() -> (callstream_contact::ContactMetrics, OwnMetrics) {
    let (metrics, registry) = contact_registry();
    (metrics, Arc::new(move || encode(&registry)))
}

pub(crate) fn contact_registry() -> (
    callstream_contact::ContactMetrics,
    prometheus_client::registry::Registry,
) {
    let metrics = callstream_contact::ContactMetrics::default();
    let mut registry = prometheus_client::registry::Registry::with_prefix("callstream");
    metrics.register(&mut registry);
    (metrics, registry)
}

/// Runs `processor` until SIGTERM, serving its metrics (and `own`, the
/// processor's own, if it keeps any) meanwhile.
pub async fn host<P: Processor>(
    processor: P,
    spec: ProcessorSpec,
    args: &ProcessArgs,
    own: Option<OwnMetrics>,
    configure: impl FnOnce(&mut RuntimeConfig),
) -> Result<()> {
    let app_id = spec.app_id.clone();
    let kafka = KafkaSettings::from_env_checked(format!("{app_id}-{}", args.instance_id))
        .context("Kafka client properties from the environment")?;
    let mut config = RuntimeConfig::new(kafka, &app_id, args.instance_id.clone());
    config.replicate_like(&callstream_platform::Topics::from_env().context("topic settings")?);
    config.commit.interval = std::time::Duration::from_millis(args.commit_interval_ms);
    if let Some(registry) = crate::registry::installed() {
        config.value_gate = Some(crate::registry::value_gate(registry)?);
    }
    configure(&mut config);
    let health = Health {
        metrics: config.metrics.clone(),
        own,
    };
    let router = Router::new()
        .route(
            "/metrics",
            get(|State(h): State<Health>| async move { response(h.exposition()) }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(h): State<Health>| async move {
                if h.metrics.is_ready() {
                    (StatusCode::OK, "ready")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "not ready")
                }
            }),
        )
        .with_state(health);
    let listener = tokio::net::TcpListener::bind(args.metrics_addr)
        .await
        .with_context(|| format!("binding the metrics server to {}", args.metrics_addr))?;
    tracing::info!(app = %app_id, addr = %args.metrics_addr, "serving /metrics, /healthz, /readyz");
    let server = tokio::spawn(async move { axum::serve(listener, router).await });

    let shutdown = config.shutdown.clone();
    tokio::spawn(async move {
        crate::signals::shutdown_signal().await;
        shutdown.store(true, Ordering::SeqCst);
    });
    let result =
        tokio::task::spawn_blocking(move || callstream_runtime::run(processor, spec, config))
            .await
            .context("the processor thread panicked")?;
    server.abort();
    result.with_context(|| format!("processor {app_id} stopped with an error"))
}

/// A processor's app id (its consumer group, changelog topics and
/// transactional id) behind the topic prefix, so a prefix namespaces a whole
/// deployment: two runs with different prefixes never share a group, restore
/// each other's state or fence each other. Without a prefix it is the name.
fn app_id(topics: &Topics, name: &str) -> String {
    topics.name(name)
}

/// The processors `callstream process` runs.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum ProcessCommand {
    /// The contact workflow: call outcomes and commands in; schedule
    /// requests, launch commands, CRM commands and exceptions out.
    Contact(ProcessArgs),
    /// The slot-grid scheduler: schedule requests in; allocations and LaunchDue out.
    Scheduler(ProcessArgs),
    /// The launch dispatcher: launch commands in; one call at the voice platform each.
    LaunchDispatcher(ProcessArgs),
    /// The missing-completion detector: launches joined with completions.
    CompletionDetector(ProcessArgs),
    /// The CRM dispatcher: CRM commands applied once each, within the CRM's limits.
    CrmDispatcher(ProcessArgs),
    /// Recovery: each missing completion looked up at the voice platform and replayed.
    Recovery(ProcessArgs),
    /// The notifier: alerts, opened exceptions and dead letters to the channels of each
    /// tenant's routes (chat webhook, signed webhook, email), each message once in its
    /// ledger. Channels come from the file `CALLSTREAM_NOTIFIER_CHANNELS`.
    Notifier(ProcessArgs),
}

impl ProcessCommand {
    /// The processor's name, as its subcommand spells it (the logs' `service`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Contact(_) => "contact",
            Self::Scheduler(_) => "scheduler",
            Self::LaunchDispatcher(_) => "launch-dispatcher",
            Self::CompletionDetector(_) => "completion-detector",
            Self::CrmDispatcher(_) => "crm-dispatcher",
            Self::Recovery(_) => "recovery",
            Self::Notifier(_) => "notifier",
        }
    }
}

/// Runs the chosen processor until SIGTERM.
pub async fn run(command: ProcessCommand) -> Result<()> {
    match command {
        ProcessCommand::Contact(args) => {
            let topics = args.topics()?;
            let config = callstream_contact::ContactConfig::new(&topics);
            let spec =
                callstream_contact::spec(&topics, &app_id(&topics, callstream_contact::APP_ID));
            let (metrics, own) = contact_metrics();
            host(
                callstream_contact::processor_with_metrics(config, metrics),
                spec,
                &args,
                Some(own),
                |_| {},
            )
            .await
        }
        ProcessCommand::Scheduler(args) => {
            let topics = args.topics()?;
            let config = callstream_scheduler::SchedulerConfig::new(&topics);
            let spec = callstream_scheduler::spec(&topics, &app_id(&topics, "scheduler"));
            host(
                callstream_scheduler::processor(config),
                spec,
                &args,
                None,
                |_| {},
            )
            .await
        }
        ProcessCommand::LaunchDispatcher(args) => {
            let config = callstream_launch_dispatcher::DispatcherConfig::from_env()
                .context("reading the launch dispatcher's configuration")?;
            let spec = callstream_launch_dispatcher::spec(
                &config.topics,
                &app_id(&config.topics, callstream_launch_dispatcher::APP_ID),
            );
            let effects = callstream_launch_dispatcher::effect_runner(&config)
                .context("building the voice platform client")?;
            let processor = callstream_launch_dispatcher::processor(&config);
            let metrics = config.metrics.clone();
            let own: OwnMetrics = Arc::new(move || metrics.encode());
            host(processor, spec, &args, Some(own), |runtime| {
                runtime.effects = Some(effects)
            })
            .await
        }
        ProcessCommand::CompletionDetector(args) => {
            let config = callstream_completion_detector::DetectorConfig::from_env()
                .context("reading the detector's configuration")?;
            let topics = args.topics()?;
            let spec = callstream_completion_detector::spec(
                &topics,
                &app_id(&topics, callstream_completion_detector::APP_ID),
            );
            host(
                callstream_completion_detector::processor(config),
                spec,
                &args,
                None,
                |_| {},
            )
            .await
        }
        ProcessCommand::CrmDispatcher(args) => {
            let config = callstream_crm_dispatcher::CrmDispatcherConfig::from_env()
                .context("reading the CRM dispatcher's configuration")?;
            let spec = callstream_crm_dispatcher::spec(
                &config.topics,
                &app_id(&config.topics, callstream_crm_dispatcher::APP_ID),
            );
            let effects = callstream_crm_dispatcher::effect_runner(&config)
                .context("building the CRM client")?;
            let processor = callstream_crm_dispatcher::processor(&config);
            let metrics = config.metrics.clone();
            let own: OwnMetrics = Arc::new(move || metrics.encode());
            host(processor, spec, &args, Some(own), |runtime| {
                runtime.effects = Some(effects)
            })
            .await
        }
        ProcessCommand::Recovery(args) => {
            let config = callstream_recovery::RecoveryConfig::from_env()
                .context("reading recovery's configuration")?;
            let spec = callstream_recovery::spec(
                &config.topics,
                &app_id(&config.topics, callstream_recovery::APP_ID),
            );
            let effects = callstream_recovery::effect_runner(&config)
                .context("building the voice platform client")?;
            let processor = callstream_recovery::processor(config);
            host(processor, spec, &args, None, |runtime| {
                runtime.effects = Some(effects)
            })
            .await
        }
        ProcessCommand::Notifier(args) => {
            let config = callstream_notifier::NotifierConfig::from_env()
                .context("reading the notifier's configuration")?;
            if config.channels.channels.is_empty() {
                tracing::warn!("no channels (CALLSTREAM_NOTIFIER_CHANNELS): nothing will be sent");
            }
            let spec = callstream_notifier::spec(
                &config.topics,
                &app_id(&config.topics, callstream_notifier::APP_ID),
            );
            let effects = callstream_notifier::effect_runner(&config)
                .context("building the notifier's senders")?;
            let metrics = callstream_notifier::NotifierMetrics::new();
            let own_metrics = metrics.clone();
            let own: OwnMetrics = Arc::new(move || own_metrics.encode());
            let (topics, groups, interval) = (
                config.topics.clone(),
                config.lag_groups.clone(),
                config.lag_interval,
            );
            let processor = callstream_notifier::processor(config, metrics);
            host(processor, spec, &args, Some(own), |runtime| {
                runtime.effects = Some(effects);
                // Beside the runtime: each processor's consumer lag, for the lag alert.
                if let Err(error) = callstream_notifier::lag::spawn(
                    runtime.kafka.clone(),
                    &topics,
                    groups,
                    interval,
                    runtime.shutdown.clone(),
                ) {
                    tracing::error!(%error, "the lag sampler did not start; consumer lag is not watched");
                }
            })
            .await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contact_processors_counters_are_served_with_the_runtimes() {
        let (metrics, own) = contact_metrics();
        metrics.decision(
            callstream_contact::DecisionKind::Plan,
            uuid::Uuid::nil(),
            "campaign_entry",
        );
        let health = Health {
            metrics: Arc::new(RuntimeMetrics::new("contact")),
            own: Some(own),
        };
        let text = health.exposition();
        assert!(
            text.contains(
                r#"callstream_contact_decisions_total{kind="plan",reason="campaign_entry"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains("callstream_runtime_records_in_total"));
        assert_eq!(text.matches("# EOF").count(), 1);
        assert!(text.ends_with("# EOF\n"));
    }
}

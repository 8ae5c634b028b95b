//! What the phases share: fresh names and topics, the detector's settings,
//! and a detector instance on its own thread, run exactly as
//! `callstream process completion-detector` runs it.

use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use callstream_bench::kafka::{block_on, unique_name};
use callstream_bench::processor::{instance_config, ProcessorError, RunningProcessor};
use callstream_completion_detector::{processor, spec, DetectorConfig, APP_ID};
use callstream_platform::{admin, topics, KafkaSettings, Topics};
use callstream_runtime::ProcessorSpec;
use rdkafka::consumer::{BaseConsumer, Consumer};

/// Fails fast, with the fix, when no broker answers.
pub fn check_reachable(settings: &KafkaSettings) -> Result<()> {
    let consumer: BaseConsumer = settings
        .base_config()
        .create()
        .context("creating a Kafka client")?;
    consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .map(|_| ())
        .with_context(|| {
            format!(
                "no Kafka broker answers at {} (start the dev stack with `cargo xtask up`, \
                 or set KAFKA_BOOTSTRAP_SERVERS)",
                settings.bootstrap_servers
            )
        })
}

/// The logical topics the detector reads and writes.
const TOPICS: [&str; 9] = [
    topics::CALL_LAUNCHES,
    topics::CALL_EVENTS,
    topics::DELIVERY_PARTIALS,
    topics::CONTROL,
    topics::DEAD_LETTERS,
    topics::COMPLETION_MISSING,
    topics::COMPLETION_RESOLVED,
    topics::EXCEPTIONS,
    topics::ALERTS,
];

/// Fresh names for one measurement, and the window the detector runs with.
#[derive(Debug, Clone)]
pub struct Names {
    pub topics: Topics,
    pub app: String,
}

impl Names {
    pub fn fresh(label: &str, partitions: i32) -> Self {
        let prefix = format!("{}-", unique_name(&format!("bench-det-{label}")));
        let topics = Topics {
            partitions,
            ..Topics::with_prefix(&prefix)
        };
        Self {
            app: format!("{prefix}{APP_ID}"),
            topics,
        }
    }

    pub fn name(&self, logical: &str) -> String {
        self.topics.name(logical)
    }

    pub fn spec(&self) -> ProcessorSpec {
        spec(&self.topics, &self.app)
    }

    /// The changelog topic of `store` (a detector store or the runtime's timers).
    pub fn changelog(&self, store: &str) -> String {
        self.spec().changelog_topic(store)
    }

    /// Every topic a run with these names creates, changelogs included.
    pub fn topic_names(&self) -> Vec<String> {
        let spec = self.spec();
        let mut names: Vec<String> = TOPICS.iter().map(|t| self.name(t)).collect();
        names.extend(spec.changelog_topics(callstream_completion_detector::STORES));
        names
    }

    /// Creates the detector's topics; with `changelogs`, its changelog
    /// topics too (to fill them before the detector starts), as the
    /// runtime would create them.
    pub fn create(&self, settings: &KafkaSettings, changelogs: bool) -> Result<()> {
        let mut specs: Vec<_> = self
            .topics
            .specs()
            .into_iter()
            .filter(|s| TOPICS.iter().any(|t| s.name == self.name(t)))
            .collect();
        if changelogs {
            let spec = self.spec();
            let changelogs = spec.changelog_topics(callstream_completion_detector::STORES);
            specs.extend(changelogs.into_iter().map(|changelog| {
                let mut table = self.topics.spec(&changelog, topics::TopicKind::Table);
                table.name = changelog;
                table
            }));
        }
        let report = block_on(admin::ensure_topics(settings, &specs))?
            .with_context(|| format!("creating the topics of {}", self.app))?;
        if !report.differences.is_empty() {
            bail!(
                "benchmark topics existed with other settings: {:?}",
                report.differences
            );
        }
        Ok(())
    }
}

/// The detector's settings for a run: window W and grace, the rest default.
pub fn detector_config(names: &Names, window_ms: i64, grace_ms: i64) -> DetectorConfig {
    DetectorConfig {
        topics: names.topics.clone(),
        default_window_ms: window_ms,
        default_grace_ms: grace_ms,
        bucket_close_delay_ms: window_ms + grace_ms,
        ..DetectorConfig::default()
    }
}

/// Starts a detector instance on its own thread.
pub fn start_instance(
    settings: &KafkaSettings,
    names: &Names,
    config: DetectorConfig,
) -> Result<RunningProcessor, ProcessorError> {
    RunningProcessor::start(
        "detector",
        processor(config),
        names.spec(),
        instance_config(settings, &names.app),
    )
}

//! What the phases share: fresh names and topics, the detector's settings,
//! and a detector instance on its own thread, run exactly as
//! `callstream process completion-detector` runs it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use callstream_bench::kafka::unique_name;
use callstream_completion_detector::{processor, spec, DetectorConfig, APP_ID};
use callstream_platform::{admin, topics, KafkaSettings, Topics};
use callstream_runtime::{ProcessorSpec, RuntimeConfig, RuntimeError, RuntimeMetrics};
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

fn block_on<F: std::future::Future>(future: F) -> Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a tokio runtime for admin calls")?;
    Ok(runtime.block_on(future))
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
        names.extend(
            spec.all_store_names()
                .iter()
                .map(|s| spec.changelog_topic(s)),
        );
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
            specs.extend(spec.all_store_names().iter().map(|store| {
                let mut table = self.topics.spec(store, topics::TopicKind::Table);
                table.name = spec.changelog_topic(store);
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

/// A detector instance (instance id `0`) on its own thread.
pub struct Instance {
    pub metrics: Arc<RuntimeMetrics>,
    shutdown: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), RuntimeError>>>,
}

impl Instance {
    pub fn start(settings: &KafkaSettings, names: &Names, config: DetectorConfig) -> Result<Self> {
        let kafka = KafkaSettings::new(&settings.bootstrap_servers, format!("{}-0", names.app));
        let runtime = RuntimeConfig::new(kafka, &names.app, "0");
        let metrics = runtime.metrics.clone();
        let shutdown = runtime.shutdown.clone();
        let detector = processor(config);
        let spec = names.spec();
        let thread = std::thread::Builder::new()
            .name("detector".into())
            .spawn(move || callstream_runtime::run(detector, spec, runtime))
            .context("starting the detector thread")?;
        Ok(Self {
            metrics,
            shutdown,
            thread: Some(thread),
        })
    }

    /// Fails if the processor stopped on its own (only an error stops it),
    /// or sent an input to dead letters (a count would never be reached).
    pub fn check(&mut self) -> Result<()> {
        if self.thread.as_ref().is_some_and(JoinHandle::is_finished) {
            self.join()?;
            bail!("the detector stopped during the measurement");
        }
        let dead = self.metrics.dead_letters.get();
        if dead > 0 {
            bail!("the detector sent {dead} inputs to dead letters (see its log)");
        }
        Ok(())
    }

    /// Waits until the detector has handled `records` inputs and the
    /// transaction holding the last of them has committed; returns when
    /// it handled the first one and when that commit returned. The event
    /// loop handles and commits on one thread, so the first commit counted
    /// after the last input is seen handled is that input's commit (or, if
    /// none comes within a while, it had returned before the sample).
    pub fn until_committed(&mut self, records: u64, timeout: Duration) -> Result<Span> {
        const FINAL_COMMIT_WAIT: Duration = Duration::from_secs(2);
        const PROGRESS_EVERY: Duration = Duration::from_secs(5);
        let started = Instant::now();
        let mut first: Option<Instant> = None;
        let mut reached: Option<(Instant, u64)> = None;
        let mut last_progress = Instant::now();
        loop {
            self.check()?;
            // Commits before records: see above.
            let commits = self.metrics.commits.get();
            let handled = self.metrics.records_in.get();
            let now = Instant::now();
            if first.is_none() && handled > 0 {
                first = Some(now);
            }
            if handled >= records {
                let (at, commits_then) = *reached.get_or_insert((now, commits));
                let end = if commits > commits_then {
                    Some(now)
                } else {
                    (now.duration_since(at) > FINAL_COMMIT_WAIT).then_some(at)
                };
                if let Some(end) = end {
                    let first = first.unwrap_or(started);
                    return Ok(Span { first, end });
                }
            }
            if started.elapsed() > timeout {
                bail!("the detector handled {handled} of {records} inputs in {timeout:?}");
            }
            if last_progress.elapsed() >= PROGRESS_EVERY {
                last_progress = Instant::now();
                tracing::info!(handled, commits, "running");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The runtime sample `callstream_runtime_<name>` (see [`sample`]).
    pub fn sample(&self, name: &str) -> Option<f64> {
        sample(&self.metrics.encode(), name)
    }

    /// Mean time of a commit so far, ms.
    pub fn mean_commit_ms(&self) -> Option<f64> {
        let text = self.metrics.encode();
        let sum = sample(&text, "commit_latency_seconds_sum")?;
        let count = sample(&text, "commit_latency_seconds_count")?;
        (count > 0.0).then(|| sum / count * 1000.0)
    }

    /// Stops the processor (its open transaction commits) and waits for it.
    pub fn stop(mut self) -> Result<()> {
        self.shutdown.store(true, Ordering::SeqCst);
        self.join()
    }

    fn join(&mut self) -> Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        thread
            .join()
            .map_err(|_| anyhow!("the detector thread panicked"))?
            .context("the detector failed")
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // On an early return: don't leave a processor running behind the next phase.
        self.shutdown.store(true, Ordering::SeqCst);
        if let Err(error) = self.join() {
            tracing::warn!(%error, "detector stopped with an error");
        }
    }
}

/// First input handled, and the commit of the last.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub first: Instant,
    pub end: Instant,
}

/// The value of runtime sample `callstream_runtime_<name>` in the
/// Prometheus text (a histogram's sum and count are readable only there).
pub fn sample(text: &str, name: &str) -> Option<f64> {
    let full = format!("callstream_runtime_{name}");
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(&full)?;
        let rest = match rest.strip_prefix('{') {
            Some(labelled) => &labelled[labelled.find('}')? + 1..],
            None => rest,
        };
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}

//! One benchmark run's names (app, topics) and a runtime instance on its own
//! thread, running the runtime's own `CountingProcessor` (one state read and
//! write, one output per input) exactly as a service would run a processor.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, bail, Context, Result};
use callstream_platform::KafkaSettings;
use callstream_runtime::testkit::{CountingProcessor, COUNTS_STORE};
use callstream_runtime::{
    CommitPolicy, Guarantee, ProcessorSpec, RuntimeConfig, RuntimeError, RuntimeMetrics,
};

use callstream_bench::kafka::unique_name;

/// Fresh names for one measurement: nothing an earlier run left matters.
#[derive(Debug, Clone)]
pub struct Names {
    pub app: String,
    pub input: String,
    pub output: String,
}

impl Names {
    pub fn fresh(label: &str) -> Self {
        let app = unique_name(&format!("bench-rt-{label}"));
        Self {
            input: format!("{app}-in"),
            output: format!("{app}-out"),
            app,
        }
    }

    pub fn spec(&self) -> ProcessorSpec {
        ProcessorSpec::new(&self.app, format!("{}-dlq", self.app))
            .input(&self.input)
            .store(COUNTS_STORE)
    }

    /// The changelog of the counts store, whose keys are the distinct input keys.
    pub fn counts_changelog(&self) -> String {
        self.spec().changelog_topic(COUNTS_STORE)
    }

    /// Every topic a run with these names creates (inputs, outputs, dead
    /// letters, changelogs), for cleaning up.
    pub fn topics(&self) -> Vec<String> {
        let spec = self.spec();
        let mut topics = vec![
            self.input.clone(),
            self.output.clone(),
            spec.dead_letter_topic.clone(),
        ];
        topics.extend(
            spec.all_store_names()
                .iter()
                .map(|s| spec.changelog_topic(s)),
        );
        topics
    }
}

/// How an instance runs.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    pub guarantee: Guarantee,
    pub commit: CommitPolicy,
}

/// A running runtime instance (always instance id `0`: a restart of the
/// same app is the same instance, as a supervisor would restart it).
pub struct Instance {
    pub metrics: Arc<RuntimeMetrics>,
    shutdown: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), RuntimeError>>>,
}

impl Instance {
    pub fn start(settings: &KafkaSettings, names: &Names, mode: Mode) -> Result<Self> {
        let kafka = KafkaSettings::new(&settings.bootstrap_servers, format!("{}-0", names.app));
        let mut config = RuntimeConfig::new(kafka, &names.app, "0");
        config.guarantee = mode.guarantee;
        config.commit = mode.commit;
        let metrics = config.metrics.clone();
        let shutdown = config.shutdown.clone();
        let processor = CountingProcessor {
            output_topic: names.output.clone(),
        };
        let spec = names.spec();
        let thread = std::thread::Builder::new()
            .name("processor".into())
            .spawn(move || callstream_runtime::run(processor, spec, config))
            .context("starting the processor thread")?;
        Ok(Self {
            metrics,
            shutdown,
            thread: Some(thread),
        })
    }

    /// Fails if the processor has stopped on its own (it only stops on an error).
    pub fn check(&mut self) -> Result<()> {
        if self.thread.as_ref().is_some_and(JoinHandle::is_finished) {
            self.join()?;
            bail!("the processor stopped during the measurement");
        }
        Ok(())
    }

    /// Mean time of a commit so far (changelog writes, offsets, commit), ms.
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
            .map_err(|_| anyhow!("the processor thread panicked"))?
            .context("the processor failed")
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // On an early return: don't leave a processor running behind the next phase.
        self.shutdown.store(true, Ordering::SeqCst);
        if let Err(error) = self.join() {
            tracing::warn!(%error, "processor stopped with an error");
        }
    }
}

/// The value of the runtime sample `callstream_runtime_<name>` in the
/// Prometheus text exposition (as a scraper would read it: the histogram's
/// sum and count are not readable otherwise outside tests).
pub fn sample(text: &str, name: &str) -> Option<f64> {
    let full = format!("callstream_runtime_{name}");
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(&full)?;
        // `name{labels} value` or `name value`; not a longer name with this prefix.
        let rest = match rest.strip_prefix('{') {
            Some(labelled) => &labelled[labelled.find('}')? + 1..],
            None => rest,
        };
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_read_by_exact_name() {
        let text = "# HELP x\n\
            callstream_runtime_restore_seconds_sum{app=\"a\"} 1.5\n\
            callstream_runtime_restore_seconds_count{app=\"a\"} 2\n\
            callstream_runtime_restored_records_total 7\n";
        let cases = [
            ("restore_seconds_sum", Some(1.5)),
            ("restore_seconds_count", Some(2.0)),
            ("restored_records_total", Some(7.0)),
            ("restore_seconds", None),
            ("missing", None),
        ];
        for (name, expected) in cases {
            assert_eq!(sample(text, name), expected, "{name}");
        }
    }

    #[test]
    fn runtime_metrics_expose_the_restore_histogram() {
        let metrics = callstream_runtime::RuntimeMetrics::new("app");
        metrics.restore_seconds.observe(0.25);
        metrics.restore_seconds.observe(0.5);
        let text = metrics.encode();
        assert_eq!(sample(&text, "restore_seconds_sum"), Some(0.75));
        assert_eq!(sample(&text, "restore_seconds_count"), Some(2.0));
    }
}

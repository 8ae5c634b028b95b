//! A processor run in-process on its own thread, exactly as
//! `callstream process NAME` runs it: what the benchmarks that drive one
//! service's processor share. They start it with their own processor,
//! spec and runtime settings; [`RunningProcessor`] checks that it still
//! runs, waits for the commit of the N-th input, reads the runtime's
//! samples, and stops it, also on an early return.
//!
//! The label a benchmark starts one with names the processor in the
//! thread's name and in every message (`the detector failed`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use callstream_platform::KafkaSettings;
use callstream_runtime::{
    CommitPolicy, EffectRunner, Processor, ProcessorSpec, RuntimeConfig, RuntimeError,
    RuntimeMetrics,
};

/// The runtime settings of instance `0` of `app` against the brokers of
/// `settings`, to adjust (guarantee, commit policy, effects) before
/// [`RunningProcessor::start`]. Always instance `0`: a restart of the same
/// app is the same instance, as a supervisor would restart it.
pub fn instance_config(settings: &KafkaSettings, app: &str) -> RuntimeConfig {
    let kafka = KafkaSettings::new(&settings.bootstrap_servers, format!("{app}-0"));
    RuntimeConfig::new(kafka, app, "0")
}

/// [`instance_config`] for a processor with effects (the dispatchers):
/// its effect runner, run after each commit, and its commit policy.
pub fn effects_config(
    settings: &KafkaSettings,
    app: &str,
    effects: EffectRunner,
    commit: CommitPolicy,
) -> RuntimeConfig {
    let mut config = instance_config(settings, app);
    config.effects = Some(effects);
    config.commit = commit;
    config
}

/// Why a processor is not running on.
#[derive(Debug, thiserror::Error)]
pub enum ProcessorError {
    /// Its thread could not be started.
    #[error("starting the {label} thread")]
    Spawn {
        label: &'static str,
        source: std::io::Error,
    },
    /// It panicked.
    #[error("the {label} thread panicked")]
    Panicked { label: &'static str },
    /// It returned an error (boxed: a runtime error is large, and every
    /// `Result` of this type would carry its size).
    #[error("the {label} failed")]
    Failed {
        label: &'static str,
        source: Box<RuntimeError>,
    },
    /// It returned without being asked to stop (it only does on an error,
    /// so a measurement that goes on would wait for nothing).
    #[error("the {label} stopped during the measurement")]
    StoppedEarly { label: &'static str },
    /// It sent records to dead letters, so a count of records handled that
    /// a measurement waits for may never be reached.
    #[error("the {label} sent {records} records to dead letters (see its log)")]
    DeadLetters { label: &'static str, records: u64 },
    /// It had not handled all the records waited for in time.
    #[error("the {label} handled {handled} of {records} inputs in {timeout:?}")]
    TimedOut {
        label: &'static str,
        handled: u64,
        records: u64,
        timeout: Duration,
    },
}

/// A processor on its own thread. Dropping it stops it and waits, so an
/// early return does not leave a processor running behind the next phase.
pub struct RunningProcessor {
    label: &'static str,
    metrics: Arc<RuntimeMetrics>,
    shutdown: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), RuntimeError>>>,
}

impl RunningProcessor {
    /// Runs `processor` with `spec` and `config` on a thread named `label`.
    pub fn start<P: Processor>(
        label: &'static str,
        processor: P,
        spec: ProcessorSpec,
        config: RuntimeConfig,
    ) -> Result<Self, ProcessorError> {
        let metrics = config.metrics.clone();
        let shutdown = config.shutdown.clone();
        let thread = std::thread::Builder::new()
            .name(label.into())
            .spawn(move || callstream_runtime::run(processor, spec, config))
            .map_err(|source| ProcessorError::Spawn { label, source })?;
        Ok(Self {
            label,
            metrics,
            shutdown,
            thread: Some(thread),
        })
    }

    /// The runtime's metrics of this processor, live.
    pub fn metrics(&self) -> &Arc<RuntimeMetrics> {
        &self.metrics
    }

    /// Fails if the processor has stopped on its own (it only stops on an
    /// error): with that error, or [`ProcessorError::StoppedEarly`].
    pub fn ensure_running(&mut self) -> Result<(), ProcessorError> {
        if self.thread.as_ref().is_some_and(JoinHandle::is_finished) {
            self.join()?;
            return Err(ProcessorError::StoppedEarly { label: self.label });
        }
        Ok(())
    }

    /// [`ensure_running`](Self::ensure_running), and fails too once the
    /// processor has sent a record to dead letters, for a benchmark that
    /// waits for every record to be handled.
    pub fn ensure_healthy(&mut self) -> Result<(), ProcessorError> {
        self.ensure_running()?;
        let records = self.metrics.dead_letters.get();
        if records > 0 {
            return Err(ProcessorError::DeadLetters {
                label: self.label,
                records,
            });
        }
        Ok(())
    }

    /// Waits until the processor has handled `records` inputs and the
    /// commit holding the last of them has returned, sampling its metrics
    /// every millisecond; fails as [`ensure_healthy`](Self::ensure_healthy)
    /// does, or after `timeout`. The event loop handles and commits on one
    /// thread, so the first commit counted after the last input is seen
    /// handled is that input's commit; if none comes within a while, it had
    /// returned before the sample, and that moment (at most one sample
    /// late) is the end.
    pub fn until_committed(
        &mut self,
        records: u64,
        timeout: Duration,
    ) -> Result<Span, ProcessorError> {
        // How long to wait for the commit of the last input before
        // concluding it had returned before the last input was seen handled.
        const FINAL_COMMIT_WAIT: Duration = Duration::from_secs(2);
        const PROGRESS_EVERY: Duration = Duration::from_secs(5);
        let started = Instant::now();
        let mut first: Option<Instant> = None;
        let mut reached: Option<(Instant, u64)> = None;
        let mut last_progress = Instant::now();
        loop {
            self.ensure_healthy()?;
            // Commits before records: a commit counted after the last
            // input is seen handled then surely came after it.
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
                return Err(ProcessorError::TimedOut {
                    label: self.label,
                    handled,
                    records,
                    timeout,
                });
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

    /// Mean time of a commit so far (changelog writes, offsets, commit), ms.
    pub fn mean_commit_ms(&self) -> Option<f64> {
        let text = self.metrics.encode();
        let sum = sample(&text, "commit_latency_seconds_sum")?;
        let count = sample(&text, "commit_latency_seconds_count")?;
        (count > 0.0).then(|| sum / count * 1000.0)
    }

    /// Stops the processor (its open transaction commits) and waits for it.
    pub fn stop(mut self) -> Result<(), ProcessorError> {
        self.shutdown.store(true, Ordering::SeqCst);
        self.join()
    }

    fn join(&mut self) -> Result<(), ProcessorError> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        let label = self.label;
        thread
            .join()
            .map_err(|_| ProcessorError::Panicked { label })?
            .map_err(|source| ProcessorError::Failed {
                label,
                source: Box::new(source),
            })
    }
}

impl Drop for RunningProcessor {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        if let Err(error) = self.join() {
            // As an error value, so the log shows its cause too.
            let error: &(dyn std::error::Error + 'static) = &error;
            tracing::warn!(error, "{} stopped with an error", self.label);
        }
    }
}

/// When a processor handled the first input of those waited for, and when
/// the commit holding the last of them returned.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub first: Instant,
    pub end: Instant,
}

/// The value of the runtime sample `callstream_runtime_<name>` in the
/// Prometheus text exposition (as a scraper would read it: a histogram's
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
    use std::error::Error as _;

    #[test]
    fn effects_config_is_instance_zero_with_the_effects_and_commit_policy() {
        struct Nothing;
        impl callstream_runtime::EffectHandler for Nothing {
            fn call(
                &self,
                _request: callstream_runtime::EffectRequest,
            ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<u8>> + Send>> {
                Box::pin(async { Vec::new() })
            }
        }
        let settings = KafkaSettings::new("localhost:9092", "ignored");
        let effects = EffectRunner {
            handler: Arc::new(Nothing),
            concurrency: 3,
        };
        let commit = CommitPolicy {
            interval: Duration::from_millis(250),
            max_records: 7,
        };
        let config = effects_config(&settings, "bench-x", effects, commit);
        assert_eq!(config.kafka.bootstrap_servers, "localhost:9092");
        assert_eq!(config.kafka.client_id, "bench-x-0");
        assert_eq!(config.instance_id, "0");
        assert_eq!(config.effects.map(|e| e.concurrency), Some(3));
        assert_eq!(config.commit.interval, Duration::from_millis(250));
        assert_eq!(config.commit.max_records, 7);
    }

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
        let metrics = RuntimeMetrics::new("app");
        metrics.restore_seconds.observe(0.25);
        metrics.restore_seconds.observe(0.5);
        let text = metrics.encode();
        assert_eq!(sample(&text, "restore_seconds_sum"), Some(0.75));
        assert_eq!(sample(&text, "restore_seconds_count"), Some(2.0));
    }

    #[test]
    fn errors_name_the_processor_and_keep_the_cause() {
        let failed = ProcessorError::Failed {
            label: "detector",
            source: Box::new(RuntimeError::Setup {
                app: "a".into(),
                reason: "no topic".into(),
            }),
        };
        assert_eq!(failed.to_string(), "the detector failed");
        let cause = failed.source().map(ToString::to_string);
        assert_eq!(cause.as_deref(), Some("refusing to start a: no topic"));
        let stopped = ProcessorError::StoppedEarly { label: "scheduler" };
        assert_eq!(
            stopped.to_string(),
            "the scheduler stopped during the measurement"
        );
    }
}

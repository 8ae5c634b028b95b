//! Prometheus metrics of one runtime instance, and its readiness. `encode`
//! renders them in the OpenMetrics text format for a `/metrics` endpoint
//! (serve it with `callstream_platform::metrics::response`).
//!
//! Readiness (`ready`, also a gauge so a dashboard sees it): 1 once the
//! consumer has joined its group and every assigned partition is restored
//! and processing; 0 before that, while partitions are restored after a
//! rebalance, and after the engine has stopped. A `/readyz` reads
//! [`RuntimeMetrics::is_ready`].

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PartitionLabels {
    pub topic: String,
    pub partition: i32,
}

/// Which processor handler failed (`process`, `on_timer`, `on_effect`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HandlerLabels {
    pub handler: &'static str,
}

#[derive(Debug)]
pub struct RuntimeMetrics {
    pub registry: Registry,
    pub records_in: Counter,
    pub records_out: Counter,
    pub dead_letters: Counter,
    /// Processor errors by handler; each one is also a dead letter.
    pub handler_failures: Family<HandlerLabels, Counter>,
    pub commits: Counter,
    pub aborts: Counter,
    pub commit_latency_seconds: Histogram,
    pub restored_records: Counter,
    pub restore_seconds: Histogram,
    pub open_timers: Gauge,
    pub timers_fired: Counter,
    pub consumer_lag: Family<PartitionLabels, Gauge>,
    /// Input partitions whose tasks are installed (restored, processing).
    pub assigned_partitions: Gauge,
    /// Times the cluster refused this instance's clients after losing their state (a fenced
    /// static member, a lost transaction) and the runtime replaced them in-process (see `run`).
    pub client_replacements: Counter,
    /// 1 when joined, restored and processing (see the module's header).
    pub ready: Gauge,
}

impl RuntimeMetrics {
    pub fn new(app_id: &str) -> Self {
        let mut registry = Registry::with_prefix_and_labels(
            "callstream_runtime",
            [("app".into(), app_id.to_string().into())].into_iter(),
        );
        let metrics = Self {
            records_in: Counter::default(),
            records_out: Counter::default(),
            dead_letters: Counter::default(),
            handler_failures: Family::default(),
            commits: Counter::default(),
            aborts: Counter::default(),
            commit_latency_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 14)),
            restored_records: Counter::default(),
            restore_seconds: Histogram::new(exponential_buckets(0.01, 2.0, 14)),
            open_timers: Gauge::default(),
            timers_fired: Counter::default(),
            consumer_lag: Family::default(),
            assigned_partitions: Gauge::default(),
            client_replacements: Counter::default(),
            ready: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register(
            "records_in",
            "Input records handled",
            metrics.records_in.clone(),
        );
        registry.register(
            "records_out",
            "Records produced by processors",
            metrics.records_out.clone(),
        );
        registry.register(
            "dead_letters",
            "Records sent to the dead-letter topic",
            metrics.dead_letters.clone(),
        );
        registry.register(
            "handler_failures",
            "Processor errors (records, timers, effect results), each dead-lettered",
            metrics.handler_failures.clone(),
        );
        registry.register("commits", "Transactions committed", metrics.commits.clone());
        registry.register("aborts", "Transactions aborted", metrics.aborts.clone());
        registry.register(
            "commit_latency_seconds",
            "Time to commit a transaction (changelog, offsets, commit)",
            metrics.commit_latency_seconds.clone(),
        );
        registry.register(
            "restored_records",
            "Changelog records restored",
            metrics.restored_records.clone(),
        );
        registry.register(
            "restore_seconds",
            "Time to restore assigned partitions",
            metrics.restore_seconds.clone(),
        );
        registry.register(
            "open_timers",
            "Timers set on assigned partitions",
            metrics.open_timers.clone(),
        );
        registry.register("timers_fired", "Timers fired", metrics.timers_fired.clone());
        registry.register(
            "consumer_lag",
            "Records behind the end of each input partition",
            metrics.consumer_lag.clone(),
        );
        registry.register(
            "assigned_partitions",
            "Input partitions restored and processing on this instance",
            metrics.assigned_partitions.clone(),
        );
        registry.register(
            "client_replacements",
            "Times the cluster refused this instance's clients after losing their state and they were replaced in-process",
            metrics.client_replacements.clone(),
        );
        registry.register(
            "ready",
            "1 once the group is joined and every assigned partition is restored and processing",
            metrics.ready.clone(),
        );
        // Every handler's series exists from the start at 0, so a rate over
        // it works before the first failure.
        for handler in ["process", "on_timer", "on_effect"] {
            drop(
                metrics
                    .handler_failures
                    .get_or_create(&HandlerLabels { handler }),
            );
        }
        Self {
            registry,
            ..metrics
        }
    }

    /// Whether the instance is joined, restored and processing.
    pub fn is_ready(&self) -> bool {
        self.ready.get() == 1
    }

    pub(crate) fn set_ready(&self, ready: bool) {
        self.ready.set(i64::from(ready));
    }

    /// Forgets the lag of partitions this instance no longer consumes, so a
    /// partition that moved away does not report its last lag for ever.
    pub(crate) fn forget_lag(&self, topic: &str, partition: i32) {
        self.consumer_lag.remove(&PartitionLabels {
            topic: topic.to_owned(),
            partition,
        });
    }

    /// The metrics in the OpenMetrics text format (ends in `# EOF`).
    pub fn encode(&self) -> String {
        callstream_platform::metrics::encode(&self.registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_every_metric_with_the_app_label() {
        let metrics = RuntimeMetrics::new("contact");
        metrics.records_in.inc_by(3);
        metrics.commit_latency_seconds.observe(0.004);
        metrics
            .consumer_lag
            .get_or_create(&PartitionLabels {
                topic: "call-events".into(),
                partition: 2,
            })
            .set(17);
        let text = metrics.encode();
        for line in [
            r#"callstream_runtime_records_in_total{app="contact"} 3"#,
            r#"callstream_runtime_consumer_lag{app="contact",topic="call-events",partition="2"} 17"#,
            r#"callstream_runtime_commit_latency_seconds_count{app="contact"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in:\n{text}");
        }
        for name in [
            "aborts",
            "restore_seconds",
            "open_timers",
            "dead_letters",
            "records_out",
            "handler_failures",
        ] {
            assert!(
                text.contains(&format!("callstream_runtime_{name}")),
                "missing {name}"
            );
        }
    }
}

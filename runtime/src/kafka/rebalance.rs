//! The consumer context: rebalance callbacks hand partitions to the core
//! (commit before they leave, restore before they are processed), and the
//! statistics callback feeds the consumer-lag metric.

use std::sync::{Arc, Mutex};

use rdkafka::consumer::{BaseConsumer, ConsumerContext, Rebalance};
use rdkafka::{ClientContext, Statistics};
use tracing::warn;

use super::core::Core;
use crate::metrics::{PartitionLabels, RuntimeMetrics};

pub(crate) struct EngineContext {
    core: Arc<Mutex<Core>>,
    metrics: Arc<RuntimeMetrics>,
}

impl EngineContext {
    pub fn new(core: Arc<Mutex<Core>>, metrics: Arc<RuntimeMetrics>) -> Self {
        Self { core, metrics }
    }

    fn with_core(&self, f: impl FnOnce(&mut Core)) {
        match self.core.lock() {
            Ok(mut core) => f(&mut core),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }
}

impl ClientContext for EngineContext {
    fn stats(&self, statistics: Statistics) {
        for (topic, stats) in &statistics.topics {
            for (partition, p) in &stats.partitions {
                // -1 is librdkafka's internal UA partition.
                if *partition < 0 {
                    continue;
                }
                if p.consumer_lag >= 0 {
                    self.metrics
                        .consumer_lag
                        .get_or_create(&PartitionLabels {
                            topic: topic.clone(),
                            partition: *partition,
                        })
                        .set(p.consumer_lag);
                } else {
                    // A lag of -1: not consumed here (any more), so no series.
                    self.metrics.forget_lag(topic, *partition);
                }
            }
        }
        // A steady group with nothing for us still counts as joined: an
        // instance beyond the partition count is ready, as a standby.
        if statistics
            .cgrp
            .as_ref()
            .is_some_and(|g| g.state == "up" && g.join_state == "steady")
        {
            self.with_core(Core::joined);
        }
    }
}

impl ConsumerContext for EngineContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Revoke(revoked) => self.with_core(|core| core.on_revoke(consumer, revoked)),
            Rebalance::Error(error) => warn!(%error, "rebalance error"),
            Rebalance::Assign(_) => {}
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(assigned) = rebalance {
            self.with_core(|core| core.on_assign(consumer, assigned));
        }
    }
}

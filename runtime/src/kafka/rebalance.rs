//! The consumer context: rebalance callbacks hand partitions to the core
//! (commit before they leave, restore before they are processed), and the
//! statistics callback feeds the consumer-lag metric and warns of an input
//! partition that stopped moving with records after it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, ConsumerContext, Rebalance};
use rdkafka::{ClientContext, Statistics};
use tracing::warn;

use super::core::Core;
use crate::metrics::{PartitionLabels, RuntimeMetrics};

/// How long an assigned input partition may sit still with records after it before the
/// runtime says so. Far above a transaction's life, so an open transaction (whose records a
/// `read_committed` consumer may not read yet) never looks like a stall.
const STALL_WARNING: Duration = Duration::from_secs(60);

/// Where an assigned input partition's consumer stood, and since when.
struct Position {
    app_offset: i64,
    since: Instant,
    warned: bool,
}

pub(crate) struct EngineContext {
    core: Arc<Mutex<Core>>,
    metrics: Arc<RuntimeMetrics>,
    positions: Mutex<HashMap<(String, i32), Position>>,
}

impl EngineContext {
    pub fn new(core: Arc<Mutex<Core>>, metrics: Arc<RuntimeMetrics>) -> Self {
        Self {
            core,
            metrics,
            positions: Mutex::default(),
        }
    }

    /// Warns once of a partition this consumer should be reading, with records after its
    /// position, that has not moved for [`STALL_WARNING`]: with librdkafka's own account
    /// of it (fetch state, last stable offset), which tells a paused or stuck fetch from a
    /// transaction nobody ends.
    fn watch_for_stalls(&self, statistics: &Statistics) {
        let mut positions = match self.positions.lock() {
            Ok(positions) => positions,
            Err(poisoned) => poisoned.into_inner(),
        };
        let now = Instant::now();
        for (topic, stats) in &statistics.topics {
            for (partition, p) in &stats.partitions {
                let key = (topic.clone(), *partition);
                let read_to = p.app_offset.max(p.committed_offset);
                if *partition < 0 || !p.desired || p.hi_offset <= read_to.max(0) {
                    positions.remove(&key);
                    continue;
                }
                let position = positions.entry(key).or_insert(Position {
                    app_offset: p.app_offset,
                    since: now,
                    warned: false,
                });
                if position.app_offset != p.app_offset {
                    *position = Position {
                        app_offset: p.app_offset,
                        since: now,
                        warned: false,
                    };
                } else if !position.warned && now - position.since >= STALL_WARNING {
                    position.warned = true;
                    warn!(
                        topic = %topic,
                        partition,
                        fetch_state = %p.fetch_state,
                        app_offset = p.app_offset,
                        committed_offset = p.committed_offset,
                        last_stable_offset = p.ls_offset,
                        high_watermark = p.hi_offset,
                        fetch_queue = p.fetchq_cnt,
                        still_s = STALL_WARNING.as_secs(),
                        "an input partition has not moved with records after it"
                    );
                }
            }
        }
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
        self.watch_for_stalls(&statistics);
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

//! Lag from event commit to row visible, at a steady rate.
//!
//! With the live projections running and caught up, events are produced at
//! `rate` per second (the services' producer settings: `acks=all`,
//! idempotent, not transactional, so an event is committed, and readable
//! by `read_committed` consumers, when the broker acknowledges it). Each
//! acknowledgement's time is kept by topic, partition and offset; a poller
//! reads `projection_offsets` every few ms, and an event is visible once
//! every live view reading its topic stored a next offset past it (rows
//! and offsets commit in one transaction). Lag = first poll that saw it
//! visible − its acknowledgement, so it is late by at most one poll period.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callstream_bench::report::Summary;
use callstream_platform::{KafkaSettings, Topics};
use callstream_schemas::AnyEvent;
use rdkafka::producer::{FutureProducer, FutureRecord};
use sqlx::PgPool;
use tokio::runtime::Runtime;
use tracing::{info, warn};

use crate::live::Live;
use crate::workload::route;
use callstream_bench::db::visible;

/// The paced load.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub rate_per_s: u64,
    pub poll: Duration,
}

/// What the lag run found.
#[derive(Debug, Clone)]
pub struct Lag {
    pub summary: Summary,
    /// Events produced per second, as achieved.
    pub rate_per_s: f64,
}

/// One acknowledged event: where it is and when the broker had it.
type Ack = ((String, i32), i64, Instant);

/// How long after the last event to wait for it to become visible.
const SETTLE: Duration = Duration::from_secs(60);

/// Produces `warmup` then `events` at the pace, measuring the lag of
/// `events`; `live` must be running. The warm-up (not measured) waits
/// until the projections have applied it, so their start-up (partition
/// assignment, first fetches) is not in the numbers.
#[allow(clippy::too_many_arguments)]
pub fn measure(
    runtime: &Runtime,
    settings: &KafkaSettings,
    topics: &Topics,
    pool: &PgPool,
    keys: &[String],
    live: &Live,
    warmup: &[AnyEvent],
    events: &[AnyEvent],
    pace: Pace,
) -> Result<Lag> {
    let warmup = encode(topics, warmup)?;
    let encoded = encode(topics, events)?;
    let producer: FutureProducer = settings
        .producer_config()
        .create()
        .context("creating the producer")?;
    let acks: Arc<Mutex<Vec<Ack>>> = Arc::default();
    let failed: Arc<Mutex<Option<String>>> = Arc::default();
    runtime.block_on(async {
        let before = live.records();
        send_paced(&producer, &warmup, pace.rate_per_s, None, &failed).await?;
        let deadline = Instant::now() + SETTLE;
        while live.records() < before + warmup.len() as u64 {
            if Instant::now() > deadline {
                bail!("the projections did not apply the warm-up within {SETTLE:?}");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let poller = tokio::spawn(poll_visibility(
            pool.clone(),
            keys.to_vec(),
            acks.clone(),
            encoded.len(),
            pace.poll,
        ));
        let started = Instant::now();
        send_paced(&producer, &encoded, pace.rate_per_s, Some(&acks), &failed).await?;
        let produced_for = started.elapsed();
        info!(
            sent = encoded.len(),
            seconds = produced_for.as_secs_f64(),
            "produced; waiting for the last to show"
        );
        let lags = poller.await.context("the visibility poller failed")??;
        if let Some(error) = failed.lock().ok().and_then(|f| f.clone()) {
            bail!("an event was not acknowledged: {error}");
        }
        let summary = Summary::of(lags).context("no lag samples")?;
        Ok(Lag {
            summary,
            rate_per_s: encoded.len() as f64 / produced_for.as_secs_f64(),
        })
    })
}

/// `(topic, key, bytes)` of each event.
fn encode(topics: &Topics, events: &[AnyEvent]) -> Result<Vec<(String, String, Vec<u8>)>> {
    events
        .iter()
        .map(|event| {
            let (topic, key) = route(topics, event);
            Ok((topic, key, event.encode().context("encoding an event")?))
        })
        .collect()
}

/// Sends `records` at `rate` per second (in 5 ms steps); with `acks`, notes
/// each acknowledgement's coordinates and time there.
async fn send_paced(
    producer: &FutureProducer,
    records: &[(String, String, Vec<u8>)],
    rate: u64,
    acks: Option<&Arc<Mutex<Vec<Ack>>>>,
    failed: &Arc<Mutex<Option<String>>>,
) -> Result<()> {
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    let mut sent = 0usize;
    while sent < records.len() {
        tick.tick().await;
        let due = (started.elapsed().as_secs_f64() * rate as f64) as usize;
        while sent < due.min(records.len()) {
            let (topic, key, bytes) = &records[sent];
            let record = FutureRecord::to(topic).key(key).payload(bytes);
            let delivery = producer
                .send_result(record)
                .map_err(|(error, _)| error)
                .context("queueing an event")?;
            let (acks, failed, topic) = (acks.cloned(), failed.clone(), topic.clone());
            // A task per event, so its acknowledgement time is taken when
            // the broker's answer arrives, not when a busy loop gets to it.
            tokio::spawn(async move {
                match delivery.await {
                    Ok(Ok(d)) => {
                        let at = Instant::now();
                        if let Some(Ok(mut acks)) = acks.as_ref().map(|a| a.lock()) {
                            acks.push(((topic, d.partition), d.offset, at));
                        }
                    }
                    Ok(Err((error, _))) => note(&failed, error.to_string()),
                    Err(_) => note(&failed, "the producer went away".into()),
                }
            });
            sent += 1;
        }
    }
    Ok(())
}

fn note(failed: &Mutex<Option<String>>, error: String) {
    if let Ok(mut first) = failed.lock() {
        first.get_or_insert(error);
    }
}

/// Polls `projection_offsets` until `expected` acknowledged events were
/// seen visible; returns their lags in ms.
async fn poll_visibility(
    pool: PgPool,
    keys: Vec<String>,
    acks: Arc<Mutex<Vec<Ack>>>,
    expected: usize,
    period: Duration,
) -> Result<Vec<f64>> {
    let mut waiting: HashMap<(String, i32), BTreeMap<i64, Instant>> = HashMap::new();
    let mut lags = Vec::with_capacity(expected);
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_seen = Instant::now();
    while lags.len() < expected {
        tick.tick().await;
        // Acknowledgements first: an event acknowledged after this drain
        // and visible in this poll is counted at the next one (≤ one period late).
        let new: Vec<Ack> = acks
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default();
        for (partition, offset, at) in new {
            waiting.entry(partition).or_default().insert(offset, at);
        }
        let stored = match visible(&pool, &keys).await {
            Ok(stored) => stored,
            Err(error) => {
                warn!(%error, "reading projection_offsets failed; polling on");
                continue;
            }
        };
        let now = Instant::now();
        let before = lags.len();
        for (partition, offsets) in &mut waiting {
            let Some(next) = stored.get(partition) else {
                continue;
            };
            // Everything below the stored next offset is visible.
            let still = offsets.split_off(next);
            for at in offsets.values() {
                lags.push(now.saturating_duration_since(*at).as_secs_f64() * 1000.0);
            }
            *offsets = still;
        }
        if lags.len() > before {
            last_seen = now;
        } else if now.duration_since(last_seen) > SETTLE {
            bail!(
                "{} of {expected} events still not visible {SETTLE:?} after the last one showed",
                expected - lags.len()
            );
        }
    }
    Ok(lags)
}

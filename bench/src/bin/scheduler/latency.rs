//! Request-to-allocation latency at a steady rate: a plan request's produce
//! call to its `allocated` event visible to a `read_committed` reader.
//!
//! Requests come from a producer with the services' own settings
//! (`acks=all`, idempotent, `linger.ms=2`), paced evenly. Each measured
//! request carries its send time (µs) in the high half of its event id;
//! the scheduler names that id as the decision's causation id, so the
//! reader needs no shared table. Until the scheduler has joined and
//! restored, warm-up requests (high half 0) go out and are not measured.
//! Every measured request must be allocated; a missing one fails the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use callstream_bench::kafka::{committed_reader, now_micros};
use callstream_bench::report::Summary;
use callstream_platform::{topics, KafkaSettings};
use callstream_schemas::{Event, ScheduleEvent, ScheduleEventKind};
use chrono::{DateTime, Utc};
use rdkafka::consumer::BaseConsumer;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use tracing::{info, warn};
use uuid::Uuid;

use crate::stack::{start_instance, Names, Workload};

#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub rate_per_s: u64,
    pub duration: Duration,
}

#[derive(Debug, Clone, Copy)]
pub struct Latency {
    pub summary: Summary,
    pub mean_commit_ms: Option<f64>,
}

/// How long the stragglers may take after the last measured request.
const TAIL: Duration = Duration::from_secs(30);
const WARM_UP_LIMIT: Duration = Duration::from_secs(60);

pub fn measure(
    settings: &KafkaSettings,
    names: &Names,
    workload: &Workload,
    pace: Pace,
) -> Result<Latency> {
    names.create(settings, workload)?;
    let partitions = names.topics.partitions;
    let reader = committed_reader(
        settings,
        &names.name(topics::SCHEDULE_EVENTS),
        partitions,
        10,
    )?;
    let mut instance = start_instance(settings, names)?;
    let producer: ThreadedProducer<DefaultProducerContext> = settings
        .producer_config()
        .create()
        .context("creating the paced producer")?;
    let ready = Arc::new(AtomicBool::new(false));
    let mut sender = Some({
        let (ready, topic) = (ready.clone(), names.name(topics::SCHEDULE_REQUESTS));
        let (workload, base) = (workload.clone(), workload.base());
        std::thread::Builder::new()
            .name("paced-producer".into())
            .spawn(move || {
                let sent = paced_send(&producer, &topic, &workload, base, &ready, pace)?;
                // Dropping a producer purges what it has not delivered yet.
                producer
                    .flush(Duration::from_secs(30))
                    .context("delivering the last plan requests")?;
                Ok::<_, anyhow::Error>(sent)
            })
            .context("starting the paced producer")?
    });

    let mut samples: Vec<f64> = Vec::new();
    let mut sent: Option<u64> = None;
    let give_up = Instant::now() + WARM_UP_LIMIT + pace.duration + TAIL;
    loop {
        instance.ensure_healthy()?;
        read_decisions(&reader, &ready, &mut samples)?;
        if let Some(thread) = sender.take_if(|t| t.is_finished()) {
            let count = thread
                .join()
                .map_err(|_| anyhow!("the paced producer panicked"))??;
            info!(
                sent = count,
                "paced load sent; waiting for the last decisions"
            );
            sent = Some(count);
        }
        if sent.is_some_and(|count| samples.len() as u64 >= count) {
            break;
        }
        if Instant::now() > give_up {
            bail!(
                "only {} of {sent:?} measured allocations became visible",
                samples.len()
            );
        }
    }
    let mean_commit_ms = instance.mean_commit_ms();
    instance.stop()?;
    let summary = Summary::of(samples).ok_or_else(|| anyhow!("no latency samples"))?;
    Ok(Latency {
        summary,
        mean_commit_ms,
    })
}

/// Reads the decisions that are there: a warm-up one says the pipeline is
/// ready, a measured one gives a sample; a refusal fails the run.
fn read_decisions(reader: &BaseConsumer, ready: &AtomicBool, samples: &mut Vec<f64>) -> Result<()> {
    let mut wait = Duration::from_millis(5);
    for _ in 0..10_000 {
        let message = match reader.poll(wait) {
            Some(Ok(message)) => message,
            Some(Err(error)) => {
                warn!(%error, "reader error");
                return Ok(());
            }
            None => return Ok(()),
        };
        let seen_at = now_micros();
        let event = ScheduleEvent::decode(message.payload().unwrap_or_default())
            .context("decoding a schedule event")?;
        if event.kind != ScheduleEventKind::Allocated {
            bail!(
                "request {:?} was not allocated: {:?} ({})",
                event.causation_id,
                event.kind,
                event.reason
            );
        }
        let sent_micros = event.causation_id.map_or(0, |id| id.as_u64_pair().0);
        if sent_micros == 0 {
            ready.store(true, Ordering::SeqCst);
        } else {
            samples.push((seen_at - sent_micros as i64) as f64 / 1000.0);
        }
        wait = Duration::ZERO;
    }
    Ok(())
}

/// Sends warm-up requests until `ready`, then `rate × duration` stamped
/// ones at an even pace. Returns how many stamped requests were sent.
fn paced_send(
    producer: &ThreadedProducer<DefaultProducerContext>,
    topic: &str,
    workload: &Workload,
    base: DateTime<Utc>,
    ready: &AtomicBool,
    pace: Pace,
) -> Result<u64> {
    let mut n: u64 = 0;
    let warm_up_until = Instant::now() + WARM_UP_LIMIT;
    while !ready.load(Ordering::SeqCst) {
        if Instant::now() > warm_up_until {
            bail!("the scheduler allocated nothing within a minute");
        }
        send(
            producer,
            topic,
            workload,
            base,
            n,
            Uuid::from_u64_pair(0, n),
        )?;
        n += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the warm-up backlog clear, so the first measured requests do not queue behind it.
    std::thread::sleep(Duration::from_secs(1));
    info!(
        rate = pace.rate_per_s,
        seconds = pace.duration.as_secs_f64(),
        "scheduler ready; measuring latency"
    );
    let total = pace.rate_per_s * pace.duration.as_secs();
    let started = Instant::now();
    let mut sent: u64 = 0;
    while sent < total {
        let due = (started.elapsed().as_secs_f64() * pace.rate_per_s as f64) as u64;
        while sent < due.min(total) {
            let stamp = u64::try_from(now_micros()).unwrap_or(1).max(1);
            send(
                producer,
                topic,
                workload,
                base,
                n,
                Uuid::from_u64_pair(stamp, n),
            )?;
            n += 1;
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(sent)
}

fn send(
    producer: &ThreadedProducer<DefaultProducerContext>,
    topic: &str,
    workload: &Workload,
    base: DateTime<Utc>,
    n: u64,
    event_id: Uuid,
) -> Result<()> {
    let request = workload.request(n, event_id, base);
    let value = request.encode().context("encoding a plan request")?;
    let mut record = BaseRecord::to(topic)
        .key(request.tenant_id.as_str())
        .payload(&value);
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                record = back;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((error, _)) => return Err(error).context("sending a plan request"),
        }
    }
}

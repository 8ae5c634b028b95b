//! End-to-end latency under a steady, moderate load: an input's produce time
//! (stamped in its value, in µs) to the moment its output is visible to a
//! `read_committed` reader.
//!
//! The load comes from a producer with the services' own settings (`acks=all`,
//! idempotent, `linger.ms=2`), paced to the requested rate. Until the
//! processor has joined its group and restored, warm-up records (value
//! `w<n>`) are sent and not measured; the measured ones have values `t<µs>`,
//! which the counting processor echoes as `t<µs>:<count>`. Producer, broker,
//! processor and reader share one clock (one machine). Every measured record
//! must come back; a missing one fails the run.
//!
//! With the Avro payload the same stamps travel in the `CallEvent`s'
//! `provider_event_id` (see `avro`), the values encoded in this process's framing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use callstream_platform::KafkaSettings;
use rdkafka::consumer::BaseConsumer;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use tracing::{info, warn};

use crate::avro::{call_event, stamp_of};
use crate::instance::{start_instance, Mode, Names, Payload};
use callstream_bench::kafka::{committed_reader, create_topics, now_micros, TopicKind};
use callstream_bench::report::Summary;
use callstream_schemas::Event as _;

/// The load to measure under.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub rate_per_s: u64,
    pub duration: Duration,
    pub partitions: i32,
}

/// Latencies in milliseconds, and how many records they cover.
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    pub summary: Summary,
    pub sent: u64,
    pub mean_commit_ms: Option<f64>,
}

const KEYS: u64 = 10_000;
/// How long the stragglers may take after the last measured record is sent.
const TAIL: Duration = Duration::from_secs(30);

pub fn measure(
    settings: &KafkaSettings,
    names: &Names,
    mode: Mode,
    pace: Pace,
    payload: &Payload,
) -> Result<Latency> {
    create_topics(
        settings,
        &[&names.input, &names.output],
        TopicKind::Events,
        pace.partitions,
    )?;
    let reader = committed_reader(settings, &names.output, pace.partitions, 10)?;
    let mut instance = start_instance(settings, names, mode, payload)?;
    let producer: ThreadedProducer<DefaultProducerContext> = settings
        .producer_config()
        .create()
        .context("creating the paced producer")?;
    let ready = Arc::new(AtomicBool::new(false));
    let mut sender = Some({
        let (ready, input) = (ready.clone(), names.input.clone());
        let avro = matches!(payload, Payload::Avro { .. });
        std::thread::Builder::new()
            .name("paced-producer".into())
            .spawn(move || paced_send(&producer, &input, &ready, pace, avro))
            .context("starting the paced producer")?
    });

    let mut samples: Vec<f64> = Vec::new();
    let mut sent: Option<u64> = None;
    let give_up = Instant::now() + Duration::from_secs(60) + pace.duration + TAIL;
    loop {
        instance.ensure_running()?;
        read_stamps(&reader, &ready, &mut samples, payload);
        if let Some(thread) = sender.take_if(|t| t.is_finished()) {
            let count = thread
                .join()
                .map_err(|_| anyhow!("the paced producer panicked"))??;
            info!(
                sent = count,
                "paced load sent; waiting for the last outputs"
            );
            sent = Some(count);
        }
        if let Some(count) = sent {
            if samples.len() as u64 >= count {
                break;
            }
        }
        if Instant::now() > give_up {
            bail!(
                "only {} of {:?} measured outputs became visible",
                samples.len(),
                sent
            );
        }
    }
    let mean_commit_ms = instance.mean_commit_ms();
    instance.stop()?;
    let sent = sent.unwrap_or_default();
    let summary = Summary::of(samples).ok_or_else(|| anyhow!("no latency samples"))?;
    Ok(Latency {
        summary,
        sent,
        mean_commit_ms,
    })
}

/// Reads the outputs that are there; notes warm-up ones (the pipeline is
/// ready) and the latency of measured ones.
fn read_stamps(
    reader: &BaseConsumer,
    ready: &AtomicBool,
    samples: &mut Vec<f64>,
    payload: &Payload,
) {
    let mut wait = Duration::from_millis(5);
    for _ in 0..10_000 {
        match reader.poll(wait) {
            Some(Ok(message)) => {
                let seen_at = now_micros();
                let value = message.payload().unwrap_or_default();
                let stamp = match payload {
                    Payload::Text => parse_stamp(value),
                    Payload::Avro { .. } => stamp_of(value).and_then(|mark| parse_mark(&mark)),
                };
                match stamp {
                    Some(Stamp::WarmUp) => ready.store(true, Ordering::SeqCst),
                    Some(Stamp::Sent(micros)) => samples.push((seen_at - micros) as f64 / 1000.0),
                    None => warn!("an output that is not from this benchmark"),
                }
            }
            Some(Err(error)) => {
                warn!(%error, "reader error");
                return;
            }
            None => return,
        }
        wait = Duration::ZERO;
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Stamp {
    WarmUp,
    Sent(i64),
}

/// Reads `w<n>:<count>` or `t<µs>:<count>`.
fn parse_stamp(value: &[u8]) -> Option<Stamp> {
    let text = std::str::from_utf8(value).ok()?;
    let (input, _count) = text.rsplit_once(':')?;
    parse_mark(input)
}

/// Reads `w<n>` or `t<µs>`.
fn parse_mark(input: &str) -> Option<Stamp> {
    match input.split_at_checked(1)? {
        ("w", _) => Some(Stamp::WarmUp),
        ("t", micros) => micros.parse().ok().map(Stamp::Sent),
        _ => None,
    }
}

/// Sends warm-up records until `ready`, then `rate × duration` stamped ones
/// at an even pace (as `CallEvent`s if `avro`). Returns how many stamped
/// records were sent.
fn paced_send(
    producer: &ThreadedProducer<DefaultProducerContext>,
    topic: &str,
    ready: &AtomicBool,
    pace: Pace,
    avro: bool,
) -> Result<u64> {
    let run = uuid::Uuid::new_v4().as_u64_pair().0;
    let send = |n: u64, stamp: String| -> Result<()> {
        let key = format!("k{}", n % KEYS);
        let value = if avro {
            call_event(run, n, &key, stamp).encode()?
        } else {
            stamp.into_bytes()
        };
        send(producer, topic, &key, &value)
    };
    let mut n: u64 = 0;
    let warm_up_until = Instant::now() + Duration::from_secs(60);
    while !ready.load(Ordering::SeqCst) {
        if Instant::now() > warm_up_until {
            bail!("the processor produced nothing within a minute");
        }
        send(n, format!("w{n}"))?;
        n += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the warm-up backlog clear, so the first measured records do not queue behind it.
    std::thread::sleep(Duration::from_secs(1));
    info!(
        rate = pace.rate_per_s,
        seconds = pace.duration.as_secs_f64(),
        "processor ready; measuring latency"
    );
    let total = pace.rate_per_s * pace.duration.as_secs();
    let started = Instant::now();
    let mut sent: u64 = 0;
    while sent < total {
        let due = (started.elapsed().as_secs_f64() * pace.rate_per_s as f64) as u64;
        while sent < due.min(total) {
            send(n, format!("t{}", now_micros()))?;
            n += 1;
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // Every stamped record must reach the broker before the producer is
    // dropped (a drop does not wait for queued records).
    producer
        .flush(Duration::from_secs(30))
        .context("flushing the paced records")?;
    Ok(sent)
}

fn send(
    producer: &ThreadedProducer<DefaultProducerContext>,
    topic: &str,
    key: &str,
    value: &[u8],
) -> Result<()> {
    let mut record = BaseRecord::to(topic).key(key).payload(value);
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                record = back;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((error, _)) => return Err(error).context("sending a paced record"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_parse_from_counting_outputs() {
        let cases: &[(&[u8], Option<Stamp>)] = &[
            (b"w12:1", Some(Stamp::WarmUp)),
            (
                b"t1700000000123456:3",
                Some(Stamp::Sent(1_700_000_000_123_456)),
            ),
            (b"t12x:3", None),
            (b"t123", None),
            (b"x1:1", None),
            (b"", None),
            (&[0xff, b':', b'1'], None),
        ];
        for (value, expected) in cases {
            assert_eq!(parse_stamp(value), *expected, "{value:?}");
        }
    }
}

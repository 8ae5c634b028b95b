//! The launch commands the benchmark feeds the dispatcher: launch `n` of a
//! run has launch id `(run, n)` (so a `call-launch` read back names the `n`
//! it answers) and its own contact, keyed as the contact processor keys
//! them. Two ways in: a bulk preload (the throughput backlog) and a paced
//! producer with the services' own producer settings (idempotent,
//! `acks=all`), which reports the moment each command was handed to it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callstream_platform::KafkaSettings;
use callstream_schemas::{Event, JobOrigin, LaunchCommand};
use chrono::Utc;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use uuid::Uuid;

use callstream_bench::kafka::preload;

/// The tenant every launch belongs to.
pub const TENANT: &str = "bench";

/// Launch `n` of run `run`.
pub fn command(run: u64, n: u64) -> LaunchCommand {
    let now = Utc::now();
    LaunchCommand {
        event_id: Uuid::new_v4(),
        tenant_id: TENANT.into(),
        occurred_at: now,
        causation_id: None,
        correlation_id: None,
        launch_id: Uuid::from_u64_pair(run, n),
        job_id: Uuid::new_v4(),
        contact_id: format!("c-{n}"),
        campaign_id: "bench".into(),
        origin: JobOrigin::CampaignEntry,
        attempt: 1,
        to_number: format!("+1555{:07}", n % 10_000_000),
        from_number: None,
        provider: None,
        slot_at: now,
        expires_at: None,
        slot_ends_at: None,
        time_zone: None,
        jurisdictions: vec![],
        jurisdiction_source: None,
        placed_calls: vec![],
    }
}

/// Loads launches `0..count` into `topic` as fast as the broker takes them.
pub fn preload_commands(
    settings: &KafkaSettings,
    topic: &str,
    run: u64,
    count: u64,
) -> Result<Duration> {
    let mut failed: Option<String> = None;
    let took = preload(settings, topic, count, |n, key, value| {
        let cmd = command(run, n);
        key.extend_from_slice(cmd.contact_id.as_bytes());
        match cmd.encode() {
            Ok(bytes) => value.extend_from_slice(&bytes),
            Err(e) => {
                failed.get_or_insert_with(|| e.to_string());
            }
        }
    })?;
    if let Some(error) = failed {
        bail!("a launch command did not encode: {error}");
    }
    Ok(took)
}

/// Counts failed deliveries of the paced producer.
#[derive(Default)]
struct Deliveries {
    failed: AtomicU64,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if result.is_err() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A steady stream of launches.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub first: u64,
    pub count: u64,
    pub per_second: u64,
}

/// Produces launches `first..first+count` at `per_second` on a thread of its
/// own, on a fixed schedule (a late send does not push the later ones
/// back), sending `(n, when handed to the producer)` to `sent`.
pub fn paced(
    settings: &KafkaSettings,
    topic: &str,
    run: u64,
    pace: Pace,
    sent: Sender<(u64, Instant)>,
) -> Result<JoinHandle<Result<()>>> {
    let producer: ThreadedProducer<Deliveries> = settings
        .producer_config()
        .create_with_context(Deliveries::default())
        .context("creating the launch-command producer")?;
    let topic = topic.to_string();
    let interval = Duration::from_secs_f64(1.0 / pace.per_second.max(1) as f64);
    std::thread::Builder::new()
        .name("ld-commands".into())
        .spawn(move || {
            let start = Instant::now();
            for i in 0..pace.count {
                let due = start + interval.mul_f64(i as f64);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let n = pace.first + i;
                let cmd = command(run, n);
                let value = cmd.encode().context("encoding a launch command")?;
                let mut record = BaseRecord::to(&topic)
                    .key(cmd.contact_id.as_bytes())
                    .payload(&value[..]);
                let at = Instant::now();
                loop {
                    match producer.send(record) {
                        Ok(()) => break,
                        Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                            record = back;
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        Err((e, _)) => return Err(e).context("producing a launch command"),
                    }
                }
                // The reader may have gone (it gave up); the produce still counts.
                let _ = sent.send((n, at));
            }
            producer
                .flush(Duration::from_secs(30))
                .context("flushing the launch commands")?;
            let failed = producer.context().failed.load(Ordering::Relaxed);
            if failed > 0 {
                bail!("{failed} launch commands were not delivered");
            }
            Ok(())
        })
        .context("starting the launch-command producer")
}

//! The runtime in-process against the real broker: a wall-clock timer fires
//! on a partition that receives nothing else, and a poison record goes to
//! the dead-letter topic while the records after it are processed.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{create_topic, produce, producer, unique_name};
use callstream_runtime::testkit::{CountingProcessor, COUNTS_STORE};
use callstream_runtime::{
    header, Context, Output, ProcessError, Processor, ProcessorSpec, Record, TimeDomain, Timer,
};
use rdkafka::message::{Headers, Message};

const PARTITIONS: i32 = 3;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// Arms a wall-clock timer `delay` ms out for each record; emits the due time when it fires.
struct Alarm {
    output: String,
}

impl Processor for Alarm {
    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let delay: i64 = std::str::from_utf8(record.value.as_deref().unwrap_or_default())
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| ProcessError::Decode("delay in ms expected".into()))?;
        let due = ctx.wall_clock_ms() + delay;
        let key = record.key.clone().unwrap_or_default();
        ctx.set_timer(TimeDomain::WallClock, "alarm", key, due, due.to_string());
        Ok(())
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        ctx.emit(Output::new(
            &self.output,
            timer.handle.key.clone(),
            timer.payload.clone(),
        ));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wall_clock_timer_fires_on_time_on_a_quiet_partition() -> Result<()> {
    let app = unique_name("rt-alarm");
    let (input, output) = (format!("{app}-in"), format!("{app}-out"));
    create_topic(&input, PARTITIONS).await?;
    create_topic(&output, PARTITIONS).await?;
    let spec = ProcessorSpec::new(&app, format!("{app}-dlq")).input(&input);
    let running = Running::start(
        Alarm {
            output: output.clone(),
        },
        spec,
        |_| {},
    );

    // One record, then silence on every partition.
    produce(&producer()?, &input, "quiet", b"3000").await?;
    let consumer = reader(&output, PARTITIONS)?;
    let message = tokio::time::timeout(Duration::from_secs(30), consumer.recv())
        .await
        .context("the timer never fired")??;
    let seen_ms = now_ms();
    let due_ms: i64 = std::str::from_utf8(message.payload().unwrap_or_default())?.parse()?;
    running.stop()?;
    let late_ms = seen_ms - due_ms;
    assert!(
        (0..1_000).contains(&late_ms),
        "fired {late_ms} ms after due (must be within 1 s)"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_record_is_dead_lettered_and_the_records_after_it_are_processed() -> Result<()> {
    let app = unique_name("rt-poison");
    let (input, output, dead_letters) = (
        format!("{app}-in"),
        format!("{app}-out"),
        format!("{app}-dlq"),
    );
    create_topic(&input, PARTITIONS).await?;
    create_topic(&output, PARTITIONS).await?;
    let spec = ProcessorSpec::new(&app, &dead_letters)
        .input(&input)
        .store(COUNTS_STORE);
    let running = Running::start(
        CountingProcessor {
            output_topic: output.clone(),
        },
        spec,
        |_| {},
    );

    let producer = producer()?;
    produce(&producer, &input, "k", b"before").await?;
    produce(&producer, &input, "k", &[0xff, 0xfe, 0x00]).await?;
    produce(&producer, &input, "k", b"after").await?;

    let outputs = reader(&output, PARTITIONS)?;
    let mut values = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while values.len() < 2 && Instant::now() < deadline {
        if let Ok(message) = tokio::time::timeout(Duration::from_secs(1), outputs.recv()).await {
            values
                .push(String::from_utf8_lossy(message?.payload().unwrap_or_default()).into_owned());
        }
    }
    assert_eq!(values, ["before:1", "after:2"]);

    let dead = tokio::time::timeout(
        Duration::from_secs(30),
        reader(&dead_letters, PARTITIONS)?.recv(),
    )
    .await
    .context("no dead letter arrived")??
    .detach();
    running.stop()?;
    assert_eq!(dead.payload(), Some(&[0xff, 0xfe, 0x00][..]));
    let reason = dead
        .headers()
        .and_then(|h| h.iter().find(|h| h.key == header::DLQ_REASON))
        .and_then(|h| h.value)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_default();
    assert!(reason.starts_with("cannot decode"), "reason: {reason:?}");
    Ok(())
}

//! The runtime in-process against the real broker: a wall-clock timer fires
//! on a partition that receives nothing else, a poison record goes to the
//! dead-letter topic while the records after it are processed, and a timer
//! whose handler fails is dead-lettered (not dropped) and counted.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};
use callstream_e2e::runtime::{reader, Running};
use callstream_e2e::{create_topic, produce, producer, unique_name};
use callstream_runtime::testkit::CountingProcessor;
use callstream_runtime::{
    header, Context, Output, ProcessError, Processor, ProcessorSpec, Record, RuntimeMetrics,
    TimeDomain, Timer,
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
    let spec = ProcessorSpec::new(&app, &dead_letters).input(&input);
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

/// Arms a wall-clock timer 200 ms out per record; its handler always fails.
struct RefusingAlarm;

impl Processor for RefusingAlarm {
    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let due = ctx.wall_clock_ms() + 200;
        let key = record.key.clone().unwrap_or_default();
        let payload = record.value.clone().unwrap_or_default();
        ctx.set_timer(TimeDomain::WallClock, "alarm", key, due, payload);
        Ok(())
    }

    fn on_timer(&mut self, _ctx: &mut Context<'_>, _timer: &Timer) -> Result<(), ProcessError> {
        Err(ProcessError::Invalid("alarm refused".into()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_timer_is_dead_lettered_with_its_identity_and_counted() -> Result<()> {
    let app = unique_name("rt-timer-dlq");
    let (input, dead_letters) = (format!("{app}-in"), format!("{app}-dlq"));
    create_topic(&input, PARTITIONS).await?;
    let spec = ProcessorSpec::new(&app, &dead_letters).input(&input);
    let metrics = std::sync::Arc::new(RuntimeMetrics::new(&app));
    let running = Running::start(RefusingAlarm, spec, |c| c.metrics = metrics.clone());
    produce(&producer()?, &input, "k", b"wake me").await?;

    let dead = tokio::time::timeout(
        Duration::from_secs(30),
        reader(&dead_letters, PARTITIONS)?.recv(),
    )
    .await
    .context("no dead letter arrived")??
    .detach();
    // Let a second firing (there must be none) show up in the metrics.
    tokio::time::sleep(Duration::from_secs(1)).await;
    running.stop()?;
    let header = |name: &str| {
        dead.headers()
            .and_then(|h| h.iter().find(|h| h.key == name))
            .and_then(|h| h.value)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    };
    assert_eq!(dead.key(), Some(&b"k"[..]));
    assert_eq!(dead.payload(), Some(&b"wake me"[..]));
    assert_eq!(header(header::DLQ_KIND), "timer");
    assert_eq!(header(header::DLQ_TIMER_NAME), "alarm");
    assert_eq!(header(header::DLQ_TIMER_DOMAIN), "wall-clock");
    assert_eq!(header(header::DLQ_REASON), "cannot process: alarm refused");
    assert!(header(header::DLQ_SOURCE).starts_with("timer/"));
    let text = metrics.encode();
    for line in [
        format!(r#"callstream_runtime_handler_failures_total{{app="{app}",handler="on_timer"}} 1"#),
        format!(r#"callstream_runtime_dead_letters_total{{app="{app}"}} 1"#),
        format!(r#"callstream_runtime_open_timers{{app="{app}"}} 0"#),
    ] {
        assert!(text.contains(&line), "missing {line} in:\n{text}");
    }
    Ok(())
}

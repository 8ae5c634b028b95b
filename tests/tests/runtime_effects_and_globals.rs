//! Effects and global tables on the real broker: an effect runs only after
//! the transaction that asked for it commits, its result comes back to the
//! processor, and a change on a global table steers the next record.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use callstream_e2e::runtime::{next_value, reader, Running};
use callstream_e2e::{create_topic, create_topic_with, produce, producer, unique_name};
use callstream_runtime::{
    Context, EffectHandler, EffectRequest, EffectResult, EffectRunner, Output, ProcessError,
    Processor, ProcessorSpec, Record,
};
use futures::future::BoxFuture;

const PARTITIONS: i32 = 2;

/// Dials (an effect) for each record unless `control` says `paused`.
struct Dialer {
    output: String,
    control: String,
}

impl Processor for Dialer {
    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let key = record.key.clone().unwrap_or_default();
        if ctx.global(&self.control, b"mode") == Some(&b"paused"[..]) {
            ctx.emit(Output::new(&self.output, key, "held"));
            return Ok(());
        }
        ctx.request_effect(
            key,
            format!("op-{}", record.offset),
            record.value.clone().unwrap_or_default(),
        );
        Ok(())
    }

    fn on_effect(
        &mut self,
        ctx: &mut Context<'_>,
        result: &EffectResult,
    ) -> Result<(), ProcessError> {
        ctx.emit(Output::new(
            &self.output,
            result.request.key.clone(),
            result.payload.clone(),
        ));
        Ok(())
    }
}

struct CountingDialer(Arc<AtomicUsize>);

impl EffectHandler for CountingDialer {
    fn call(&self, request: EffectRequest) -> BoxFuture<'static, Vec<u8>> {
        let calls = self.0.clone();
        Box::pin(async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            format!("dialed {}", String::from_utf8_lossy(&request.payload)).into_bytes()
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effects_return_to_the_processor_and_a_global_change_applies_to_the_next_record(
) -> Result<()> {
    let app = unique_name("rt-effects");
    let (input, output, control) = (
        format!("{app}-in"),
        format!("{app}-out"),
        format!("{app}-control"),
    );
    create_topic(&input, PARTITIONS).await?;
    create_topic(&output, PARTITIONS).await?;
    create_topic_with(&control, 1, &[("cleanup.policy", "compact")]).await?;
    let producer = producer()?;
    produce(&producer, &control, "mode", b"paused").await?;

    let calls = Arc::new(AtomicUsize::new(0));
    let spec = ProcessorSpec::new(&app, format!("{app}-dlq"))
        .input(&input)
        .global_table(&control);
    let handler = CountingDialer(calls.clone());
    let running = Running::start(
        Dialer {
            output: output.clone(),
            control: control.clone(),
        },
        spec,
        |config| {
            config.effects = Some(EffectRunner {
                handler: Arc::new(handler),
                concurrency: 8,
            })
        },
    );
    let outputs = reader(&output, PARTITIONS)?;

    // Loaded at start: the table says paused.
    produce(&producer, &input, "lead-1", b"first").await?;
    assert_eq!(next_value(&outputs, Duration::from_secs(30)).await?, "held");
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // A change on the table applies without a restart.
    produce(&producer, &control, "mode", b"running").await?;
    let mut value = String::new();
    for attempt in 0..50 {
        produce(
            &producer,
            &input,
            "lead-1",
            format!("try-{attempt}").as_bytes(),
        )
        .await?;
        value = next_value(&outputs, Duration::from_secs(30)).await?;
        if value != "held" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(value.starts_with("dialed try-"), "{value}");
    running.stop()?;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    Ok(())
}

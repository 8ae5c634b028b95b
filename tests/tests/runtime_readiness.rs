//! A processor's readiness (what `/readyz` answers): not ready before it has joined its
//! group and restored its partitions, ready while it processes, not ready once stopped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use callstream_e2e::runtime::Running;
use callstream_e2e::{create_topic, produce, producer, unique_name};
use callstream_runtime::testkit::CountingProcessor;
use callstream_runtime::{ProcessorSpec, RuntimeMetrics};

const PARTITIONS: i32 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_is_ready_only_once_restored_and_not_after_it_stopped() -> Result<()> {
    let app = unique_name("rt-ready");
    let (input, output) = (format!("{app}-in"), format!("{app}-out"));
    create_topic(&input, PARTITIONS).await?;
    create_topic(&output, PARTITIONS).await?;
    // State to restore on the second start.
    let producer = producer()?;
    for i in 0..20 {
        produce(&producer, &input, &format!("k{i}"), b"1").await?;
    }
    let spec = || ProcessorSpec::new(&app, format!("{app}-dlq")).input(&input);
    let processor = || CountingProcessor {
        output_topic: output.clone(),
    };

    for round in 0..2 {
        let metrics = Arc::new(RuntimeMetrics::new(&app));
        ensure!(!metrics.is_ready(), "ready before it started");
        let running = Running::start(processor(), spec(), |c| c.metrics = metrics.clone());
        let started = Instant::now();
        while !metrics.is_ready() {
            ensure!(
                !running.is_finished(),
                "round {round}: the processor stopped"
            );
            ensure!(
                started.elapsed() < Duration::from_secs(60),
                "round {round}: not ready after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Ready means every assigned partition has its task: restored and processing.
        ensure!(
            metrics.assigned_partitions.get() == i64::from(PARTITIONS),
            "round {round}: ready with {} of {PARTITIONS} partitions",
            metrics.assigned_partitions.get()
        );
        if round == 1 {
            ensure!(
                metrics.restored_records.get() > 0,
                "round 1 was ready without restoring the state of round 0"
            );
        }
        let text = metrics.encode();
        ensure!(
            text.contains(&format!(r#"callstream_runtime_ready{{app="{app}"}} 1"#)),
            "{text}"
        );
        // The input is read to its end once ready: round 0's records are handled.
        let deadline = Instant::now() + Duration::from_secs(30);
        while round == 0 && metrics.records_in.get() < 20 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        running.stop()?;
        ensure!(!metrics.is_ready(), "round {round}: ready after it stopped");
    }
    Ok(())
}

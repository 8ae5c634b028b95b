//! Running a processor in-process on the real broker, and reading its
//! outputs as a `read_committed` consumer would.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use callstream_platform::KafkaSettings;
use callstream_runtime::{Processor, ProcessorSpec, RuntimeConfig, RuntimeError};
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::{Offset, TopicPartitionList};

use crate::{client_config, unique_name};

/// A processor running on its own thread.
pub struct Running {
    shutdown: Arc<AtomicBool>,
    thread: JoinHandle<Result<(), RuntimeError>>,
}

impl Running {
    /// Starts `processor` with the default configuration (exactly once,
    /// 100 ms commits), after `configure` had its say.
    pub fn start<P: Processor>(
        processor: P,
        spec: ProcessorSpec,
        configure: impl FnOnce(&mut RuntimeConfig),
    ) -> Self {
        let mut config = RuntimeConfig::new(
            KafkaSettings::from_env(spec.app_id.clone()),
            &spec.app_id,
            "0",
        );
        configure(&mut config);
        let shutdown = config.shutdown.clone();
        let thread = std::thread::spawn(move || {
            let app = spec.app_id.clone();
            let result = callstream_runtime::run(processor, spec, config);
            // Said at once: a test waiting on outputs would otherwise only time out.
            if let Err(e) = &result {
                eprintln!("processor {app} stopped on its own: {e}");
            }
            result
        });
        Self { shutdown, thread }
    }

    /// Whether the processor has stopped (failed) on its own; `stop` tells why.
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Asks the processor to stop and waits for it; its error, if any, fails the test.
    pub fn stop(self) -> Result<()> {
        self.shutdown.store(true, Ordering::SeqCst);
        match self.thread.join() {
            Ok(result) => result.context("runtime failed"),
            Err(_) => bail!("runtime thread panicked"),
        }
    }
}

/// A `read_committed` consumer of partitions `0..partitions` of `topic`, from the beginning.
pub fn reader(topic: &str, partitions: i32) -> Result<StreamConsumer> {
    let consumer: StreamConsumer = client_config()
        .set("group.id", unique_name("reader"))
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .create()?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment.add_partition_offset(topic, partition, Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;
    Ok(consumer)
}

/// Receives the next record's value within `timeout`.
pub async fn next_value(consumer: &StreamConsumer, timeout: Duration) -> Result<String> {
    use rdkafka::message::Message;
    let message = tokio::time::timeout(timeout, consumer.recv())
        .await
        .context("no record arrived in time")??;
    Ok(String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned())
}

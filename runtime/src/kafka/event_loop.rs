//! The event loop: per turn, follow the global tables, install restored
//! tasks, handle a batch of records, hand back effect results, fire due
//! timers, and commit when the policy says so. Everything a turn does goes
//! into the open transaction; a fatal error ends the loop for `run` to
//! abort.

use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::consumer::BaseConsumer;
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers as _, Message};
use tracing::{error, warn};

use super::config::RuntimeConfig;
use super::core::{lock, Core};
use super::effects::EffectExecutor;
use super::rebalance::EngineContext;
use super::restore::{GlobalReader, Restorer};
use crate::api::{header, Processor, Record};
use crate::error::RuntimeError;

/// Most records handled between two checks of timers and commit.
const MAX_BATCH: usize = 2_000;

/// What the event loop works with.
pub(super) struct LoopParts<'a> {
    pub consumer: &'a BaseConsumer<EngineContext>,
    pub core: &'a Mutex<Core>,
    pub restorer: &'a Restorer,
    pub globals: Option<&'a GlobalReader>,
    pub executor: &'a EffectExecutor,
    pub config: &'a RuntimeConfig,
    pub app_id: &'a str,
}

/// How long the loop waits for records while effects are out, so their
/// results are picked up promptly.
const EFFECT_POLL: Duration = Duration::from_millis(5);

pub(super) fn event_loop<P: Processor>(
    processor: &mut P,
    parts: &LoopParts<'_>,
) -> Result<(), RuntimeError> {
    let LoopParts {
        consumer,
        core,
        restorer,
        globals,
        executor,
        config,
        app_id,
    } = *parts;
    // One record, refilled for every input: its buffers are reused.
    let mut record = Record::default();
    while !config.shutdown.load(Ordering::SeqCst) {
        // One span per turn of the loop (a batch and the commit it may end
        // with), so every log line carries the processor's name.
        let _batch = tracing::debug_span!("batch", app = app_id).entered();
        if let Some(reader) = globals {
            reader.poll(&mut lock(core).globals);
        }
        let pending = lock(core).take_pending_restore();
        if !pending.is_empty() {
            let started = Instant::now();
            let tasks = restorer.restore(&pending)?;
            config
                .metrics
                .restore_seconds
                .observe(started.elapsed().as_secs_f64());
            let restored: Vec<i32> = tasks.keys().copied().collect();
            lock(core).install(tasks, consumer);
            // Restored, and not one of their records handled yet.
            for partition in restored {
                processor.on_assign(partition);
            }
        }
        let mut wait = lock(core).poll_timeout(config.clock.now_ms());
        if executor.busy() {
            wait = wait.min(EFFECT_POLL);
        }
        for _ in 0..MAX_BATCH {
            match consumer.poll(wait) {
                None => break,
                // A fatal consumer error (a static member fenced by another
                // instance with our group.instance.id) never clears: polling on
                // would spin forever. These clients are done (`run` decides
                // whether new ones may take over).
                Some(Err(error @ KafkaError::MessageConsumptionFatal(_))) => {
                    error!(app = app_id, %error, "fatal consumer error");
                    return Err(RuntimeError::Fatal {
                        app: app_id.to_string(),
                        source: error,
                    });
                }
                Some(Err(error)) => {
                    warn!(%error, "consumer error");
                    break;
                }
                Some(Ok(message)) => {
                    fill_record(&message, &mut record);
                    if let (Some(gate), Some(value)) = (&config.value_gate, &record.value) {
                        if !gate.admit(value, &config.shutdown) {
                            // Stopping: this record stays unhandled and uncommitted.
                            break;
                        }
                    }
                    // Every log line of this record's handling names its
                    // correlation id. From the headers already parsed, borrowed:
                    // no span at all when the record has none, and none when
                    // `RUST_LOG` turns `callstream_runtime::record` off.
                    let _record = record
                        .headers
                        .get_str(header::CORRELATION_ID)
                        .map(|correlation_id| {
                            tracing::info_span!(target: "callstream_runtime::record", "record", correlation_id)
                                .entered()
                        });
                    lock(core).handle(processor, &record, config.clock.now_ms());
                }
            }
            wait = Duration::ZERO;
        }
        let mut core = lock(core);
        // Revoked during the poll (the rebalance callback has no processor):
        // told before a partition that comes back is assigned again.
        for partition in core.take_revoked() {
            processor.on_revoke(partition);
        }
        while let Ok(result) = executor.results.try_recv() {
            core.complete_effect(processor, result, config.clock.now_ms());
        }
        core.fire_timers(processor, config.clock.now_ms());
        core.maybe_commit(consumer);
        core.rejoin_if_incomplete(consumer);
        core.update_readiness();
        core.take_fatal()?;
        executor.start(app_id, core.take_ready_effects());
    }
    Ok(())
}

/// Copies `message` into `record`, reusing the record's buffers (a topic
/// name, key, value and headers per input were most of the engine's
/// allocations).
fn fill_record<M: Message>(message: &M, record: &mut Record) {
    let headers = message.headers();
    let headers = headers
        .iter()
        .flat_map(|h| h.iter())
        .map(|h| (h.key, h.value.unwrap_or_default()));
    record.headers.refill(headers);
    record.topic.clear();
    record.topic.push_str(message.topic());
    record.partition = message.partition();
    record.offset = message.offset();
    record.timestamp_ms = message.timestamp().to_millis().unwrap_or_default();
    refill_bytes(&mut record.key, message.key());
    refill_bytes(&mut record.value, message.payload());
}

fn refill_bytes(buffer: &mut Option<Vec<u8>>, bytes: Option<&[u8]>) {
    match (buffer.as_mut(), bytes) {
        (Some(buffer), Some(bytes)) => {
            buffer.clear();
            buffer.extend_from_slice(bytes);
        }
        (None, Some(bytes)) => *buffer = Some(bytes.to_vec()),
        // Kept as an empty buffer would read as an empty key: it must be `None`.
        (_, None) => *buffer = None,
    }
}

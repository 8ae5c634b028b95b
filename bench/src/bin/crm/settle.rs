//! Time from command to applied against HubSpot as it is: the simulator's
//! default search lag (log-normal, a median of 3 s, p99 about 50 s, the
//! longest 2 minutes), its search limit of 5 per second, and 2% of writes
//! applied and then answered too late (ambiguous: the dispatcher must find
//! them by searching, and never create them twice). The rate limit is
//! lifted: this measures the cost of reconciling, not the queue behind a
//! limit. The dispatcher runs with its defaults (first search after 5 s, a
//! 5-minute settle window, searches 20 s apart, 4 searches per second).
//!
//! Commands go at a fixed rate, each stamped with the time it was sent;
//! a command's latency is its result's time minus that stamp.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callstream_crm_dispatcher::RateLimit;
use callstream_platform::KafkaSettings;
use callstream_schemas::{CrmResult, CrmResultStatus, Event};
use callstream_sim_crm::CrmBehaviour;
use chrono::Utc;
use rdkafka::producer::{BaseRecord, Producer};
use rdkafka::Message;
use tracing::info;
use uuid::Uuid;

use callstream_bench::kafka::committed_reader;

use crate::load::command;
use crate::stack::{dispatcher_config, start_dispatcher, Names, Sim};

/// The load of the settle run.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub commands: u64,
    pub contacts: u64,
    pub per_second: f64,
    /// Share of writes applied and then answered past the request timeout.
    pub ambiguous_share: f64,
    pub commit_interval: Duration,
    pub timeout: Duration,
}

/// What the settle run found.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// Command to applied, ms, of every command that applied.
    pub latencies_ms: Vec<f64>,
    /// Of those, the commands found by a search after an ambiguous write.
    pub found_by_search: Vec<f64>,
    pub other: u64,
    pub late_answers: u64,
    pub duplicates: u64,
    pub max_searches_in_second: u32,
    pub search_throttled: u64,
    pub lag_p50_ms: u64,
    pub lag_p99_ms: u64,
    pub lag_max_ms: u64,
}

const PROGRESS_EVERY: Duration = Duration::from_secs(10);

pub fn measure(
    settings: &KafkaSettings,
    runtime: &tokio::runtime::Runtime,
    names: &Names,
    load: Load,
) -> Result<Found> {
    names.create(settings)?;
    let config_defaults = callstream_crm_dispatcher::DispatchPolicy::default();
    let behaviour = CrmBehaviour {
        rate_limit_max: 0,
        timeout_share: load.ambiguous_share,
        // Past the dispatcher's request timeout: applied, unanswered.
        timeout_ms: u64::try_from(config_defaults.request_timeout.as_millis()).unwrap_or(10_000)
            + 2_000,
        ..CrmBehaviour::default()
    };
    let sim = Sim::start_with(runtime, behaviour)?;
    let no_limit = RateLimit {
        max_requests: 0,
        ..RateLimit::default()
    };
    let config = dispatcher_config(names, &sim, no_limit, 64)?;
    let reader = committed_reader(settings, &names.results(), names.topics.partitions, 50)?;
    let mut dispatcher = start_dispatcher(settings, names, &config, load.commit_interval)?;
    let producer: rdkafka::producer::BaseProducer = settings
        .base_config()
        .set("linger.ms", "1")
        .create()
        .context("creating a producer")?;

    let run = names.app.clone();
    let mut sent_at: HashMap<Uuid, i64> = HashMap::new();
    let mut found = Found::default();
    let mut seen = 0u64;
    let started = Instant::now();
    let mut last_progress = Instant::now();
    let gap = Duration::from_secs_f64(1.0 / load.per_second);
    let mut next = 0u64;
    while seen < load.commands {
        dispatcher.ensure_running()?;
        // Send what is due: commands at a fixed rate, stamped when sent.
        while next < load.commands && started.elapsed() >= gap.mul_f64(next as f64) {
            let mut cmd = command(&run, next, load.contacts, Utc::now());
            cmd.occurred_at = Utc::now();
            let bytes = cmd.encode()?;
            sent_at.insert(cmd.operation_id, cmd.occurred_at.timestamp_millis());
            producer
                .send(
                    BaseRecord::to(&names.commands())
                        .key(cmd.contact_id.as_bytes())
                        .payload(&bytes),
                )
                .map_err(|(e, _)| e)
                .context("sending a command")?;
            next += 1;
        }
        producer.poll(Duration::ZERO);
        if let Some(Ok(message)) = reader.poll(Duration::from_millis(5)) {
            let result = CrmResult::decode(message.payload().unwrap_or_default())?;
            seen += 1;
            let Some(at) = sent_at.get(&result.operation_id) else {
                continue;
            };
            let ms = (result.occurred_at.timestamp_millis() - at) as f64;
            match result.status {
                CrmResultStatus::Applied => found.latencies_ms.push(ms),
                CrmResultStatus::AlreadyApplied => {
                    found.latencies_ms.push(ms);
                    found.found_by_search.push(ms);
                }
                _ => found.other += 1,
            }
        }
        if started.elapsed() > load.timeout {
            bail!(
                "only {seen} of {} results after {:?}",
                load.commands,
                load.timeout
            );
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            let stats = sim.state.request_stats();
            info!(
                sent = next,
                results = seen,
                late_answers = stats.late_answers,
                "running"
            );
        }
    }
    producer.flush(Duration::from_secs(10))?;
    dispatcher.stop()?;
    let stats = sim.state.request_stats();
    let writes = sim.state.db().stats();
    found.late_answers = stats.late_answers;
    found.search_throttled = stats.search_throttled;
    found.duplicates = writes.duplicate_creates_total;
    found.lag_p50_ms = writes.search_lag_p50_ms;
    found.lag_p99_ms = writes.search_lag_p99_ms;
    found.lag_max_ms = writes.search_lag_max_ms;
    found.max_searches_in_second = sim
        .state
        .search_limits()
        .iter()
        .map(|s| s.1)
        .max()
        .unwrap_or(0);
    Ok(found)
}

//! The live projections: one consumer over every topic the configured views read, each
//! batch applied with its offsets in Postgres transactions (one per commit lane).
//!
//! Guarantees:
//! - Exactly once into Postgres: a view's rows of a batch and its offsets commit together
//!   (the views in a few lanes, each its own transaction; see [`Pipeline`](crate::commit)); on start the
//!   consumer seeks to the stored offsets (the smallest over the views reading a
//!   partition; each view skips what it already has). A crash anywhere repeats at most an
//!   uncommitted batch, which is applied as if for the first time.
//! - Postgres going away pauses the projections with one log line, keeps the batch, and
//!   retries with doubling waits; when Postgres returns it resumes where it was, so
//!   nothing is lost or applied twice.
//! - The next batch is read and decoded while the last one commits (see
//!   [`Pipeline`](crate::commit)); shutdown waits for the batch in flight.
//! - A record that is not an event, or that Postgres refuses for a reason retrying cannot
//!   fix, is counted and logged and never stops the projection.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::postgres::{PgPool, PgPoolOptions};

use crate::commit::{Pauser, Pipeline};
use crate::config::ProjectionsConfig;
use crate::error::{is_transient, ProjectionError};
use crate::report::Reporter;
use crate::source::{Source, TopicNames, TopicPartition};
use crate::store::{self, Stats};
use crate::telemetry::Telemetry;
use crate::view::{Tables, View};

/// A pool that connects lazily, so the projections start (and wait) while Postgres is down:
/// a connection per commit lane and two more (the telemetry sampler, reading offsets).
pub fn lazy_pool(database_url: &str, commit_lanes: usize) -> Result<PgPool, ProjectionError> {
    let connections = u32::try_from(commit_lanes.max(1) + 2).unwrap_or(u32::MAX);
    Ok(PgPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy(database_url)?)
}

/// Applies the migrations unless every one of them is applied already, so a role that may
/// not create tables (see [`crate::roles`]) still starts on an up-to-date schema.
pub async fn migrate_if_behind(pool: &PgPool) -> Result<(), ProjectionError> {
    let applied: Result<Vec<i64>, sqlx::Error> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
            .fetch_all(pool)
            .await;
    match applied {
        Ok(applied) if MIGRATOR.iter().all(|m| applied.contains(&m.version)) => Ok(()),
        _ => migrate(pool).await,
    }
}

/// The migrations in `migrations/`, compiled in.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// Applies the migrations in `migrations/`.
pub async fn migrate(pool: &PgPool) -> Result<(), ProjectionError> {
    MIGRATOR.run(pool).await?;
    Ok(())
}

/// Every logical topic a set of views reads.
pub(crate) fn topics_of(views: &[View]) -> Vec<&'static str> {
    let mut topics: Vec<&'static str> = views.iter().flat_map(|v| v.topics()).copied().collect();
    topics.sort_unstable();
    topics.dedup();
    topics
}

/// Runs the live projections until `shutdown` resolves (between batches).
pub async fn run(
    config: ProjectionsConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ProjectionError> {
    run_with_stats(config, Arc::new(Stats::default()), shutdown).await
}

/// [`run`], counting into `stats`.
pub async fn run_with_stats(
    config: ProjectionsConfig,
    stats: Arc<Stats>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ProjectionError> {
    let telemetry = Arc::new(Telemetry::new(stats, config.ready_lag));
    run_with_telemetry(config, telemetry, shutdown).await
}

/// [`run`], counting into `telemetry`; its admin listener (`/metrics`, `/healthz`,
/// `/readyz`) is served on `config.admin_listen`, if set, while the projections run.
pub async fn run_with_telemetry(
    config: ProjectionsConfig,
    telemetry: Arc<Telemetry>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ProjectionError> {
    let pool = lazy_pool(&config.database_url, config.commit_lanes)?;
    let admin = match config.admin_listen {
        Some(addr) => {
            // Bound first: a port taken stops the start, as it does for every service.
            let listener = callstream_platform::http::bind(addr)
                .await
                .map_err(|e| ProjectionError::Config(format!("admin listener: {e}")))?;
            let telemetry = telemetry.clone();
            Some(callstream_platform::http::AdminServer::spawn(|stopped| {
                crate::telemetry::serve_admin(listener, telemetry, stopped)
            }))
        }
        None => None,
    };
    let sampler = {
        let (telemetry, pool, views) = (telemetry.clone(), pool.clone(), config.views.clone());
        let ends = crate::telemetry::PartitionEnds::new(&config.kafka);
        tokio::spawn(async move {
            loop {
                telemetry.sample(&pool, &views, ends.as_ref()).await;
                tokio::time::sleep(crate::telemetry::SAMPLE_INTERVAL).await;
            }
        })
    };
    let result = live(config, &telemetry, pool, shutdown).await;
    sampler.abort();
    if let Some(admin) = admin {
        admin.stop().await;
    }
    result
}

async fn live(
    config: ProjectionsConfig,
    telemetry: &Telemetry,
    pool: PgPool,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ProjectionError> {
    let stats = telemetry.stats().clone();
    let mut pauser = Pauser::new(&config);
    if config.migrate {
        while let Err(e) = migrate_if_behind(&pool).await {
            match &e {
                ProjectionError::Migrate(sqlx::migrate::MigrateError::Execute(inner))
                    if is_transient(inner) =>
                {
                    pauser.failed(inner).await
                }
                _ => return Err(e),
            }
        }
    }
    let views = config.views.clone();
    let names = TopicNames::new(&config.topics, &topics_of(&views));
    let mut source = Source::new(&config.kafka, names, false)?;
    let keys: Vec<String> = views.iter().map(|v| v.offsets_key(Tables::Live)).collect();
    // The broker may be away at start (a restart during an outage): wait for it, as the
    // processors do, rather than exit.
    let mut wait = Duration::from_millis(500);
    loop {
        match assign_new(&mut source, &pool, &views, &keys, &mut pauser).await {
            Ok(()) => break,
            Err(ProjectionError::Kafka(error)) => {
                tracing::warn!(%error, retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    "cannot list the topics yet; waiting for the broker");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(10));
            }
            Err(other) => return Err(other),
        }
    }
    tracing::info!(views = ?views.iter().map(|v| v.name()).collect::<Vec<_>>(),
        partitions = source.assigned().count(), "projections running");
    telemetry.set_assigned(source.assigned_logical());
    let mut last_discovery = Instant::now();
    // The next batch is read and decoded while the last one commits.
    let mut pipeline = Pipeline::new(
        pool.clone(),
        &views,
        config.commit_lanes,
        Tables::Live,
        stats.clone(),
        &Pauser::new(&config),
        Some(Reporter::new(
            &config.kafka,
            config.topics.name(callstream_platform::topics::EXCEPTIONS),
        )?),
    );
    tokio::pin!(shutdown);
    loop {
        let batch = tokio::select! {
            () = &mut shutdown => break,
            batch = source.next_batch(config.batch_max_records, config.batch_max_wait, Duration::from_millis(500)) => batch,
        };
        if last_discovery.elapsed() >= config.metadata_interval {
            last_discovery = Instant::now();
            // New topics are looked for again next time; an outage must not stop the views.
            match assign_new(&mut source, &pool, &views, &keys, &mut pauser).await {
                Ok(()) => telemetry.set_assigned(source.assigned_logical()),
                Err(ProjectionError::Kafka(error)) => {
                    tracing::warn!(%error, "topic discovery failed; keeping the partitions assigned");
                }
                Err(other) => return Err(other),
            }
        }
        if batch.records.is_empty() {
            if pipeline.is_idle() {
                // Passes on a failure of the last batch without waiting for another.
                pipeline.flush().await?;
            }
            continue;
        }
        store::wait_for_schemas(&batch.records).await;
        let decoded = store::decode(batch.records, source.names(), &stats);
        pipeline.submit(decoded).await?;
    }
    pipeline.flush().await?;
    tracing::info!("projections stopped");
    Ok(())
}

/// Assigns the partitions not yet assigned, at the smallest offset any view stored.
async fn assign_new(
    source: &mut Source,
    pool: &PgPool,
    views: &[View],
    keys: &[String],
    pauser: &mut Pauser,
) -> Result<(), ProjectionError> {
    let partitions = source.discover()?;
    let known: Vec<TopicPartition> = source.assigned().cloned().collect();
    let new: Vec<TopicPartition> = partitions
        .into_iter()
        .filter(|tp| !known.contains(tp))
        .collect();
    if new.is_empty() {
        return Ok(());
    }
    let stored = loop {
        let attempt = async {
            let mut conn = pool.acquire().await?;
            store::read_offsets(&mut conn, keys).await
        };
        match attempt.await {
            Ok(stored) => {
                pauser.succeeded();
                break stored;
            }
            Err(e) if is_transient(&e) => pauser.failed(&e).await,
            Err(e) => return Err(e.into()),
        }
    };
    let starts = start_offsets(&new, views, keys, source.names(), &stored);
    source.assign(&starts)?;
    Ok(())
}

/// Where to start each partition: the smallest next offset of the views reading it
/// (0 for a view that has stored none).
pub(crate) fn start_offsets(
    partitions: &[TopicPartition],
    views: &[View],
    keys: &[String],
    names: &TopicNames,
    stored: &store::Offsets,
) -> Vec<(TopicPartition, i64)> {
    let mut starts = BTreeMap::new();
    for tp in partitions {
        let Some(logical) = names.logical(&tp.0) else {
            continue;
        };
        let start = views
            .iter()
            .zip(keys)
            .filter(|(v, _)| v.topics().contains(&logical))
            .map(|(_, key)| {
                stored
                    .get(&(key.clone(), tp.0.to_string(), tp.1))
                    .copied()
                    .unwrap_or(0)
            })
            .min();
        if let Some(start) = start {
            starts.insert(tp.clone(), start);
        }
    }
    starts.into_iter().collect()
}

//! `callstream projections rebuild [VIEW]`: a view rebuilt from offset 0 into new tables
//! (`jobs__rebuild`, ...) while the live one stays queryable, then swapped in.
//!
//! Guarantees:
//! - The rebuilt tables are built by the same code as the live ones, with their own
//!   offsets (`jobs__rebuild` in `projection_offsets`), exactly once.
//! - The log is read in chunks of up to `rebuild_fold_records` records (a rebuild holds at
//!   most two in memory: one being written, one being read). Each view folds a whole chunk into one change per row in
//!   memory (as it folds a live batch, see `apply::fold`) and writes each row once. The
//!   first chunk goes into the empty tables with binary `COPY` (`apply::Write::Copy`);
//!   later chunks, if the log is longer, are merged with the live path's upserts. Every
//!   view writes a chunk on a connection of its own, in one transaction with its offsets,
//!   while the next chunk is read. The tables get their primary keys after the first chunk
//!   and their other indexes after the last (see [`tables`]).
//! - The swap is one transaction: it locks the live view's offsets (so the live runner
//!   waits between two batches), applies whatever the live view has and the rebuild has
//!   not yet read, renames the tables and moves the offsets. Readers see the old tables or
//!   the new ones, never a mix, and no event is lost or applied twice across the swap.
//!   The rebuilt tables' indexes and primary key take the live tables' names.

mod tables;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use sqlx::postgres::PgPool;

use crate::commit::{Pauser, Pipeline};
use crate::config::ProjectionsConfig;
use crate::error::{is_transient, ProjectionError};
use crate::runner::{migrate_if_behind, topics_of};
use crate::source::{Source, TopicNames, TopicPartition};
use crate::store::{self, Decoded, Mode, Stats};
use crate::view::{Tables, View};

/// What a rebuild did.
#[derive(Debug, Clone)]
pub struct RebuildReport {
    pub views: Vec<View>,
    /// Records read from the topics.
    pub records: u64,
    /// Of which were not events (counted, skipped).
    pub undecodable: u64,
    pub elapsed: Duration,
}

/// Rebuilds `views` (all of them for an empty list) and swaps them in; `progress` shows a
/// progress bar on stderr when it is a terminal.
pub async fn rebuild(
    config: ProjectionsConfig,
    views: &[View],
    progress: bool,
) -> Result<RebuildReport, ProjectionError> {
    let started = Instant::now();
    let views: Vec<View> = if views.is_empty() {
        View::ALL.to_vec()
    } else {
        views.to_vec()
    };
    let pool = rebuild_pool(&config.database_url, views.len())?;
    if config.migrate {
        migrate_if_behind(&pool).await?;
    }
    let mut pauser = Pauser::new(&config);
    tables::prepare(&pool, &views).await?;

    let names = TopicNames::new(&config.topics, &topics_of(&views));
    let mut source = Source::new(&config.kafka, names, true)?;
    let partitions = source.discover()?;
    let mut ends = BTreeMap::new();
    let mut total = 0u64;
    for tp in &partitions {
        let (low, high) = source.watermarks(tp)?;
        total += u64::try_from(high - low).unwrap_or(0);
        ends.insert(tp.clone(), high);
    }
    let starts: Vec<(TopicPartition, i64)> = partitions.iter().map(|tp| (tp.clone(), 0)).collect();
    source.assign(&starts)?;

    let bar = if progress {
        let bar = ProgressBar::new(total);
        let style = ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} events ({per_sec}, {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(format!(
            "rebuilding {}",
            views.iter().map(|v| v.name()).collect::<Vec<_>>().join(",")
        ));
        bar
    } else {
        ProgressBar::hidden()
    };

    let stats = Arc::new(Stats::default());
    // Where the rebuild has read to, per partition: the next offset.
    let mut position: HashMap<TopicPartition, i64> = HashMap::new();
    let mut records = 0u64;
    // Every view in a lane of its own: the views write a chunk in parallel.
    let mut pipeline = Pipeline::new(
        pool.clone(),
        &views,
        views.len(),
        Tables::Rebuild,
        stats.clone(),
        &Pauser::new(&config),
        None,
    );
    let fold_records = config.rebuild_fold_records.max(1);
    let mut chunk: Vec<Decoded> = Vec::new();
    // The first chunk, copied into the empty tables, is kept until it has committed: a
    // view whose copy Postgres refuses upserts it once the tables have their keys.
    let mut first: Option<Arc<[Decoded]>> = None;
    let mut keyed = false;
    let reading = Instant::now();
    loop {
        let done = caught_up(&source, &ends, &position);
        if (done || chunk.len() >= fold_records) && !chunk.is_empty() {
            let shared: Arc<[Decoded]> = std::mem::take(&mut chunk).into();
            if first.is_none() && !keyed {
                first = Some(shared.clone());
                pipeline.submit_in(shared, Mode::Load).await?;
            } else {
                if !keyed {
                    finish_first(&mut pipeline, &pool, &views, &mut first, &mut pauser).await?;
                    keyed = true;
                }
                pipeline.submit_in(shared, Mode::Fast).await?;
            }
        }
        if done {
            break;
        }
        let batch = source
            .next_batch(
                config.rebuild_batch_records.min(fold_records - chunk.len()),
                config.batch_max_wait,
                Duration::from_millis(200),
            )
            .await;
        if batch.records.is_empty() {
            continue;
        }
        note_positions(&mut position, &batch.records);
        records += batch.records.len() as u64;
        bar.inc(batch.records.len() as u64);
        store::wait_for_schemas(&batch.records).await;
        chunk.extend(store::decode(batch.records, source.names(), &stats));
    }
    if !keyed {
        finish_first(&mut pipeline, &pool, &views, &mut first, &mut pauser).await?;
    }
    pipeline.flush().await?;
    let loaded = reading.elapsed();
    bar.set_message("indexing");
    loop {
        match tables::build_indexes(&pool, &views).await {
            Ok(()) => break,
            Err(ProjectionError::Postgres(e)) if is_transient(&e) => pauser.failed(&e).await,
            Err(e) => return Err(e),
        }
    }
    pauser.succeeded();
    let indexed = reading.elapsed() - loaded;
    bar.set_message("swapping in");
    records += swap(&pool, &source, &views, &stats, &mut position, &mut pauser).await?;
    // Where a rebuild's time goes: reading, folding and writing; indexing; the swap.
    tracing::info!(
        load_ms = loaded.as_millis() as u64,
        index_ms = indexed.as_millis() as u64,
        swap_ms = (reading.elapsed() - loaded - indexed).as_millis() as u64,
        "rebuild phases"
    );
    bar.finish_with_message("rebuilt");
    let undecodable = stats.undecodable.load(std::sync::atomic::Ordering::Relaxed);
    tracing::info!(views = ?views.iter().map(|v| v.name()).collect::<Vec<_>>(), records, undecodable,
        elapsed_ms = started.elapsed().as_millis() as u64, "rebuild swapped in");
    Ok(RebuildReport {
        views,
        records,
        undecodable,
        elapsed: started.elapsed(),
    })
}

/// Waits for the first chunk, then gives the tables their primary keys (later chunks and
/// the swap upsert). If a view's copy failed (Postgres refused a value), the chunk is
/// upserted again: the views that have it skip it (their offsets are stored), the others
/// apply it as a live batch, record by record if need be, skipping only what is refused.
async fn finish_first(
    pipeline: &mut Pipeline,
    pool: &PgPool,
    views: &[View],
    first: &mut Option<Arc<[Decoded]>>,
    pauser: &mut Pauser,
) -> Result<(), ProjectionError> {
    let flushed = pipeline.flush().await;
    loop {
        match tables::build_keys(pool, views).await {
            Ok(()) => break,
            Err(ProjectionError::Postgres(e)) if is_transient(&e) => pauser.failed(&e).await,
            Err(e) => return Err(e),
        }
    }
    pauser.succeeded();
    if let Err(error) = flushed {
        let Some(chunk) = first.take() else {
            return Err(error);
        };
        tracing::warn!(%error, "a view's bulk load was refused; upserting its first chunk instead");
        pipeline.submit_in(chunk, Mode::Fast).await?;
        pipeline.flush().await?;
    }
    *first = None;
    Ok(())
}

/// A connection per view (each writes its chunks on its own) and one for the swap.
fn rebuild_pool(database_url: &str, views: usize) -> Result<PgPool, ProjectionError> {
    Ok(sqlx::postgres::PgPoolOptions::new()
        .max_connections(u32::try_from(views + 1).unwrap_or(u32::MAX))
        // Index builds hold their connections for a while; the others wait.
        .acquire_timeout(Duration::from_secs(300))
        .connect_lazy(database_url)?)
}

fn note_positions(
    position: &mut HashMap<TopicPartition, i64>,
    records: &[crate::source::RawRecord],
) {
    for r in records {
        let next = position.entry((r.topic.clone(), r.partition)).or_insert(0);
        *next = (*next).max(r.offset + 1);
    }
}

/// Every partition has been read up to the end it had when the rebuild started. The
/// consumer's position counts too: after a transaction's commit marker (which is no
/// record) it is past the last record.
fn caught_up(
    source: &Source,
    ends: &BTreeMap<TopicPartition, i64>,
    position: &HashMap<TopicPartition, i64>,
) -> bool {
    let consumer_positions = source.positions();
    ends.iter().all(|(tp, end)| {
        let read = position.get(tp).copied().unwrap_or(0);
        let fetched = consumer_positions.get(tp).copied().unwrap_or(0);
        read.max(fetched) >= *end
    })
}

/// The swap transaction, retried whole while Postgres is away. The records it reads are
/// kept, so a retry applies them again. Returns how many it read.
async fn swap(
    pool: &PgPool,
    source: &Source,
    views: &[View],
    stats: &Stats,
    position: &mut HashMap<TopicPartition, i64>,
    pauser: &mut Pauser,
) -> Result<u64, ProjectionError> {
    let mut pending: Vec<Decoded> = Vec::new();
    loop {
        match try_swap(pool, source, views, stats, position, &mut pending).await {
            Ok(()) => {
                pauser.succeeded();
                return Ok(pending.len() as u64);
            }
            Err(e) if is_transient(&e) => pauser.failed(&e).await,
            Err(e) => return Err(e.into()),
        }
    }
}

async fn try_swap(
    pool: &PgPool,
    source: &Source,
    views: &[View],
    stats: &Stats,
    position: &mut HashMap<TopicPartition, i64>,
    pending: &mut Vec<Decoded>,
) -> Result<(), sqlx::Error> {
    let live_keys: Vec<String> = views.iter().map(|v| v.offsets_key(Tables::Live)).collect();
    let rebuild_keys: Vec<String> = views
        .iter()
        .map(|v| v.offsets_key(Tables::Rebuild))
        .collect();
    let mut tx = pool.begin().await?;
    // From here until commit the live runner cannot commit a batch of these views.
    let live = store::lock_offsets(&mut tx, &live_keys).await?;
    if !pending.is_empty() {
        store::apply_batch(
            &mut tx,
            views,
            Tables::Rebuild,
            pending,
            Mode::Careful,
            stats,
        )
        .await?;
    }
    // Read on until the rebuild has everything the live view has.
    loop {
        let rebuilt = store::read_offsets(&mut tx, &rebuild_keys).await?;
        let behind = live.iter().any(|((key, topic, partition), next)| {
            let rebuild_key = format!("{key}{}", Tables::Rebuild.suffix());
            let have = rebuilt
                .get(&(rebuild_key, topic.clone(), *partition))
                .copied()
                .unwrap_or(0);
            have < *next
        });
        if !behind {
            break;
        }
        let batch = source
            .next_batch(2000, Duration::from_millis(20), Duration::from_millis(200))
            .await;
        if batch.records.is_empty() {
            continue;
        }
        note_positions(position, &batch.records);
        store::wait_for_schemas(&batch.records).await;
        let decoded = store::decode(batch.records, source.names(), stats);
        store::apply_batch(
            &mut tx,
            views,
            Tables::Rebuild,
            &decoded,
            Mode::Careful,
            stats,
        )
        .await?;
        pending.extend(decoded);
    }
    let mut names = Vec::new();
    for view in views {
        for table in view.tables() {
            names.push((*table, tables::live_names(&mut tx, table).await?));
        }
    }
    for view in views {
        for table in view.tables() {
            let copy = Tables::Rebuild.name(table);
            let old = format!("{table}__old");
            sqlx::query(&format!("ALTER TABLE {table} RENAME TO {old}"))
                .execute(&mut *tx)
                .await?;
            sqlx::query(&format!("ALTER TABLE {copy} RENAME TO {table}"))
                .execute(&mut *tx)
                .await?;
            sqlx::query(&format!("DROP TABLE {old}"))
                .execute(&mut *tx)
                .await?;
        }
    }
    for (table, live) in &names {
        tables::swap_names(&mut tx, table, live).await?;
    }
    sqlx::query("DELETE FROM projection_offsets WHERE projection = ANY($1)")
        .bind(&live_keys)
        .execute(&mut *tx)
        .await?;
    for (live_key, rebuild_key) in live_keys.iter().zip(&rebuild_keys) {
        sqlx::query("UPDATE projection_offsets SET projection = $1, updated_at = now() WHERE projection = $2")
            .bind(live_key)
            .bind(rebuild_key)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await
}

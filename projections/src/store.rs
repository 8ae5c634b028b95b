//! Applying a batch to Postgres: the rows of every view it changes and the offsets it
//! consumed, in one transaction (exactly once into Postgres).
//!
//! Each view keeps its own offsets, and a record is applied to a view only if its offset
//! is at or past the view's stored next offset. So views may stand at different offsets
//! (a view just rebuilt may be ahead of the others) and one consumer still serves them
//! all: it reads from the smallest stored offset, and every view skips what it has.
//! The offsets are read `FOR UPDATE` at the start of the transaction, which serialises a
//! batch with a rebuild's swap of the same view.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use callstream_schemas::{decode_any, AnyEvent};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use sqlx::{PgConnection, Postgres, Transaction};

use crate::apply::{self, Located};
use crate::report::Skipped;
use crate::source::{RawRecord, TopicNames};
use crate::view::{Tables, View};

/// `(offsets key, physical topic, partition)` -> next offset to apply.
pub type Offsets = HashMap<(String, String, i32), i64>;

/// Counters of what the projections did, shared with whoever reports them.
#[derive(Debug)]
pub struct Stats {
    /// Records applied (or skipped as already applied) and committed.
    pub records: AtomicU64,
    /// Records that are not a callstream event (bad bytes, unknown schema): logged, skipped.
    pub undecodable: AtomicU64,
    /// Records whose rows Postgres refused for a reason retrying cannot fix: logged, skipped.
    pub unappliable: AtomicU64,
    /// Tombstones (null values on compacted topics): nothing to apply.
    pub tombstones: AtomicU64,
    /// Batches committed.
    pub batches: AtomicU64,
    /// Time to apply and commit one batch in one commit lane, outages included.
    pub commit_seconds: Histogram,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            records: AtomicU64::default(),
            undecodable: AtomicU64::default(),
            unappliable: AtomicU64::default(),
            tombstones: AtomicU64::default(),
            batches: AtomicU64::default(),
            // 1 ms .. ~16 s.
            commit_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 15)),
        }
    }
}

/// A record decoded once for every view.
pub struct Decoded {
    pub raw: RawRecord,
    pub logical: &'static str,
    pub event: Option<AnyEvent>,
    /// Why the bytes are not an event, when they are not (and it is not a dead letter).
    pub undecodable: Option<String>,
}

/// Holds a batch while a record in it names a schema id the process does not know and the
/// schema registry does not answer for it: such a record is a newer writer's, readable once
/// its schema is fetched, and must not be skipped as undecodable for the registry's absence.
/// Without a registry (or for an id it has no usable schema for) it returns at once and the
/// decode says why.
pub async fn wait_for_schemas(records: &[RawRecord]) {
    use callstream_schemas::wire::{self, Resolution};
    let unknown: std::collections::BTreeSet<u32> = records
        .iter()
        .filter(|r| r.letter.is_none())
        .filter_map(|r| r.payload.as_deref().and_then(wire::schema_id))
        .filter(|id| !wire::knows_id(*id))
        .collect();
    for id in unknown {
        let mut backoff = std::time::Duration::from_millis(500);
        loop {
            let found = tokio::task::spawn_blocking(move || wire::resolve(id))
                .await
                .unwrap_or(Resolution::Unavailable);
            if found != Resolution::Unavailable {
                break;
            }
            tracing::warn!(id, retry_in = ?backoff, "records name a schema id the registry has not given yet; holding the batch");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(std::time::Duration::from_secs(15));
        }
    }
}

/// Decodes a batch; what does not decode is counted and logged with its coordinates
/// (never its bytes), and stays in the batch so its offset is still stored.
pub fn decode(records: Vec<RawRecord>, names: &TopicNames, stats: &Stats) -> Vec<Decoded> {
    records
        .into_iter()
        .filter_map(|raw| {
            let logical = names.logical(&raw.topic)?;
            let mut undecodable = None;
            let event = match raw.payload.as_deref() {
                None => {
                    stats.tombstones.fetch_add(1, Ordering::Relaxed);
                    None
                }
                Some(bytes) => match decode_any(bytes) {
                    Ok(event) => Some(event),
                    // A dead letter may be any bytes: that is often why it is one.
                    Err(_) if raw.letter.is_some() => None,
                    Err(error) => {
                        stats.undecodable.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(
                            topic = %raw.topic, partition = raw.partition, offset = raw.offset,
                            %error, "undecodable record skipped"
                        );
                        undecodable = Some(error.to_string());
                        None
                    }
                },
            };
            Some(Decoded {
                raw,
                logical,
                event,
                undecodable,
            })
        })
        .collect()
}

/// Reads the stored offsets of the given keys, locking them for this transaction.
pub async fn lock_offsets(
    conn: &mut PgConnection,
    keys: &[String],
) -> Result<Offsets, sqlx::Error> {
    let rows: Vec<(String, String, i32, i64)> = sqlx::query_as(
        "SELECT projection, topic, partition, next_offset FROM projection_offsets
         WHERE projection = ANY($1) ORDER BY projection, topic, partition FOR UPDATE",
    )
    .bind(keys)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(k, t, p, o)| ((k, t, p), o))
        .collect())
}

/// Whether to wrap each record in a savepoint, so one that Postgres refuses is skipped
/// instead of failing the batch (used after a batch failed for a non-transient reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Fast,
    Careful,
    /// `Fast` into tables that hold none of the batch's rows yet (a rebuild's first load
    /// into its empty tables): the same rows, written with `COPY`.
    Load,
}

/// Applies a batch to `views` (writing `tables`) inside an open transaction and stores
/// the offsets; the caller commits. Returns the records a view refused and skipped
/// (only in `Careful` mode; `Fast` fails the whole batch instead).
///
/// `Fast` gives each view the batch's new records at once (a few statements per view);
/// `Careful` gives them one at a time, each in a savepoint, so a record Postgres refuses
/// is skipped alone. Both leave the same rows (see [`apply`](crate::apply)).
pub async fn apply_batch(
    tx: &mut Transaction<'_, Postgres>,
    views: &[View],
    tables: Tables,
    batch: &[Decoded],
    mode: Mode,
    stats: &Stats,
) -> Result<Vec<Skipped>, sqlx::Error> {
    let keys: Vec<String> = views.iter().map(|v| v.offsets_key(tables)).collect();
    let mut skipped = Vec::new();
    let stored = lock_offsets(tx, &keys).await?;
    let mut next: Offsets = HashMap::new();
    let mut taken: Offsets = HashMap::new();
    // Where a batch's time goes, per view (debug log): the first thing to look at when the
    // projections fall behind.
    let mut spent = Vec::with_capacity(views.len());
    for (view, key) in views.iter().zip(&keys) {
        let started = Instant::now();
        let (records, letters, moved) = new_records(*view, key, &stored, batch);
        for ((topic, partition), (offset, count)) in moved {
            let coordinates = (key.clone(), topic.to_string(), partition);
            next.insert(coordinates.clone(), offset);
            taken.insert(coordinates, count);
        }
        match mode {
            Mode::Fast => apply::apply(tx, *view, tables, &records, &letters).await?,
            Mode::Load => apply::load(tx, *view, tables, &records, &letters).await?,
            Mode::Careful => {
                // The letters in one statement (their text is cleaned of what Postgres
                // refuses), then each event in its own savepoint.
                apply::apply(tx, *view, tables, &[], &letters).await?;
                for record in &records {
                    let mut savepoint = sqlx::Connection::begin(&mut **tx).await?;
                    let one = std::slice::from_ref(record);
                    match apply::apply(&mut savepoint, *view, tables, one, &[]).await {
                        Ok(()) => savepoint.commit().await?,
                        Err(e) if crate::error::is_transient(&e) => return Err(e),
                        Err(error) => {
                            savepoint.rollback().await?;
                            stats.unappliable.fetch_add(1, Ordering::Relaxed);
                            tracing::error!(
                                view = %view, topic = %record.topic, partition = record.partition,
                                offset = record.offset, %error, "record refused by postgres; skipped"
                            );
                            skipped.push(Skipped::refused(
                                view.name(),
                                record.topic,
                                record.partition,
                                record.offset,
                                record.event,
                                error.to_string(),
                            ));
                        }
                    }
                }
            }
        }
        spent.push(format!("{view}={}", started.elapsed().as_millis()));
    }
    store_offsets(tx, &stored, &next, &taken).await?;
    tracing::debug!(records = batch.len(), ?mode, ms = %spent.join(" "), "batch applied");
    Ok(skipped)
}

/// `(physical topic, partition)` -> `(next offset, records taken)` of one view in a batch.
type Moved<'a> = HashMap<(&'a str, i32), (i64, i64)>;

/// The records of a batch that a view reads and has not applied yet (in batch order): its
/// events, the dead letters among them (only the dead-letters view reads their topic), and
/// where each of its partitions moves to.
fn new_records<'a>(
    view: View,
    key: &str,
    stored: &Offsets,
    batch: &'a [Decoded],
) -> (Vec<Located<'a>>, Vec<&'a Decoded>, Moved<'a>) {
    let mut records = Vec::new();
    let mut letters = Vec::new();
    let mut moved: Moved<'a> = HashMap::new();
    // The stored offset of each partition, looked up once per partition, not per record.
    let mut from: HashMap<(&'a str, i32), i64> = HashMap::new();
    for record in batch {
        if !view.topics().contains(&record.logical) {
            continue;
        }
        let raw = &record.raw;
        let tp = (&*raw.topic, raw.partition);
        let from = *from.entry(tp).or_insert_with(|| {
            stored
                .get(&(key.to_owned(), raw.topic.to_string(), raw.partition))
                .copied()
                .unwrap_or(0)
        });
        let (next, count) = moved.entry(tp).or_insert((from, 0));
        *next = (*next).max(raw.offset + 1);
        if raw.offset < from {
            continue; // the view already has it
        }
        *count += 1;
        if raw.letter.is_some() {
            letters.push(record);
        }
        if let Some(event) = &record.event {
            records.push(Located {
                topic: &raw.topic,
                partition: raw.partition,
                offset: raw.offset,
                event,
            });
        }
    }
    (records, letters, moved)
}

/// Writes the offsets that moved, and adds the records taken to each partition's count.
pub async fn store_offsets(
    conn: &mut PgConnection,
    stored: &Offsets,
    next: &Offsets,
    taken: &Offsets,
) -> Result<(), sqlx::Error> {
    let mut keys = Vec::new();
    let mut topics = Vec::new();
    let mut partitions = Vec::new();
    let mut offsets = Vec::new();
    let mut counts = Vec::new();
    for (coordinates, offset) in next {
        if stored.get(coordinates) == Some(offset) {
            continue;
        }
        let (key, topic, partition) = coordinates;
        keys.push(key.clone());
        topics.push(topic.clone());
        partitions.push(*partition);
        offsets.push(*offset);
        counts.push(taken.get(coordinates).copied().unwrap_or(0));
    }
    if keys.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO projection_offsets (projection, topic, partition, next_offset, records)
         SELECT * FROM UNNEST($1::text[], $2::text[], $3::int[], $4::bigint[], $5::bigint[])
         ON CONFLICT (projection, topic, partition) DO UPDATE SET
             next_offset = GREATEST(projection_offsets.next_offset, EXCLUDED.next_offset),
             records = projection_offsets.records + EXCLUDED.records,
             updated_at = now()",
    )
    .bind(keys)
    .bind(topics)
    .bind(partitions)
    .bind(offsets)
    .bind(counts)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The stored offsets of some keys, without locking (for start-up and progress).
pub async fn read_offsets(
    conn: &mut PgConnection,
    keys: &[String],
) -> Result<Offsets, sqlx::Error> {
    let rows: Vec<(String, String, i32, i64)> = sqlx::query_as(
        "SELECT projection, topic, partition, next_offset FROM projection_offsets
         WHERE projection = ANY($1)",
    )
    .bind(keys)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(k, t, p, o)| ((k, t, p), o))
        .collect())
}

//! Rebuilds against the real broker: a view rebuilt from offset 0 while the live
//! projection keeps running under load equals a projection that was never rebuilt, the
//! live tables answer queries all through the rebuild, a rebuild in many chunks (the first
//! copied into the empty tables, the rest merged by upserts) equals one in one piece, and a
//! rebuild over transactional topics (whose last offset is a commit marker, not a record)
//! still finishes.

mod support;

use std::time::Duration;

use anyhow::Result;
use callstream_projections::{rebuild, run, View};
use rdkafka::producer::{FutureRecord, Producer};
use rdkafka::util::Timeout;
use support::events::workload;
use support::*;

fn spawn_live(
    db: &TestDb,
    topics: &callstream_platform::Topics,
) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let config = config(db, topics);
    tokio::spawn(run(config, async {
        let _ = stopped.await;
    }));
    stop
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebuild_under_load_equals_a_view_never_rebuilt() -> Result<()> {
    let rebuilt = TestDb::new().await?;
    let reference = TestDb::new().await?;
    let topics = topics().await?;
    let _stop_a = spawn_live(&rebuilt, &topics);
    let _stop_b = spawn_live(&reference, &topics);

    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    let base = chrono::Utc::now();
    let (first, x) = workload("tenant-r", 60, base);
    produce_all(&producer, &topics, &first, &mut produced).await?;
    produce_letters(&producer, &topics, "tenant-r", 6, &mut produced).await?;
    wait_caught_up(
        &rebuilt.pool,
        &topics,
        View::ALL,
        &produced,
        Duration::from_secs(60),
    )
    .await?;

    // Rebuild every view while more events arrive and readers keep reading.
    let (second, _) = workload("tenant-s", 60, base);
    let load = {
        let (producer, topics) = (producer.clone(), topics.clone());
        tokio::spawn(async move {
            let mut produced = Produced::new();
            produce_all(&producer, &topics, &second, &mut produced)
                .await
                .map(|()| produced)
        })
    };
    let reader = {
        let pool = rebuilt.pool.clone();
        tokio::spawn(async move {
            let mut reads = 0u32;
            loop {
                let n: i64 =
                    sqlx::query_scalar("SELECT count(*) FROM jobs WHERE tenant_id = 'tenant-r'")
                        .fetch_one(&pool)
                        .await?;
                anyhow::ensure!(
                    n == x.jobs,
                    "jobs of tenant-r read as {n} during the rebuild"
                );
                reads += 1;
                if reads > 10_000 {
                    return Ok(reads);
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let report = rebuild(config(&rebuilt, &topics), &[], false).await?;
    assert_eq!(report.views, View::ALL.to_vec());
    assert!(report.records > 0);
    for (tp, offset) in load.await?? {
        let last = produced.entry(tp).or_insert(offset);
        *last = (*last).max(offset);
    }
    reader.abort();
    if let Ok(result) = reader.await {
        result?;
    }
    wait_caught_up(
        &rebuilt.pool,
        &topics,
        View::ALL,
        &produced,
        Duration::from_secs(60),
    )
    .await?;
    wait_caught_up(
        &reference.pool,
        &topics,
        View::ALL,
        &produced,
        Duration::from_secs(60),
    )
    .await?;

    for view in View::ALL {
        for table in view.tables() {
            let a = table_rows(&rebuilt.pool, table).await?;
            let b = table_rows(&reference.pool, table).await?;
            assert!(!a.is_empty(), "{table} is empty");
            let only_a: Vec<_> = a.iter().filter(|r| !b.contains(r)).take(3).collect();
            let only_b: Vec<_> = b.iter().filter(|r| !a.contains(r)).take(3).collect();
            assert!(
                only_a.is_empty() && only_b.is_empty() && a.len() == b.len(),
                "{table} differs after the rebuild:\nrebuilt only: {only_a:#?}\nnever rebuilt only: {only_b:#?}"
            );
        }
    }
    // No rebuild tables are left behind.
    let left: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_tables WHERE tablename LIKE '%\\_\\_rebuild' OR tablename LIKE '%\\_\\_old'",
    )
    .fetch_one(&rebuilt.pool)
    .await?;
    assert_eq!(left, 0);
    Ok(())
}

/// Every table of two databases, row for row.
async fn assert_same_tables(a: &TestDb, b: &TestDb, what: &str) -> Result<()> {
    for view in View::ALL {
        for table in view.tables() {
            let rows_a = table_rows(&a.pool, table).await?;
            let rows_b = table_rows(&b.pool, table).await?;
            assert!(!rows_a.is_empty(), "{table} is empty");
            let only_a: Vec<_> = rows_a
                .iter()
                .filter(|r| !rows_b.contains(r))
                .take(3)
                .collect();
            let only_b: Vec<_> = rows_b
                .iter()
                .filter(|r| !rows_a.contains(r))
                .take(3)
                .collect();
            assert!(
                only_a.is_empty() && only_b.is_empty() && rows_a.len() == rows_b.len(),
                "{table} differs ({what}):\nfirst only: {only_a:#?}\nsecond only: {only_b:#?}"
            );
        }
    }
    Ok(())
}

/// The rebuild folds each row over a whole chunk of the log in memory and writes it once
/// (`COPY` into the empty tables for the first chunk, upserts after): whatever the chunk
/// size, the rows equal the live view's, on a workload whose rows change many times and
/// where some events are on the log twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_in_chunks_equals_one_in_one_piece_and_the_live_view() -> Result<()> {
    let live = TestDb::new().await?;
    let whole = TestDb::new().await?;
    let chunked = TestDb::new().await?;
    let topics = topics().await?;
    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    let (events, _) = workload("tenant-c", 40, chrono::Utc::now());
    produce_all(&producer, &topics, &events, &mut produced).await?;
    // Every fifth event once more (a replay, a producer's retry without idempotence).
    let again: Vec<_> = events.iter().step_by(5).cloned().collect();
    produce_all(&producer, &topics, &again, &mut produced).await?;
    produce_letters(&producer, &topics, "tenant-c", 4, &mut produced).await?;
    let running = Live::start(&live, &topics);
    caught_up(&live, &topics, &produced).await?;
    running.stop().await?;

    let report = rebuild(config(&whole, &topics), &[], false).await?;
    assert!(report.records > 0);
    let mut small = config(&chunked, &topics);
    small.rebuild_batch_records = 40;
    small.rebuild_fold_records = 97;
    let report = rebuild(small, &[], false).await?;
    assert!(report.records > 97 * 3, "the log fits one chunk of 97");

    assert_same_tables(&whole, &live, "one chunk vs live").await?;
    assert_same_tables(&chunked, &live, "chunks of 97 vs live").await?;
    for db in [&whole, &chunked] {
        let rebuilt: i64 = count(&db.pool, "projection_offsets", "").await?;
        let applied: i64 = count(&live.pool, "projection_offsets", "").await?;
        assert_eq!(rebuilt, applied, "offsets rows");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_view_rebuilds_alone_and_over_transactional_topics() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let (events, x) = workload("tenant-t", 20, chrono::Utc::now());
    // Every record in transactions, as the processors write them: each partition ends
    // with a commit marker.
    let mut txn_config = callstream_e2e::client_config();
    txn_config.set("transactional.id", callstream_e2e::unique_name("proj-txn"));
    let producer: rdkafka::producer::FutureProducer = txn_config.create()?;
    producer.init_transactions(Timeout::After(Duration::from_secs(30)))?;
    for chunk in events.chunks(25) {
        producer.begin_transaction()?;
        for event in chunk {
            let (topic, key) = route(&topics, event);
            let bytes = event.encode()?;
            producer
                .send(
                    FutureRecord::to(&topic).key(&key).payload(&bytes),
                    Timeout::Never,
                )
                .await
                .map_err(|(e, _)| e)?;
        }
        producer.commit_transaction(Timeout::After(Duration::from_secs(30)))?;
    }
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        rebuild(config(&db, &topics), &[View::Jobs], false),
    )
    .await??;
    assert_eq!(report.views, vec![View::Jobs]);
    assert_eq!(count(&db.pool, "jobs", "").await?, x.jobs);
    // Only the jobs view was built.
    assert_eq!(count(&db.pool, "exceptions", "").await?, 0);
    assert_eq!(
        count(&db.pool, "projection_offsets", "projection <> 'jobs'").await?,
        0
    );
    Ok(())
}

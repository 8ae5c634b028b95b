//! The live projections against the real broker and a fresh Postgres database: a whole
//! workload lands in every view with the right counts; records that are not events are
//! counted, skipped and each opens an exception, as does an event Postgres refuses; SIGKILL mid-batch, repeatedly, under load, loses and repeats
//! nothing (the per-partition record counts stored with the offsets equal what the topics
//! hold).

mod support;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use callstream_projections::{run_with_stats, Stats, View};
use rand::Rng;
use support::events::{workload, Expected};
use support::*;

async fn assert_views(db: &TestDb, tenant: &str, x: &Expected) -> Result<()> {
    let t = format!("tenant_id = '{tenant}'");
    let checks = [
        ("jobs", t.clone(), x.jobs),
        (
            "jobs",
            format!("{t} AND state = 'completed'"),
            x.completed_jobs,
        ),
        (
            "jobs",
            format!("{t} AND state = 'cancelled'"),
            x.cancelled_jobs,
        ),
        (
            "jobs",
            format!("{t} AND state = 'replaced' AND replaced_by_job_id IS NOT NULL"),
            x.replaced_jobs,
        ),
        (
            "jobs",
            format!("{t} AND replaces_job_id IS NOT NULL"),
            x.replaced_jobs,
        ),
        ("launches", t.clone(), x.launches),
        (
            "launches",
            format!("{t} AND missing_at IS NOT NULL AND resolution IS NULL"),
            x.missing_open,
        ),
        ("exceptions", t.clone(), x.exceptions),
        (
            "exceptions",
            format!("{t} AND status = 'open'"),
            x.open_exceptions,
        ),
        (
            "slots",
            format!("{t} AND allocated AND NOT cancelled"),
            x.booked_slots,
        ),
        ("commands", t.clone(), x.commands),
        ("contact_timeline", t.clone(), x.timeline),
    ];
    for (table, condition, expected) in checks {
        assert_eq!(
            count(&db.pool, table, &condition).await?,
            expected,
            "{table} WHERE {condition}"
        );
    }
    let accepted: Option<i64> = sqlx::query_scalar(
        "SELECT sum(accepted)::bigint FROM delivery_buckets WHERE tenant_id = $1",
    )
    .bind(tenant)
    .fetch_one(&db.pool)
    .await?;
    assert_eq!(
        accepted,
        Some(x.launches),
        "delivery buckets count every accepted launch"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_lands_in_every_view_and_bad_records_are_skipped() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let stats = Arc::new(Stats::default());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run_with_stats(config(&db, &topics), stats.clone(), async {
        let _ = stopped.await;
    }));

    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    let base = chrono::Utc::now();
    let (a, xa) = workload("tenant-a", 40, base);
    let (b, xb) = workload("tenant-b", 15, base);
    produce_all(&producer, &topics, &a, &mut produced).await?;
    // Not events: garbage, and a well-formed header with an unknown fingerprint.
    let jobs_topic = topics.name(callstream_platform::topics::SCHEDULE_EVENTS);
    produce_raw(&producer, &jobs_topic, "x", b"not avro", &mut produced).await?;
    produce_raw(
        &producer,
        &jobs_topic,
        "x",
        &[0xC3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0],
        &mut produced,
    )
    .await?;
    // An event Postgres refuses (text may not hold a NUL byte): every view that reads it
    // skips it.
    let mut refused = callstream_e2e::fixtures::exception(
        "tenant-nul",
        "c-nul",
        uuid::Uuid::new_v4(),
        callstream_schemas::ExceptionStatus::Open,
        callstream_schemas::ExceptionType::NoSlot,
        callstream_schemas::Actor::system("scheduler"),
        base,
    );
    refused.detail = Some("a NUL \0 byte".into());
    produce_all(&producer, &topics, &[refused.into()], &mut produced).await?;
    produce_all(&producer, &topics, &b, &mut produced).await?;
    wait_caught_up(
        &db.pool,
        &topics,
        View::ALL,
        &produced,
        Duration::from_secs(60),
    )
    .await?;

    assert_views(&db, "tenant-a", &xa).await?;
    assert_views(&db, "tenant-b", &xb).await?;
    assert_eq!(stats.undecodable.load(Ordering::Relaxed), 2);
    assert!(stats.unappliable.load(Ordering::Relaxed) >= 1);
    // Each skip opened an unappliable_record exception on the topic, which the views read
    // back: the two that are not events under no tenant, the refused one under its own.
    let skipped = |tenant: &'static str| {
        let pool = db.pool.clone();
        async move {
            count(
                &pool,
                "exceptions",
                &format!(
                    "tenant_id = '{tenant}' AND exception_type = 'unappliable_record' \
                     AND status = 'open'"
                ),
            )
            .await
        }
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while (skipped("*").await?, skipped("tenant-nul").await?) != (2, 1) {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "unappliable exceptions: {} without a tenant, {} of tenant-nul",
            skipped("*").await?,
            skipped("tenant-nul").await?
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let contact: String = sqlx::query_scalar(
        "SELECT contact_id FROM exceptions WHERE tenant_id = 'tenant-nul' \
         AND exception_type = 'unappliable_record'",
    )
    .fetch_one(&db.pool)
    .await?;
    assert_eq!(contact, "c-nul", "the refused event names its contact");
    let _ = stop.send(());
    task.await??;
    Ok(())
}

/// Entry point of the child process the kill test starts and kills; does nothing when run
/// any other way.
#[test]
#[ignore = "started by kill_mid_batch_repeatedly_loses_and_repeats_nothing as a child process"]
fn child_projection_process() -> Result<()> {
    if std::env::var_os("CALLSTREAM_PROJECTIONS_CHILD").is_none() {
        return Ok(());
    }
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let mut config = callstream_projections::ProjectionsConfig::from_env()?;
        config.batch_max_records = 50;
        config.batch_max_wait = Duration::from_millis(5);
        config.metadata_interval = Duration::from_millis(300);
        callstream_projections::run(config, std::future::pending()).await?;
        Ok(())
    })
}

fn start_child(db: &TestDb, topics: &callstream_platform::Topics) -> Result<Child> {
    Ok(Command::new(std::env::current_exe()?)
        .args([
            "--exact",
            "child_projection_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CALLSTREAM_PROJECTIONS_CHILD", "1")
        // Not the default admin port: other runs on this machine may hold it.
        .env("CALLSTREAM_PROJECTIONS_ADMIN_LISTEN", "none")
        .env("DATABASE_URL", &db.url)
        .env(
            "KAFKA_BOOTSTRAP_SERVERS",
            callstream_e2e::bootstrap_servers(),
        )
        .env("CALLSTREAM_TOPIC_PREFIX", &topics.prefix)
        .env("CALLSTREAM_TOPIC_PARTITIONS", PARTITIONS.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_mid_batch_repeatedly_loses_and_repeats_nothing() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    let base = chrono::Utc::now();
    let mut expected = Vec::new();
    let mut child = start_child(&db, &topics)?;
    let mut kills_under_load = 0;
    for round in 0..6 {
        let tenant = format!("tenant-{round}");
        let (events, x) = workload(&tenant, 60, base);
        let load = {
            let producer = producer.clone();
            let topics = topics.clone();
            tokio::spawn(async move {
                let mut produced = Produced::new();
                produce_all(&producer, &topics, &events, &mut produced)
                    .await
                    .map(|()| produced)
            })
        };
        // Kill while the load is being applied: once the child has committed something of
        // this round, at a random moment after.
        let before = records_taken(&db).await?;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while records_taken(&db).await? == before && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let pause = rand::rng().random_range(0..150);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        child.kill()?; // SIGKILL
        if !load.is_finished() {
            kills_under_load += 1;
        }
        child.wait()?;
        for (tp, offset) in load.await?? {
            let last = produced.entry(tp).or_insert(offset);
            *last = (*last).max(offset);
        }
        expected.push((tenant, x));
        child = start_child(&db, &topics)?;
    }
    let caught_up = wait_caught_up(
        &db.pool,
        &topics,
        View::ALL,
        &produced,
        Duration::from_secs(120),
    )
    .await;
    child.kill()?;
    child.wait()?;
    caught_up?;
    assert!(
        kills_under_load >= 3,
        "only {kills_under_load} kills happened under load"
    );
    for (tenant, x) in &expected {
        assert_views(&db, tenant, x).await?;
    }
    // Exactly once: every view took each record of each partition once, crashes or not.
    let rows: Vec<(String, String, i32, i64, i64)> = sqlx::query_as(
        "SELECT projection, topic, partition, next_offset, records FROM projection_offsets",
    )
    .fetch_all(&db.pool)
    .await?;
    assert!(!rows.is_empty());
    for (view, topic, partition, next, records) in rows {
        // The producer is idempotent, not transactional: offsets are dense.
        assert_eq!(records, next, "{view} {topic}/{partition}");
        assert_eq!(
            Some(&(next - 1)),
            produced.get(&(topic.clone(), partition)),
            "{view} {topic}/{partition}"
        );
    }
    Ok(())
}

async fn records_taken(db: &TestDb) -> Result<i64> {
    let n: Option<i64> = sqlx::query_scalar("SELECT sum(records)::bigint FROM projection_offsets")
        .fetch_one(&db.pool)
        .await?;
    Ok(n.unwrap_or(0))
}

/// Every permanent failure the registry (`callstream_domain::failures`) gives the
/// projections opens its exception (on the broker: see
/// `a_workload_lands_in_every_view_and_bad_records_are_skipped`); here, each kind's
/// exception is what an operator needs.
#[test]
fn every_permanent_failure_of_the_projections_opens_an_exception() {
    use callstream_domain::failures::{Owner, PermanentFailure};
    use callstream_e2e::failures::{assert_opened, no_scenario};
    use callstream_projections::report::Skipped;
    let at = chrono::Utc::now();
    for failure in PermanentFailure::of(Owner::Projections) {
        match failure {
            PermanentFailure::UnappliableRecord => {
                let event = callstream_e2e::fixtures::exception(
                    "acme",
                    "c-1",
                    uuid::Uuid::new_v4(),
                    callstream_schemas::ExceptionStatus::Open,
                    callstream_schemas::ExceptionType::NoSlot,
                    callstream_schemas::Actor::system("scheduler"),
                    at,
                );
                let refused =
                    Skipped::refused("jobs", "t", 0, 7, &event.into(), "22021: NUL".into());
                let undecodable = Skipped::undecodable("t", 1, 8, "not avro".into());
                for skip in [refused, undecodable] {
                    let e = assert_opened(failure, &[skip.exception(at)]);
                    assert_eq!(
                        e.exception_id,
                        callstream_domain::ids::view::unappliable_record(
                            "t",
                            skip.partition,
                            skip.offset
                        )
                    );
                    assert!(!skip.is_own_kind);
                }
            }
            other => no_scenario("the projections", other),
        }
    }
}

/// The timeline inserts a batch's events without `ON CONFLICT` and falls back to it when
/// the batch repeats an event the table already holds: events on the log again, read in a
/// later batch, leave the timeline as it was and refuse nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_on_the_log_again_in_a_later_batch_leave_the_timeline_as_it_was() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    let (events, _) = workload("tenant-r", 12, chrono::Utc::now());
    produce_all(&producer, &topics, &events, &mut produced).await?;
    let running = Live::start(&db, &topics);
    caught_up(&db, &topics, &produced).await?;
    let timeline = table_rows(&db.pool, "contact_timeline").await?;
    let exceptions = table_rows(&db.pool, "exceptions").await?;
    assert!(!timeline.is_empty());

    // Every third event again, after the first ones were applied: a later batch.
    let again: Vec<_> = events.iter().step_by(3).cloned().collect();
    produce_all(&producer, &topics, &again, &mut produced).await?;
    caught_up(&db, &topics, &produced).await?;
    running.stop().await?;
    assert_eq!(
        table_rows(&db.pool, "contact_timeline").await?,
        timeline,
        "the timeline changed when events came again"
    );
    assert_eq!(
        table_rows(&db.pool, "exceptions").await?,
        exceptions,
        "a record was refused (and reported) when events came again"
    );
    Ok(())
}

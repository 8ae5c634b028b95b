//! Shared helpers of the projections' tests, against the real dev stack: a fresh
//! Postgres database per test (dropped at the end), topics behind a unique prefix, event
//! builders, and waiting until a view has consumed what was produced.

#![allow(dead_code)] // each test file uses part of this module

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callstream_e2e::postgres::TestDatabase;
use callstream_platform::{admin, KafkaSettings, Topics};
use callstream_projections::{ProjectionsConfig, View};
use callstream_schemas::{AnyEvent, Event};
use rdkafka::producer::FutureProducer;
use sqlx::postgres::PgPool;

pub mod events;

/// A database of its own with the migrations applied, dropped when this is dropped.
pub struct TestDb(TestDatabase);

impl TestDb {
    /// Creates `callstream_test_<random>` and applies the migrations.
    pub async fn new() -> Result<Self> {
        let db = TestDatabase::create("callstream_test").await?;
        callstream_projections::migrate(&db.pool).await?;
        Ok(Self(db))
    }
}

impl std::ops::Deref for TestDb {
    type Target = TestDatabase;
    fn deref(&self) -> &TestDatabase {
        &self.0
    }
}

pub const PARTITIONS: i32 = 3;

/// Topics behind a unique prefix, all created, with few partitions (tests are small).
pub async fn topics() -> Result<Topics> {
    let mut topics = Topics::with_prefix(format!("{}-", callstream_e2e::unique_name("proj")));
    topics.partitions = PARTITIONS;
    let settings = kafka();
    admin::ensure_topics(&settings, &topics.specs()).await?;
    Ok(topics)
}

pub fn kafka() -> KafkaSettings {
    KafkaSettings::new(callstream_e2e::bootstrap_servers(), "projections-test")
}

/// A config for a test database and topics, with short batches and retries.
pub fn config(db: &TestDb, topics: &Topics) -> ProjectionsConfig {
    let mut config = ProjectionsConfig::new(db.url.clone(), kafka(), topics.clone());
    config.batch_max_wait = Duration::from_millis(20);
    config.batch_max_records = 200;
    config.retry_initial = Duration::from_millis(50);
    config.retry_max = Duration::from_millis(500);
    config.metadata_interval = Duration::from_millis(500);
    config
}

/// The physical topic an event type goes to, and its key.
pub fn route(topics: &Topics, event: &AnyEvent) -> (String, String) {
    use callstream_platform::topics as t;
    let env = event.envelope();
    let (logical, key) = match event {
        AnyEvent::CallEvent(e) => (t::CALL_EVENTS, e.contact_id.clone()),
        AnyEvent::ContactCommand(e) => (t::CONTACT_COMMANDS, e.contact_id.clone()),
        AnyEvent::ScheduleRequest(_) => (t::SCHEDULE_REQUESTS, env.tenant_id.to_string()),
        AnyEvent::ScheduleEvent(_) => (t::SCHEDULE_EVENTS, env.tenant_id.to_string()),
        AnyEvent::LaunchCommand(e) => (t::LAUNCH_COMMANDS, e.contact_id.clone()),
        AnyEvent::CallLaunch(e) => (t::CALL_LAUNCHES, e.contact_id.clone()),
        AnyEvent::CompletionMissing(e) => (t::COMPLETION_MISSING, e.contact_id.clone()),
        AnyEvent::CompletionResolved(e) => (t::COMPLETION_RESOLVED, e.contact_id.clone()),
        AnyEvent::CrmCommand(e) => (t::CRM_COMMANDS, e.contact_id.clone()),
        AnyEvent::CrmResult(e) => (t::CRM_RESULTS, e.contact_id.clone()),
        AnyEvent::ExceptionEvent(e) => (t::EXCEPTIONS, e.contact_id.clone()),
        AnyEvent::ControlChange(e) => (t::CONTROL, e.record_key()),
        AnyEvent::Alert(_) => (t::ALERTS, env.tenant_id.to_string()),
        AnyEvent::AuditEvent(_) => (t::AUDIT, env.tenant_id.to_string()),
        AnyEvent::ContactState(e) => (t::CONTACT_STATE, e.contact_id.clone()),
        AnyEvent::Notification(e) => (t::NOTIFICATIONS, e.channel.clone()),
    };
    (topics.name(logical), key)
}

/// The last offset produced per `(topic, partition)`.
pub type Produced = HashMap<(String, i32), i64>;

/// Produces events (acknowledged one by one) and notes where they went.
pub async fn produce_all(
    producer: &FutureProducer,
    topics: &Topics,
    events: &[AnyEvent],
    produced: &mut Produced,
) -> Result<()> {
    for event in events {
        let (topic, key) = route(topics, event);
        let bytes = event.encode()?;
        let (partition, offset) = callstream_e2e::produce(producer, &topic, &key, &bytes).await?;
        let last = produced.entry((topic, partition)).or_insert(offset);
        *last = (*last).max(offset);
    }
    Ok(())
}

/// Produces `n` dead letters of `tenant`, as the runtime writes them (the failed record's
/// key and value, `dlq-*` headers): every other one's value is a callstream event (a
/// contact command of the tenant), the rest bytes no schema reads.
pub async fn produce_letters(
    producer: &FutureProducer,
    topics: &Topics,
    tenant: &str,
    n: usize,
    produced: &mut Produced,
) -> Result<()> {
    let topic = topics.name(callstream_platform::topics::DEAD_LETTERS);
    for i in 0..n {
        let contact = format!("dl{i}");
        let value = if i % 2 == 0 {
            AnyEvent::from(events::operator_command(
                tenant,
                &contact,
                chrono::Utc::now(),
            ))
            .encode()?
        } else {
            b"\x00not an event".to_vec()
        };
        let source = format!(
            "{}/0/{i}",
            topics.name(callstream_platform::topics::CONTACT_COMMANDS)
        );
        let why = (
            "contact",
            "record",
            source.as_str(),
            "the processor refused it",
        );
        let traceparent = [(
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        )];
        let (partition, offset) =
            callstream_e2e::park_dead_letter(producer, &topic, &contact, &value, why, &traceparent)
                .await?;
        let last = produced.entry((topic.clone(), partition)).or_insert(offset);
        *last = (*last).max(offset);
    }
    Ok(())
}

/// Produces raw bytes (not an event) to a topic.
pub async fn produce_raw(
    producer: &FutureProducer,
    topic: &str,
    key: &str,
    bytes: &[u8],
    produced: &mut Produced,
) -> Result<()> {
    let (partition, offset) = callstream_e2e::produce(producer, topic, key, bytes).await?;
    let last = produced
        .entry((topic.to_string(), partition))
        .or_insert(offset);
    *last = (*last).max(offset);
    Ok(())
}

/// Waits until every view in `views` has stored offsets past everything produced to the
/// topics it reads.
pub async fn wait_caught_up(
    pool: &PgPool,
    topics: &Topics,
    views: &[View],
    produced: &Produced,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let rows: Vec<(String, String, i32, i64)> = sqlx::query_as(
            "SELECT projection, topic, partition, next_offset FROM projection_offsets",
        )
        .fetch_all(pool)
        .await
        .unwrap_or_default();
        let stored: HashMap<(String, String, i32), i64> = rows
            .into_iter()
            .map(|(v, t, p, o)| ((v, t, p), o))
            .collect();
        let behind = views.iter().any(|view| {
            view.topics().iter().any(|logical| {
                let topic = topics.name(logical);
                produced
                    .iter()
                    .filter(|((t, _), _)| *t == topic)
                    .any(|((t, p), last)| {
                        stored
                            .get(&(view.name().to_string(), t.clone(), *p))
                            .is_none_or(|next| next <= last)
                    })
            })
        });
        if !behind {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("views not caught up within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every row of a table, as JSON text, sorted: for comparing two tables.
pub async fn table_rows(pool: &PgPool, table: &str) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(&format!(
        "SELECT row_to_json(t)::text FROM {table} t ORDER BY 1"
    ))
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

/// `SELECT count(*)` of a table with an optional condition.
pub async fn count(pool: &PgPool, table: &str, condition: &str) -> Result<i64> {
    let sql = if condition.is_empty() {
        format!("SELECT count(*) FROM {table}")
    } else {
        format!("SELECT count(*) FROM {table} WHERE {condition}")
    };
    Ok(sqlx::query_scalar(&sql).fetch_one(pool).await?)
}

/// Encodes an event, for tests that produce by hand.
pub fn bytes_of<E: Event>(event: &E) -> Vec<u8> {
    event.encode().unwrap_or_default()
}

/// The live projections of a test, on its own database and topics, until [`Live::stop`].
pub struct Live {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), callstream_projections::error::ProjectionError>>,
}

impl Live {
    pub fn start(db: &TestDb, topics: &Topics) -> Self {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(callstream_projections::run(config(db, topics), async {
            let _ = stopped.await;
        }));
        Self { stop, task }
    }

    /// Stops them; an error of theirs fails the test.
    pub async fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        self.task.await??;
        Ok(())
    }
}

/// Waits (at most a minute) until every view has applied everything `produced` names.
pub async fn caught_up(db: &TestDb, topics: &Topics, produced: &Produced) -> Result<()> {
    wait_caught_up(
        &db.pool,
        topics,
        View::ALL,
        produced,
        std::time::Duration::from_secs(60),
    )
    .await
}

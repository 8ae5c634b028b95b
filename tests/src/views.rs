//! The read side a test of the operator API stands on: a database of its own with the
//! migrations applied, topics behind a unique prefix (2 partitions), and the live
//! projections on them. Shared by the operator API's own tests and the end-to-end tests
//! here; the API's configuration over it is `OperatorApiConfig::new(db.url, kafka, topics)`
//! (this crate does not depend on the API).
//!
//! Guarantees: nothing is shared with another test (database, topics and client names are
//! unique), and the projections stop when `stop_projections` is called or this is dropped.

use std::time::Duration;

use crate::postgres::TestDatabase;
use anyhow::Result;
use callstream_platform::{admin, KafkaSettings, Topics};

pub struct Views {
    pub db: TestDatabase,
    pub topics: Topics,
    pub kafka: KafkaSettings,
    /// Dropping it (with the rest) stops the projections.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Views {
    /// The database `<db_prefix>_<random>`, topics `<name>-<random>-*`, and Kafka clients
    /// named `<name>-test`.
    pub async fn start(db_prefix: &str, name: &str) -> Result<Self> {
        let db = TestDatabase::create(db_prefix).await?;
        callstream_projections::migrate(&db.pool).await?;
        let mut topics = Topics::with_prefix(format!("{}-", crate::unique_name(name)));
        topics.partitions = 2;
        let kafka = KafkaSettings::new(crate::bootstrap_servers(), format!("{name}-test"));
        admin::ensure_topics(&kafka, &topics.specs()).await?;
        let mut projections = callstream_projections::ProjectionsConfig::new(
            db.url.clone(),
            kafka.clone(),
            topics.clone(),
        );
        projections.batch_max_wait = Duration::from_millis(10);
        projections.metadata_interval = Duration::from_millis(300);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(callstream_projections::run(projections, async {
            let _ = stopped.await;
        }));
        Ok(Self {
            db,
            topics,
            kafka,
            stop: Some(stop),
        })
    }

    /// Stops the projections.
    pub fn stop_projections(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

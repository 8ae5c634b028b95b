//! Postgres restarted under load: the projections pause (one log line), resume when it is
//! back, and catch up with nothing lost or repeated.
//!
//! Ignored by default because it restarts the shared dev Postgres, which disturbs every
//! other test running at the time. Run it alone:
//!
//! ```sh
//! cargo test -p callstream-projections --test postgres_restart -- --ignored --nocapture
//! ```
//!
//! It restarts with `CALLSTREAM_PG_RESTART_CMD` (run by `sh -c`), by default the dev
//! stack's cluster as its `postgres` user:
//! `su postgres -c '$CALLSTREAM_PG_CTL -D $CALLSTREAM_PG_DATA -m fast -w restart'`, both set by
//! `cargo xtask test` (the data lives outside a private checkout), else
//! `/usr/lib/postgresql/15/bin/pg_ctl` and `<repo>/.stack/postgres/data`.

mod support;

use std::time::Duration;

use anyhow::{ensure, Result};
use callstream_projections::{run, View};
use support::events::workload;
use support::*;

fn restart_command() -> String {
    std::env::var("CALLSTREAM_PG_RESTART_CMD").unwrap_or_else(|_| {
        let data = std::env::var("CALLSTREAM_PG_DATA").unwrap_or_else(|_| {
            concat!(env!("CARGO_MANIFEST_DIR"), "/../.stack/postgres/data").to_string()
        });
        let pg_ctl = std::env::var("CALLSTREAM_PG_CTL")
            .unwrap_or_else(|_| "/usr/lib/postgresql/15/bin/pg_ctl".to_string());
        // From `/`: the `postgres` user may not enter the test's working directory.
        format!("cd / && su postgres -c '{pg_ctl} -D {data} -m fast -w restart -l {data}/../postgres.log'")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "restarts the shared dev Postgres; run alone with --ignored"]
async fn postgres_restart_under_load_loses_nothing() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(run(config(&db, &topics), async {
        let _ = stopped.await;
    }));
    let producer = callstream_e2e::producer()?;
    let base = chrono::Utc::now();
    let (events, x) = workload("tenant-pg", 300, base);
    let load = {
        let (producer, topics) = (producer.clone(), topics.clone());
        tokio::spawn(async move {
            let mut produced = Produced::new();
            produce_all(&producer, &topics, &events, &mut produced)
                .await
                .map(|()| produced)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(restart_command())
        .status()
        .await?;
    ensure!(status.success(), "restart command failed: {status}");
    let produced = load.await??;
    wait_caught_up(
        &db.pool,
        &topics,
        View::ALL,
        &produced,
        Duration::from_secs(120),
    )
    .await?;
    let t = "tenant_id = 'tenant-pg'";
    assert_eq!(count(&db.pool, "jobs", t).await?, x.jobs);
    assert_eq!(count(&db.pool, "launches", t).await?, x.launches);
    assert_eq!(count(&db.pool, "contact_timeline", t).await?, x.timeline);
    let rows: Vec<(i64, i64)> =
        sqlx::query_as("SELECT next_offset, records FROM projection_offsets")
            .fetch_all(&db.pool)
            .await?;
    for (next, records) in rows {
        assert_eq!(next, records, "a record was lost or applied twice");
    }
    Ok(())
}

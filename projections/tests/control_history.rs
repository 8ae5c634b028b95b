//! The audit trail of control changes survives compaction: `control` is compacted (only
//! the latest value per setting stays), so the audit view also reads `control-history`,
//! where every writer puts each change in the same transaction. A change found only there
//! (its record on `control` compacted away) is still audited, and a change on both topics
//! is one audit row.

mod support;

use anyhow::Result;
use callstream_platform::topics as t;
use callstream_schemas::{AnyEvent, ControlSetting};
use chrono::{TimeDelta, Utc};
use support::events::control;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_changes_are_audited_from_their_history() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let live = Live::start(&db, &topics);
    let tenant = "tenant-hist";
    let t0 = Utc::now();
    // Paused then resumed: compaction keeps only the resume on `control`.
    let paused = control(tenant, ControlSetting::SystemPause, Some(true), t0);
    let resumed = control(
        tenant,
        ControlSetting::SystemPause,
        Some(false),
        t0 + TimeDelta::minutes(5),
    );
    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    let history = topics.name(t::CONTROL_HISTORY);
    for change in [&paused, &resumed] {
        let bytes = AnyEvent::from(change.clone()).encode()?;
        produce_raw(
            &producer,
            &history,
            &change.record_key(),
            &bytes,
            &mut produced,
        )
        .await?;
    }
    produce_all(&producer, &topics, &[resumed.clone().into()], &mut produced).await?;
    caught_up(&db, &topics, &produced).await?;
    let ids: Vec<String> = sqlx::query_scalar(
        "SELECT event_id::text FROM audit WHERE tenant_id = $1 AND action = 'control.system_pause'
         ORDER BY occurred_at",
    )
    .bind(tenant)
    .fetch_all(&db.pool)
    .await?;
    assert_eq!(
        ids,
        [paused.event_id.to_string(), resumed.event_id.to_string()],
        "both changes, once each"
    );
    live.stop().await?;
    Ok(())
}

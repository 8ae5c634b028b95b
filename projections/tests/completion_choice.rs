//! A launch the platform reported keeps the platform's completion, whatever recovery also
//! found for it and whenever: it counts as delivered in its bucket, never as recovered. The
//! soak found the view and the topics disagreeing when a recovered completion stamped later
//! replaced the live one. Both paths are checked: the two completions in one batch (folded in
//! memory) and in two batches (the upsert's own ordering).

mod support;

use anyhow::Result;
use callstream_schemas::{AnyEvent, CallEventSource};
use chrono::{TimeDelta, Utc};
use support::events::{call_event, call_launch, launch_command, plan};
use support::*;
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_platforms_completion_wins_over_a_later_recovered_one() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let live = Live::start(&db, &topics);
    let (tenant, campaign) = ("tenant-cc", "camp-cc");
    let t0 = Utc::now();
    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    let mut launches = Vec::new();
    // One launch per path: both completions together, or the recovered one after.
    let mut second_batch: Vec<AnyEvent> = Vec::new();
    let mut first_batch: Vec<AnyEvent> = Vec::new();
    for (i, together) in [true, false].into_iter().enumerate() {
        let contact = format!("cc{i}");
        let (job, launch) = (Uuid::new_v4(), Uuid::new_v4());
        first_batch.push(plan(tenant, &contact, campaign, job, None, t0).into());
        first_batch.push(launch_command(tenant, &contact, campaign, job, launch, t0).into());
        first_batch.push(call_launch(tenant, &contact, campaign, job, launch, t0).into());
        let live = call_event(
            tenant,
            &contact,
            campaign,
            launch,
            CallEventSource::Live,
            t0 + TimeDelta::minutes(1),
        );
        let recovered = call_event(
            tenant,
            &contact,
            campaign,
            launch,
            CallEventSource::Recovery,
            t0 + TimeDelta::minutes(5),
        );
        first_batch.push(live.into());
        if together {
            first_batch.push(recovered.into());
        } else {
            second_batch.push(recovered.into());
        }
        launches.push(launch);
    }
    for batch in [first_batch, second_batch] {
        produce_all(&producer, &topics, &batch, &mut produced).await?;
        caught_up(&db, &topics, &produced).await?;
    }
    for launch in &launches {
        let source: Option<String> = sqlx::query_scalar(
            "SELECT completion_source FROM launches WHERE tenant_id = $1 AND launch_id = $2",
        )
        .bind(tenant)
        .bind(launch)
        .fetch_one(&db.pool)
        .await?;
        assert_eq!(source.as_deref(), Some("live"), "launch {launch}");
    }
    let (delivered, recovered): (i64, i64) = sqlx::query_as(
        "SELECT sum(delivered)::bigint, sum(recovered)::bigint FROM delivery_buckets WHERE tenant_id = $1",
    )
    .bind(tenant)
    .fetch_one(&db.pool)
    .await?;
    assert_eq!((delivered, recovered), (2, 0));
    live.stop().await?;
    Ok(())
}

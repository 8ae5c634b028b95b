//! Call events as the gateway writes them (`outcome = unknown`, the raw Twilio status
//! kept) complete launches and jobs in the views: the projections map the raw status with
//! the shared rule, as the processors do. A status still in flight completes nothing, and
//! the timeline says what the call meant rather than `unknown`.

mod support;

use anyhow::Result;
use callstream_schemas::{AnyEvent, CallEventSource, CallOutcome, ScheduleEventKind};
use chrono::Utc;
use support::events::{call_event, call_launch, launch_command, plan, schedule};
use support::*;
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_events_with_raw_twilio_statuses_complete_launches_and_jobs() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let live = Live::start(&db, &topics);

    let (tenant, campaign) = ("tenant-gw", "camp-gw");
    let t0 = Utc::now();
    let mut events: Vec<AnyEvent> = Vec::new();
    // Two contacts, each with a planned job that is launched; the first call completes
    // (answering machine), the second is only ringing.
    let mut launches = Vec::new();
    for (i, (status, answered_by)) in [("completed", Some("machine_end_beep")), ("ringing", None)]
        .into_iter()
        .enumerate()
    {
        let contact = format!("gw{i}");
        let (job, launch) = (Uuid::new_v4(), Uuid::new_v4());
        events.push(plan(tenant, &contact, campaign, job, None, t0).into());
        let allocated = ScheduleEventKind::Allocated;
        events.push(
            schedule(
                tenant,
                &contact,
                campaign,
                job,
                allocated,
                Some(7 + i as i64),
                t0,
            )
            .into(),
        );
        events.push(launch_command(tenant, &contact, campaign, job, launch, t0).into());
        events.push(call_launch(tenant, &contact, campaign, job, launch, t0).into());
        // What the gateway's Twilio adapter writes: nothing interpreted.
        let mut e = call_event(
            tenant,
            &contact,
            campaign,
            launch,
            CallEventSource::Live,
            t0,
        );
        e.outcome = CallOutcome::Unknown;
        e.provider_status = status.into();
        e.answered_by = answered_by.map(str::to_string);
        events.push(e.into());
        launches.push((contact, job, launch));
    }
    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    produce_all(&producer, &topics, &events, &mut produced).await?;
    caught_up(&db, &topics, &produced).await?;

    let (_, done_job, done_launch) = &launches[0];
    let launch: (Option<String>, Option<String>) = sqlx::query_as(
        "SELECT outcome, completion_source FROM launches WHERE tenant_id = $1 AND launch_id = $2",
    )
    .bind(tenant)
    .bind(done_launch)
    .fetch_one(&db.pool)
    .await?;
    assert_eq!(launch, (Some("voicemail".into()), Some("live".into())));
    let job: (String, Option<String>) =
        sqlx::query_as("SELECT state, outcome FROM jobs WHERE tenant_id = $1 AND job_id = $2")
            .bind(tenant)
            .bind(done_job)
            .fetch_one(&db.pool)
            .await?;
    assert_eq!(job, ("completed".into(), Some("voicemail".into())));

    // Still ringing: neither the launch nor the job is complete.
    let (_, ringing_job, ringing_launch) = &launches[1];
    let completed: Option<String> =
        sqlx::query_scalar("SELECT outcome FROM launches WHERE tenant_id = $1 AND launch_id = $2")
            .bind(tenant)
            .bind(ringing_launch)
            .fetch_one(&db.pool)
            .await?;
    assert_eq!(completed, None);
    let state: String =
        sqlx::query_scalar("SELECT state FROM jobs WHERE tenant_id = $1 AND job_id = $2")
            .bind(tenant)
            .bind(ringing_job)
            .fetch_one(&db.pool)
            .await?;
    assert_ne!(state, "completed");

    // The timeline shows the mapped outcome of each call event.
    let whats: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT contact_id, what FROM contact_timeline
         WHERE tenant_id = $1 AND event_type = 'CallEvent' ORDER BY contact_id",
    )
    .bind(tenant)
    .fetch_all(&db.pool)
    .await?;
    assert_eq!(
        whats,
        [
            ("gw0".to_string(), Some("voicemail".to_string())),
            ("gw1".to_string(), Some("ringing".to_string())),
        ]
    );

    live.stop().await?;
    Ok(())
}

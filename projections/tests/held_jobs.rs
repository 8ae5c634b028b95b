//! A job the contact processor holds at its slot (a pause, or calls held for an exception)
//! has no event of its own: the hold is only on `contact-state`. The jobs view reads it
//! there, so the console and `GET /v1/jobs?state=held` show the held call and why, and the
//! contact's timeline has the hold once; a later decision (here a cancel) is never undone
//! by a state record read after it.

mod support;

use anyhow::Result;
use callstream_schemas::{
    AnyEvent, ContactJob, ContactState, JobOrigin, JobState, ScheduleEventKind, WorkflowState,
};
use chrono::{DateTime, TimeDelta, Utc};
use support::events::{plan, schedule};
use support::*;
use uuid::Uuid;

fn state_with_held_job(
    tenant: &str,
    contact: &str,
    campaign: &str,
    job: Uuid,
    at: DateTime<Utc>,
) -> ContactState {
    ContactState {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: at,
        causation_id: None,
        correlation_id: None,
        contact_id: contact.into(),
        version: 3,
        phone_number: Some("+13125550100".into()),
        time_zone: Some("America/Chicago".into()),
        time_zone_source: None,
        candidate_time_zones: Vec::new(),
        do_not_call: false,
        blocked: false,
        enrolled_student: false,
        spam: false,
        urgent_request_open: false,
        hold_exception_id: None,
        hold_reason: None,
        workflow_state: WorkflowState::Scheduled,
        workflow_step: 1,
        campaign_id: Some(campaign.into()),
        attempts: Vec::new(),
        rejected_transitions: 0,
        jobs: vec![ContactJob {
            job_id: job,
            campaign_id: campaign.into(),
            origin: JobOrigin::CampaignEntry,
            state: JobState::Held,
            attempt: 1,
            step: 1,
            earliest_at: Some(at),
            requested_at: None,
            slot_at: Some(at),
            launch_id: None,
            replaces_job_id: None,
            replaced_by_job_id: None,
            reason: "campaign_paused".into(),
            reason_detail: Some("held at its slot: campaign paused".into()),
            outcome: None,
            updated_at: at,
        }],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_held_at_its_slot_shows_held_with_its_reason() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let live = Live::start(&db, &topics);
    let (tenant, contact, campaign) = ("tenant-held", "held-1", "camp-held");
    let t0 = Utc::now();
    let job = Uuid::new_v4();
    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    let held = state_with_held_job(tenant, contact, campaign, job, t0 + TimeDelta::minutes(5));
    let first: Vec<AnyEvent> = vec![
        plan(tenant, contact, campaign, job, None, t0).into(),
        schedule(
            tenant,
            contact,
            campaign,
            job,
            ScheduleEventKind::Allocated,
            Some(7),
            t0,
        )
        .into(),
        held.clone().into(),
    ];
    produce_all(&producer, &topics, &first, &mut produced).await?;
    caught_up(&db, &topics, &produced).await?;
    let row: (String, Option<String>, Option<String>) = sqlx::query_as(
        "SELECT state, reason, reason_detail FROM jobs WHERE tenant_id = $1 AND job_id = $2",
    )
    .bind(tenant)
    .bind(job)
    .fetch_one(&db.pool)
    .await?;
    assert_eq!(
        row,
        (
            "held".into(),
            Some("campaign_paused".into()),
            Some("held at its slot: campaign paused".into())
        )
    );
    // Held jobs are among the active ones (the schedule's partial index).
    let active: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM jobs WHERE tenant_id = $1
         AND state IN ('requested', 'scheduled', 'due', 'held')",
    )
    .bind(tenant)
    .fetch_one(&db.pool)
    .await?;
    assert_eq!(active, 1);

    // Cancelled later; the same held state read again after it changes nothing.
    let mut cancel = plan(
        tenant,
        contact,
        campaign,
        job,
        None,
        t0 + TimeDelta::minutes(9),
    );
    cancel.kind = callstream_schemas::ScheduleRequestKind::Cancel;
    cancel.event_id = Uuid::new_v4();
    let second: Vec<AnyEvent> = vec![cancel.into(), held.into()];
    produce_all(&producer, &topics, &second, &mut produced).await?;
    caught_up(&db, &topics, &produced).await?;
    let state: String =
        sqlx::query_scalar("SELECT state FROM jobs WHERE tenant_id = $1 AND job_id = $2")
            .bind(tenant)
            .bind(job)
            .fetch_one(&db.pool)
            .await?;
    assert_eq!(state, "cancelled");
    // The hold is on the contact's timeline once, though two state records showed it.
    let holds: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT what, reason FROM contact_timeline
         WHERE tenant_id = $1 AND contact_id = $2 AND event_type = 'JobHeld'",
    )
    .bind(tenant)
    .bind(contact)
    .fetch_all(&db.pool)
    .await?;
    assert_eq!(
        holds,
        [(
            "held at its slot: campaign paused".to_string(),
            Some("campaign_paused".to_string())
        )]
    );
    live.stop().await?;
    Ok(())
}

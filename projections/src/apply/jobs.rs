//! The jobs view: one row per planned call with its state, the reason for it, and its
//! lineage (the job it replaces and the one that replaced it).
//!
//! A job's state is the one carried by the greatest `(rank, time, event id)` seen for it,
//! ranks following the life of a job (requested < scheduled < due < dispatching <
//! launched < replaced < terminal states < completed), so late or reordered events never
//! move a job backwards. Completions reach the job through `job_launches`, which keeps
//! the launch -> job link and the launch's greatest completion, whichever arrives first.

use callstream_schemas::{
    AnyEvent, CallEvent, CallLaunch, LaunchCommand, LaunchStatus, ScheduleEvent, ScheduleEventKind,
    ScheduleRequest, ScheduleRequestKind, Timestamp,
};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{first_non_null, take_if_newer};
use crate::view::Tables;

const REQUESTED: (&str, i16) = ("requested", 1);
const SCHEDULED: (&str, i16) = ("scheduled", 2);
const DUE: (&str, i16) = ("due", 3);
const DISPATCHING: (&str, i16) = ("dispatching", 4);
const LAUNCHED: (&str, i16) = ("launched", 5);
const AMBIGUOUS: (&str, i16) = ("ambiguous", 5);
const REPLACED: (&str, i16) = ("replaced", 8);
const CANCELLED: (&str, i16) = ("cancelled", 9);
const REFUSED: (&str, i16) = ("refused", 9);
const FAILED: (&str, i16) = ("failed", 9);
const SHADOW: (&str, i16) = ("shadow", 9);
/// A call that happened happened: nothing later overrides it.
const COMPLETED: (&str, i16) = ("completed", 10);

/// One change of a job row; `None` fields leave the stored value alone.
#[derive(Debug, Default)]
struct JobChange<'a> {
    tenant_id: &'a str,
    job_id: Uuid,
    contact_id: &'a str,
    campaign_id: Option<&'a str>,
    origin: Option<&'static str>,
    attempt: Option<i32>,
    state: &'static str,
    rank: i16,
    at: Timestamp,
    event_id: Uuid,
    reason: Option<&'a str>,
    reason_detail: Option<&'a str>,
    plan_reason: Option<&'a str>,
    outcome: Option<&'a str>,
    earliest_at: Option<Timestamp>,
    requested_at: Option<Timestamp>,
    slot: Option<i64>,
    slot_at: Option<Timestamp>,
    time_zone: Option<&'a str>,
    time_zone_source: Option<&'static str>,
    replaces_job_id: Option<Uuid>,
    replaced_by_job_id: Option<Uuid>,
    launch_id: Option<Uuid>,
    provider_call_id: Option<&'a str>,
}

impl<'a> JobChange<'a> {
    fn new(
        tenant_id: &'a str,
        job_id: Uuid,
        contact_id: &'a str,
        (state, rank): (&'static str, i16),
        at: Timestamp,
        event_id: Uuid,
    ) -> Self {
        Self {
            tenant_id,
            job_id,
            contact_id,
            state,
            rank,
            at,
            event_id,
            ..Self::default()
        }
    }
}

pub(super) async fn apply(
    conn: &mut PgConnection,
    tables: Tables,
    event: &AnyEvent,
) -> Result<(), sqlx::Error> {
    match event {
        AnyEvent::ScheduleRequest(r) => schedule_request(conn, tables, r).await,
        AnyEvent::ScheduleEvent(e) => schedule_event(conn, tables, e).await,
        AnyEvent::LaunchCommand(c) => launch_command(conn, tables, c).await,
        AnyEvent::CallLaunch(l) => call_launch(conn, tables, l).await,
        AnyEvent::CallEvent(e) => call_event(conn, tables, e).await,
        _ => Ok(()),
    }
}

async fn schedule_request(
    conn: &mut PgConnection,
    tables: Tables,
    r: &ScheduleRequest,
) -> Result<(), sqlx::Error> {
    let state = match r.kind {
        ScheduleRequestKind::Plan => REQUESTED,
        ScheduleRequestKind::Cancel => CANCELLED,
        ScheduleRequestKind::Unknown => return Ok(()),
    };
    let mut change = JobChange::new(
        &r.tenant_id,
        r.job_id,
        &r.contact_id,
        state,
        r.occurred_at,
        r.event_id,
    );
    change.campaign_id = Some(&r.campaign_id);
    change.origin = Some(r.origin.as_str());
    change.attempt = r.attempt;
    change.reason = Some(&r.reason);
    change.reason_detail = r.reason_detail.as_deref();
    if r.kind == ScheduleRequestKind::Plan {
        change.plan_reason = Some(&r.reason);
        change.earliest_at = r.earliest_at;
        change.requested_at = r.requested_at;
        change.time_zone = r.time_zone.as_deref();
        change.time_zone_source = r.time_zone_source.map(|s| s.as_str());
        change.replaces_job_id = r.replaces_job_id;
    }
    upsert(conn, tables, &change).await?;
    if let (ScheduleRequestKind::Plan, Some(old)) = (r.kind, r.replaces_job_id) {
        replaced(conn, tables, &change, old).await?;
    }
    Ok(())
}

async fn schedule_event(
    conn: &mut PgConnection,
    tables: Tables,
    e: &ScheduleEvent,
) -> Result<(), sqlx::Error> {
    let state = match e.kind {
        ScheduleEventKind::Allocated => SCHEDULED,
        ScheduleEventKind::Cancelled => CANCELLED,
        ScheduleEventKind::Refused => REFUSED,
        ScheduleEventKind::LaunchDue => DUE,
        ScheduleEventKind::Unknown => return Ok(()),
    };
    let mut change = JobChange::new(
        &e.tenant_id,
        e.job_id,
        &e.contact_id,
        state,
        e.occurred_at,
        e.event_id,
    );
    change.campaign_id = Some(&e.campaign_id);
    change.origin = Some(e.origin.as_str());
    change.reason = Some(&e.reason);
    change.reason_detail = e.reason_detail.as_deref();
    change.earliest_at = e.earliest_at;
    change.requested_at = e.requested_at;
    change.time_zone = e.time_zone.as_deref();
    change.time_zone_source = e.time_zone_source.map(|s| s.as_str());
    change.replaces_job_id = e.replaces_job_id;
    if e.kind == ScheduleEventKind::Allocated {
        change.slot = e.slot;
        change.slot_at = e.slot_at;
    }
    upsert(conn, tables, &change).await?;
    if let (ScheduleEventKind::Allocated, Some(old)) = (e.kind, e.replaces_job_id) {
        replaced(conn, tables, &change, old).await?;
    }
    Ok(())
}

/// The job `old` was replaced by `new.job_id`: it names its replacement and is done.
async fn replaced(
    conn: &mut PgConnection,
    tables: Tables,
    new: &JobChange<'_>,
    old: Uuid,
) -> Result<(), sqlx::Error> {
    let mut change = JobChange::new(
        new.tenant_id,
        old,
        new.contact_id,
        REPLACED,
        new.at,
        new.event_id,
    );
    change.reason = new.reason;
    change.reason_detail = new.reason_detail;
    change.replaced_by_job_id = Some(new.job_id);
    upsert(conn, tables, &change).await
}

async fn launch_command(
    conn: &mut PgConnection,
    tables: Tables,
    c: &LaunchCommand,
) -> Result<(), sqlx::Error> {
    let mut change = JobChange::new(
        &c.tenant_id,
        c.job_id,
        &c.contact_id,
        DISPATCHING,
        c.occurred_at,
        c.event_id,
    );
    change.campaign_id = Some(&c.campaign_id);
    change.origin = Some(c.origin.as_str());
    change.attempt = Some(c.attempt);
    change.launch_id = Some(c.launch_id);
    upsert(conn, tables, &change).await?;
    link_launch(
        conn,
        tables,
        &c.tenant_id,
        c.launch_id,
        c.job_id,
        &c.contact_id,
    )
    .await
}

async fn call_launch(
    conn: &mut PgConnection,
    tables: Tables,
    l: &CallLaunch,
) -> Result<(), sqlx::Error> {
    let state = match l.status {
        LaunchStatus::Accepted => LAUNCHED,
        LaunchStatus::Ambiguous => AMBIGUOUS,
        LaunchStatus::Failed => FAILED,
        LaunchStatus::Shadow => SHADOW,
        LaunchStatus::Unknown => DISPATCHING,
    };
    let mut change = JobChange::new(
        &l.tenant_id,
        l.job_id,
        &l.contact_id,
        state,
        l.occurred_at,
        l.event_id,
    );
    change.campaign_id = Some(&l.campaign_id);
    change.reason = l.reason.as_deref();
    change.reason_detail = l.reason_detail.as_deref();
    change.launch_id = Some(l.launch_id);
    change.provider_call_id = l.provider_call_id.as_deref();
    upsert(conn, tables, &change).await?;
    link_launch(
        conn,
        tables,
        &l.tenant_id,
        l.launch_id,
        l.job_id,
        &l.contact_id,
    )
    .await
}

/// A final call event of a known launch completes its job (now, or when the launch's job
/// becomes known).
async fn call_event(
    conn: &mut PgConnection,
    tables: Tables,
    e: &CallEvent,
) -> Result<(), sqlx::Error> {
    // The gateway leaves `outcome` unknown and sends the raw status: the shared
    // rule maps it, as the processors do, or no live call would ever complete here.
    let outcome = e.mapped_outcome();
    let Some(launch_id) = e.launch_id.filter(|_| outcome.is_final()) else {
        return Ok(());
    };
    let sql = format!(
        "INSERT INTO {jl} AS t (tenant_id, launch_id, completion_event_id, completion_at, outcome)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (tenant_id, launch_id) DO UPDATE SET {merge}
         RETURNING job_id",
        jl = tables.name("job_launches"),
        merge = max_completion(),
    );
    let job_id: Option<Uuid> = sqlx::query_scalar(&sql)
        .bind(&e.tenant_id)
        .bind(launch_id)
        .bind(e.event_id)
        .bind(e.occurred_at)
        .bind(outcome.as_str())
        .fetch_one(&mut *conn)
        .await?;
    if let Some(job_id) = job_id {
        complete_from_link(conn, tables, &e.tenant_id, launch_id, job_id, &e.contact_id).await?;
    }
    Ok(())
}

/// Keeps the greatest `(completion_at, completion_event_id)` of a launch.
fn max_completion() -> &'static str {
    "completion_event_id = CASE WHEN t.completion_at IS NULL OR (EXCLUDED.completion_at, EXCLUDED.completion_event_id) > (t.completion_at, t.completion_event_id) THEN EXCLUDED.completion_event_id ELSE t.completion_event_id END,
     outcome = CASE WHEN t.completion_at IS NULL OR (EXCLUDED.completion_at, EXCLUDED.completion_event_id) > (t.completion_at, t.completion_event_id) THEN EXCLUDED.outcome ELSE t.outcome END,
     completion_at = CASE WHEN t.completion_at IS NULL OR (EXCLUDED.completion_at, EXCLUDED.completion_event_id) > (t.completion_at, t.completion_event_id) THEN EXCLUDED.completion_at ELSE t.completion_at END"
}

/// Records which job a launch belongs to and completes the job if its completion was
/// already seen.
async fn link_launch(
    conn: &mut PgConnection,
    tables: Tables,
    tenant_id: &str,
    launch_id: Uuid,
    job_id: Uuid,
    contact_id: &str,
) -> Result<(), sqlx::Error> {
    let sql = format!(
        "INSERT INTO {jl} AS t (tenant_id, launch_id, job_id) VALUES ($1, $2, $3)
         ON CONFLICT (tenant_id, launch_id) DO UPDATE SET job_id = COALESCE(t.job_id, EXCLUDED.job_id)",
        jl = tables.name("job_launches"),
    );
    sqlx::query(&sql)
        .bind(tenant_id)
        .bind(launch_id)
        .bind(job_id)
        .execute(&mut *conn)
        .await?;
    complete_from_link(conn, tables, tenant_id, launch_id, job_id, contact_id).await
}

/// Applies the launch's stored (greatest) completion to its job, if it has one. Always the
/// stored one, never the incoming event, so the order completions arrive in does not matter.
async fn complete_from_link(
    conn: &mut PgConnection,
    tables: Tables,
    tenant_id: &str,
    launch_id: Uuid,
    job_id: Uuid,
    contact_id: &str,
) -> Result<(), sqlx::Error> {
    let sql = format!(
        "SELECT completion_event_id, completion_at, outcome FROM {jl}
         WHERE tenant_id = $1 AND launch_id = $2 AND completion_at IS NOT NULL",
        jl = tables.name("job_launches"),
    );
    let row: Option<(Uuid, Timestamp, Option<String>)> = sqlx::query_as(&sql)
        .bind(tenant_id)
        .bind(launch_id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some((event_id, at, outcome)) = row else {
        return Ok(());
    };
    let mut change = JobChange::new(tenant_id, job_id, contact_id, COMPLETED, at, event_id);
    change.outcome = outcome.as_deref();
    change.launch_id = Some(launch_id);
    upsert(conn, tables, &change).await
}

async fn upsert(
    conn: &mut PgConnection,
    tables: Tables,
    c: &JobChange<'_>,
) -> Result<(), sqlx::Error> {
    let sql = format!(
        "INSERT INTO {jobs} AS t (tenant_id, job_id, contact_id, campaign_id, origin, attempt,
             state, state_rank, state_at, state_event_id, reason, reason_detail, plan_reason,
             outcome, earliest_at, requested_at, slot, slot_at, time_zone, time_zone_source,
             replaces_job_id, replaced_by_job_id, launch_id, provider_call_id,
             created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18, $19, $20, $21, $22, $23, $24, $9, $9)
         ON CONFLICT (tenant_id, job_id) DO UPDATE SET
             {first}, {newer},
             created_at = LEAST(t.created_at, EXCLUDED.created_at),
             updated_at = GREATEST(t.updated_at, EXCLUDED.updated_at)",
        jobs = tables.name("jobs"),
        first = first_non_null(&[
            "campaign_id",
            "origin",
            "attempt",
            "plan_reason",
            "earliest_at",
            "requested_at",
            "slot",
            "slot_at",
            "time_zone",
            "time_zone_source",
            "replaces_job_id",
            "replaced_by_job_id",
            "launch_id",
            "provider_call_id",
        ]),
        newer = take_if_newer(
            "state",
            &[
                "state",
                "reason",
                "reason_detail",
                "outcome",
                // Last: the condition reads the old values, so order does not matter to
                // Postgres, but keeping the key columns last reads naturally.
                "state_rank",
                "state_at",
                "state_event_id",
            ],
        ),
    );
    sqlx::query(&sql)
        .bind(c.tenant_id)
        .bind(c.job_id)
        .bind(c.contact_id)
        .bind(c.campaign_id)
        .bind(c.origin)
        .bind(c.attempt)
        .bind(c.state)
        .bind(c.rank)
        .bind(c.at)
        .bind(c.event_id)
        .bind(c.reason)
        .bind(c.reason_detail)
        .bind(c.plan_reason)
        .bind(c.outcome)
        .bind(c.earliest_at)
        .bind(c.requested_at)
        .bind(c.slot)
        .bind(c.slot_at)
        .bind(c.time_zone)
        .bind(c.time_zone_source)
        .bind(c.replaces_job_id)
        .bind(c.replaced_by_job_id)
        .bind(c.launch_id)
        .bind(c.provider_call_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

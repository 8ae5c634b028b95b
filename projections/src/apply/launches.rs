//! The launches view: every launch with its status, its (greatest) completion and its
//! missing-completion case; and delivery per tenant and 10-minute bucket of acceptance,
//! recomputed from the launch rows of each bucket a batch touched (so it is idempotent
//! and equal to a count over `launches` at every commit).

use callstream_schemas::{
    AnyEvent, CallEvent, CallLaunch, CompletionMissing, CompletionResolved, LaunchStatus, Timestamp,
};
use sqlx::PgConnection;

use super::{first_non_null, Touched};
use crate::view::Tables;

/// Status ranks: an ambiguous launch is later reconciled to a definite one.
fn status_rank(status: LaunchStatus) -> i16 {
    match status {
        LaunchStatus::Ambiguous | LaunchStatus::Unknown => 1,
        LaunchStatus::Accepted | LaunchStatus::Failed | LaunchStatus::Shadow => 2,
    }
}

pub(super) async fn apply(
    conn: &mut PgConnection,
    tables: Tables,
    event: &AnyEvent,
    touched: &mut Touched,
) -> Result<(), sqlx::Error> {
    let bucket = match event {
        AnyEvent::CallLaunch(l) => call_launch(conn, tables, l).await?,
        AnyEvent::CallEvent(e) => call_event(conn, tables, e).await?,
        AnyEvent::CompletionMissing(m) => missing(conn, tables, m).await?,
        AnyEvent::CompletionResolved(r) => resolved(conn, tables, r).await?,
        _ => None,
    };
    if let Some(bucket) = bucket {
        touched
            .buckets
            .insert((event.envelope().tenant_id.to_string(), bucket));
    }
    Ok(())
}

/// Every statement returns the launch's bucket, so the batch knows which to recompute.
const RETURNING: &str = "RETURNING bucket_start";

async fn call_launch(
    conn: &mut PgConnection,
    tables: Tables,
    l: &CallLaunch,
) -> Result<Option<Timestamp>, sqlx::Error> {
    let accepted_at = (l.status == LaunchStatus::Accepted).then_some(l.occurred_at);
    let sql = format!(
        "INSERT INTO {t} AS t (tenant_id, launch_id, job_id, contact_id, campaign_id, status,
             status_rank, status_at, status_event_id, provider, provider_call_id, accepted_at,
             bucket_start)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                 date_bin('10 minutes', $12::timestamptz, 'epoch'::timestamptz))
         ON CONFLICT (tenant_id, launch_id) DO UPDATE SET
             {first},
             status = CASE WHEN t.status_at IS NULL OR {newer} THEN EXCLUDED.status ELSE t.status END,
             status_rank = CASE WHEN t.status_at IS NULL OR {newer} THEN EXCLUDED.status_rank ELSE t.status_rank END,
             status_event_id = CASE WHEN t.status_at IS NULL OR {newer} THEN EXCLUDED.status_event_id ELSE t.status_event_id END,
             status_at = CASE WHEN t.status_at IS NULL OR {newer} THEN EXCLUDED.status_at ELSE t.status_at END,
             accepted_at = LEAST(t.accepted_at, EXCLUDED.accepted_at),
             bucket_start = date_bin('10 minutes', LEAST(t.accepted_at, EXCLUDED.accepted_at), 'epoch'::timestamptz)
         {RETURNING}",
        t = tables.name("launches"),
        first = first_non_null(&["job_id", "campaign_id", "provider", "provider_call_id"]),
        newer = "(EXCLUDED.status_rank, EXCLUDED.status_at, EXCLUDED.status_event_id) > (t.status_rank, t.status_at, t.status_event_id)",
    );
    sqlx::query_scalar(&sql)
        .bind(&l.tenant_id)
        .bind(l.launch_id)
        .bind(l.job_id)
        .bind(&l.contact_id)
        .bind(&l.campaign_id)
        .bind(l.status.as_str())
        .bind(status_rank(l.status))
        .bind(l.occurred_at)
        .bind(l.event_id)
        .bind(&l.provider)
        .bind(l.provider_call_id.as_deref())
        .bind(accepted_at)
        .fetch_one(&mut *conn)
        .await
}

/// A final call event completes its launch; the greatest `(time, event id)` is kept.
async fn call_event(
    conn: &mut PgConnection,
    tables: Tables,
    e: &CallEvent,
) -> Result<Option<Timestamp>, sqlx::Error> {
    // The gateway leaves `outcome` unknown and sends the raw status: the shared
    // rule maps it, as the processors do, or no live call would ever complete here.
    let outcome = e.mapped_outcome();
    let Some(launch_id) = e.launch_id.filter(|_| outcome.is_final()) else {
        return Ok(None);
    };
    let greater = "(t.completed_at IS NULL OR (EXCLUDED.completed_at, EXCLUDED.completion_event_id) > (t.completed_at, t.completion_event_id))";
    let sql = format!(
        "INSERT INTO {t} AS t (tenant_id, launch_id, contact_id, campaign_id,
             completion_event_id, completed_at, outcome, completion_source)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (tenant_id, launch_id) DO UPDATE SET
             campaign_id = COALESCE(t.campaign_id, EXCLUDED.campaign_id),
             completion_event_id = CASE WHEN {greater} THEN EXCLUDED.completion_event_id ELSE t.completion_event_id END,
             outcome = CASE WHEN {greater} THEN EXCLUDED.outcome ELSE t.outcome END,
             completion_source = CASE WHEN {greater} THEN EXCLUDED.completion_source ELSE t.completion_source END,
             completed_at = CASE WHEN {greater} THEN EXCLUDED.completed_at ELSE t.completed_at END
         {RETURNING}",
        t = tables.name("launches"),
    );
    sqlx::query_scalar(&sql)
        .bind(&e.tenant_id)
        .bind(launch_id)
        .bind(&e.contact_id)
        .bind(e.campaign_id.as_deref())
        .bind(e.event_id)
        .bind(e.occurred_at)
        .bind(outcome.as_str())
        .bind(e.source.as_str())
        .fetch_one(&mut *conn)
        .await
}

/// The first missing-completion case of a launch is kept (a launch has one window).
async fn missing(
    conn: &mut PgConnection,
    tables: Tables,
    m: &CompletionMissing,
) -> Result<Option<Timestamp>, sqlx::Error> {
    let earlier = "(t.missing_at IS NULL OR (EXCLUDED.missing_at, EXCLUDED.missing_event_id) < (t.missing_at, t.missing_event_id))";
    let sql = format!(
        "INSERT INTO {t} AS t (tenant_id, launch_id, job_id, contact_id, campaign_id, provider,
             provider_call_id, missing_event_id, missing_at, deadline_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (tenant_id, launch_id) DO UPDATE SET
             {first},
             missing_event_id = CASE WHEN {earlier} THEN EXCLUDED.missing_event_id ELSE t.missing_event_id END,
             deadline_at = CASE WHEN {earlier} THEN EXCLUDED.deadline_at ELSE t.deadline_at END,
             missing_at = CASE WHEN {earlier} THEN EXCLUDED.missing_at ELSE t.missing_at END
         {RETURNING}",
        t = tables.name("launches"),
        first = first_non_null(&["job_id", "campaign_id", "provider", "provider_call_id"]),
    );
    sqlx::query_scalar(&sql)
        .bind(&m.tenant_id)
        .bind(m.launch_id)
        .bind(m.job_id)
        .bind(&m.contact_id)
        .bind(m.campaign_id.as_deref())
        .bind(&m.provider)
        .bind(&m.provider_call_id)
        .bind(m.event_id)
        .bind(m.occurred_at)
        .bind(m.deadline_at)
        .fetch_one(&mut *conn)
        .await
}

/// The latest resolution of a case is kept.
async fn resolved(
    conn: &mut PgConnection,
    tables: Tables,
    r: &CompletionResolved,
) -> Result<Option<Timestamp>, sqlx::Error> {
    let later = "(t.resolved_at IS NULL OR (EXCLUDED.resolved_at, EXCLUDED.resolution_event_id) > (t.resolved_at, t.resolution_event_id))";
    let sql = format!(
        "INSERT INTO {t} AS t (tenant_id, launch_id, contact_id, provider_call_id, resolution,
             resolution_event_id, resolved_at, resolved_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (tenant_id, launch_id) DO UPDATE SET
             provider_call_id = COALESCE(t.provider_call_id, EXCLUDED.provider_call_id),
             resolution = CASE WHEN {later} THEN EXCLUDED.resolution ELSE t.resolution END,
             resolved_by = CASE WHEN {later} THEN EXCLUDED.resolved_by ELSE t.resolved_by END,
             resolution_event_id = CASE WHEN {later} THEN EXCLUDED.resolution_event_id ELSE t.resolution_event_id END,
             resolved_at = CASE WHEN {later} THEN EXCLUDED.resolved_at ELSE t.resolved_at END
         {RETURNING}",
        t = tables.name("launches"),
    );
    sqlx::query_scalar(&sql)
        .bind(&r.tenant_id)
        .bind(r.launch_id)
        .bind(&r.contact_id)
        .bind(r.provider_call_id.as_deref())
        .bind(r.resolution.as_str())
        .bind(r.event_id)
        .bind(r.occurred_at)
        .bind(format!("{}:{}", r.actor.kind, r.actor.id))
        .fetch_one(&mut *conn)
        .await
}

/// Recounts every bucket the batch touched from the launch rows.
pub(super) async fn recompute_buckets(
    conn: &mut PgConnection,
    tables: Tables,
    touched: &Touched,
) -> Result<(), sqlx::Error> {
    if touched.buckets.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "INSERT INTO {d} (tenant_id, bucket_start, accepted, delivered, recovered, missing)
         SELECT $1, $2, count(*),
                count(*) FILTER (WHERE completion_source = 'live'),
                count(*) FILTER (WHERE completion_source = 'recovery'),
                count(*) FILTER (WHERE missing_at IS NOT NULL)
         FROM {l} WHERE tenant_id = $1 AND bucket_start = $2
         ON CONFLICT (tenant_id, bucket_start) DO UPDATE SET
             accepted = EXCLUDED.accepted, delivered = EXCLUDED.delivered,
             recovered = EXCLUDED.recovered, missing = EXCLUDED.missing",
        d = tables.name("delivery_buckets"),
        l = tables.name("launches"),
    );
    for (tenant, bucket) in &touched.buckets {
        sqlx::query(&sql)
            .bind(tenant)
            .bind(bucket)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

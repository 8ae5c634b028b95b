//! The dataset the console reads, bulk-loaded with `INSERT ... SELECT FROM
//! generate_series` (no Kafka, no projections): the rows the projections
//! would have written for a busy tenant after a few months.
//!
//! For each tenant (`bench`, and `other` with a tenth of the rows, so every
//! query also has to skip another tenant's rows):
//!
//! - `jobs`: 3 jobs a contact, 40 campaigns, four US zones. About 15% are
//!   still to come (requested 5%, scheduled 4%, due 1% within 15 minutes,
//!   held 5%, over the next 5 days); held ones are held by `campaign_paused`
//!   (3 in 5), `system_paused` or `contact_busy`. The rest are in the past
//!   90 days: completed 52%, replaced 10%, cancelled 10%, failed 5%,
//!   refused 3%, shadow 2%, ambiguous 1%, and 2% dispatching or launched
//!   in the last 5 minutes.
//! - `exceptions`: 20% open (first seen in the last 30 days), the rest
//!   resolved (5 in 8) or ignored over the last 90 days; types weighted
//!   towards `completion_missing`, `launch_failed`, `no_slot` and `crm_failed`.
//! - `launches`: one for every 4 jobs, accepted over the last 90 days;
//!   0.2% missing and still open (accepted in the last 2 days), 0.6%
//!   missing and recovered, the rest completed by the platform.
//! - `delivery_buckets`: every 10-minute bucket of the last 30 days and all
//!   144 of the current UTC day.
//!
//! The secondary indexes of `jobs`, `exceptions` and `launches` are dropped
//! for the load and built again afterwards from their own definitions (as
//! `pg_indexes` shows them, so they stay the migrations' word for word),
//! which is several times faster than maintaining them row by row. Then
//! `VACUUM (ANALYZE)`: the planner's statistics, and the visibility map
//! autovacuum would soon set after a bulk load anyway (so it does not run
//! in the middle of the timed requests instead).
//!
//! Rows are spread by multiplicative hashes of the row number, so states,
//! times, zones and campaigns are not in step with each other.

use std::time::Instant;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tracing::info;

/// The tenant the console reads.
pub const TENANT: &str = "bench";
/// The tenant beside it, with a tenth of the rows.
pub const OTHER_TENANT: &str = "other";

/// Rows per INSERT: progress to log, and no single huge statement.
const CHUNK: i64 = 250_000;

/// Tables whose secondary indexes are built after the load.
const INDEXED: [&str; 3] = ["jobs", "exceptions", "launches"];

const JOBS: &str = "
INSERT INTO jobs (tenant_id, job_id, contact_id, campaign_id, origin, attempt, state, state_rank,
    state_at, state_event_id, reason, reason_detail, plan_reason, outcome, earliest_at,
    requested_at, slot, slot_at, time_zone, time_zone_source, replaces_job_id,
    replaced_by_job_id, launch_id, provider_call_id, created_at, updated_at)
SELECT $1, md5($1 || '/job/' || i)::uuid, 'c' || (i / 3), 'camp' || (h.c % 40),
    'campaign_entry', 1 + i % 3, s.state,
    (CASE s.state WHEN 'requested' THEN 1 WHEN 'scheduled' THEN 2 WHEN 'due' THEN 3
        WHEN 'dispatching' THEN 4 WHEN 'launched' THEN 5 WHEN 'ambiguous' THEN 5
        WHEN 'held' THEN 6 WHEN 'replaced' THEN 8 WHEN 'completed' THEN 10 ELSE 9 END)::smallint,
    CASE WHEN t.at > $4 THEN $4 - (h.c % 86400) * interval '1 second'
         ELSE t.at + interval '2 minutes' END,
    md5($1 || '/event/' || i)::uuid,
    CASE s.state
        WHEN 'held' THEN (ARRAY['campaign_paused', 'campaign_paused', 'campaign_paused',
                                'system_paused', 'contact_busy'])[1 + h.c % 5]
        WHEN 'replaced' THEN 'rescheduled' WHEN 'cancelled' THEN 'operator_cancelled'
        WHEN 'failed' THEN 'provider_error' WHEN 'refused' THEN 'do_not_call'
        WHEN 'shadow' THEN 'shadow_mode' WHEN 'ambiguous' THEN 'provider_timeout'
        ELSE 'planned' END,
    CASE WHEN s.state = 'held' THEN 'held at its slot until the pause lifts' END,
    'campaign_entry',
    CASE WHEN s.state = 'completed'
         THEN (ARRAY['answered', 'voicemail', 'no_answer', 'busy'])[1 + h.c % 4] END,
    CASE WHEN s.state = 'requested' THEN t.at ELSE t.at - interval '30 minutes' END,
    CASE WHEN h.c % 10 = 0 THEN t.at END,
    CASE WHEN s.state <> 'requested' THEN extract(epoch FROM t.at)::bigint / 60 END,
    CASE WHEN s.state <> 'requested' THEN t.at END,
    (ARRAY['America/Chicago', 'America/New_York', 'America/Denver',
           'America/Los_Angeles'])[1 + (h.c / 7) % 4],
    'contact',
    CASE WHEN i % 3 > 0 THEN md5($1 || '/job/' || (i - 1))::uuid END,
    CASE WHEN s.state = 'replaced' THEN md5($1 || '/job/' || (i + 1))::uuid END,
    CASE WHEN s.launched THEN md5($1 || '/launch/' || i)::uuid END,
    CASE WHEN s.launched THEN 'CA' || md5($1 || '/call/' || i) END,
    t.at - interval '3 hours',
    CASE WHEN t.at > $4 THEN $4 - (h.c % 86400) * interval '1 second'
         ELSE t.at + interval '2 minutes' END
FROM generate_series($2::bigint, $3::bigint) AS i
CROSS JOIN LATERAL (SELECT (i * 2654435761) % 1000003 AS c) h
CROSS JOIN LATERAL (SELECT CASE
        WHEN h.c % 100 < 5 THEN 'requested' WHEN h.c % 100 < 9 THEN 'scheduled'
        WHEN h.c % 100 < 10 THEN 'due' WHEN h.c % 100 < 15 THEN 'held'
        WHEN h.c % 100 < 16 THEN 'dispatching' WHEN h.c % 100 < 17 THEN 'launched'
        WHEN h.c % 100 < 69 THEN 'completed' WHEN h.c % 100 < 79 THEN 'replaced'
        WHEN h.c % 100 < 89 THEN 'cancelled' WHEN h.c % 100 < 94 THEN 'failed'
        WHEN h.c % 100 < 97 THEN 'refused' WHEN h.c % 100 < 99 THEN 'shadow'
        ELSE 'ambiguous' END AS state) s0
CROSS JOIN LATERAL (SELECT s0.state,
    s0.state IN ('launched', 'completed', 'ambiguous') AS launched) s
CROSS JOIN LATERAL (SELECT CASE
        WHEN s.state = 'due' THEN $4 + (i % 900) * interval '1 second'
        WHEN s.state IN ('requested', 'scheduled', 'held')
            THEN $4 + interval '5 minutes' + ((i * 69069) % 432000) * interval '1 second'
        WHEN s.state IN ('dispatching', 'launched') THEN $4 - (i % 300) * interval '1 second'
        ELSE $4 - interval '1 hour' - ((i * 40503 + 12345) % 7776000) * interval '1 second'
    END AS at) t";

const EXCEPTIONS: &str = "
INSERT INTO exceptions (tenant_id, exception_id, exception_type, status, status_rank, status_at,
    status_event_id, urgent, contact_id, campaign_id, job_id, launch_id, call_id, operation_id,
    reason, detail, assignee, opened_at, opened_by, resolved_at, resolved_by, first_seen_at,
    updated_at)
SELECT $1, md5($1 || '/exception/' || i)::uuid, k.t, k.status,
    (k.status <> 'open')::int::smallint,
    CASE WHEN k.status = 'open' THEN k.seen ELSE k.seen + interval '1 hour' END,
    md5($1 || '/exception-event/' || i)::uuid,
    k.t = 'urgent_request' OR (k.status = 'open' AND h.c % 50 = 0),
    'c' || (h.j / 3), 'camp' || (h.c % 40), md5($1 || '/job/' || h.j)::uuid,
    CASE WHEN k.t IN ('completion_missing', 'launch_failed', 'provider_failure', 'recovery_failed')
         THEN md5($1 || '/launch/' || h.j)::uuid END,
    CASE WHEN k.t IN ('completion_missing', 'provider_failure')
         THEN 'CA' || md5($1 || '/call/' || h.j) END,
    CASE WHEN k.t = 'crm_failed' THEN md5($1 || '/crm/' || i)::uuid END,
    CASE k.t
        WHEN 'completion_missing' THEN 'no completion within the window'
        WHEN 'launch_failed' THEN 'the voice platform refused the call'
        WHEN 'no_slot' THEN 'no free slot before the deadline'
        WHEN 'crm_failed' THEN 'the CRM write failed for good'
        WHEN 'provider_failure' THEN 'the provider reported a failure'
        WHEN 'urgent_request' THEN 'the lead asked to be called now'
        ELSE 'recovery found no record of the call' END,
    CASE WHEN h.c % 3 = 0 THEN 'attempt ' || (1 + h.c % 4) || ' of 4' END,
    CASE WHEN k.status = 'open' AND h.c % 4 = 0 THEN 'ops' || (h.c % 6) || '@bench' END,
    k.seen, 'system',
    CASE WHEN k.status <> 'open' THEN k.seen + interval '1 hour' END,
    CASE WHEN k.status <> 'open' THEN 'ops' || (h.c % 6) || '@bench' END,
    k.seen,
    CASE WHEN k.status = 'open' THEN k.seen ELSE k.seen + interval '1 hour' END
FROM generate_series($2::bigint, $3::bigint) AS i
CROSS JOIN LATERAL (SELECT (i * 2654435761) % 1000003 AS c, (i * 7919) % $5 AS j) h
CROSS JOIN LATERAL (SELECT
    (ARRAY['completion_missing', 'completion_missing', 'completion_missing',
           'completion_missing', 'completion_missing', 'completion_missing',
           'launch_failed', 'launch_failed', 'launch_failed', 'launch_failed',
           'no_slot', 'no_slot', 'no_slot', 'crm_failed', 'crm_failed', 'crm_failed',
           'provider_failure', 'provider_failure', 'urgent_request',
           'recovery_failed'])[1 + (h.c / 100) % 20] AS t,
    CASE WHEN h.c % 100 < 20 THEN 'open' WHEN h.c % 100 < 70 THEN 'resolved'
         ELSE 'ignored' END AS status,
    CASE WHEN h.c % 100 < 20 THEN $4 - ((i * 40503) % 2592000) * interval '1 second'
         ELSE $4 - ((i * 40503) % 7776000) * interval '1 second' END AS seen) k";

const LAUNCHES: &str = "
INSERT INTO launches (tenant_id, launch_id, job_id, contact_id, campaign_id, status, status_rank,
    status_at, status_event_id, provider, provider_call_id, accepted_at, bucket_start,
    completion_event_id, completed_at, outcome, completion_source, missing_event_id, missing_at,
    deadline_at, resolution, resolution_event_id, resolved_at, resolved_by)
SELECT $1, md5($1 || '/launch/' || j)::uuid, md5($1 || '/job/' || j)::uuid, 'c' || (j / 3),
    'camp' || (h.c % 40), 'accepted', 2::smallint, k.at, md5($1 || '/launch-event/' || i)::uuid,
    'twilio', 'CA' || md5($1 || '/call/' || j), k.at,
    date_bin('10 minutes', k.at, timestamptz '2000-01-01 00:00:00+00'),
    CASE WHEN k.kind <> 'open' THEN md5($1 || '/completion/' || i)::uuid END,
    CASE WHEN k.kind <> 'open' THEN k.at + interval '3 minutes' END,
    CASE WHEN k.kind <> 'open'
         THEN (ARRAY['answered', 'voicemail', 'no_answer', 'busy'])[1 + h.c % 4] END,
    CASE k.kind WHEN 'done' THEN 'platform' WHEN 'recovered' THEN 'recovery' END,
    CASE WHEN k.kind <> 'done' THEN md5($1 || '/missing/' || i)::uuid END,
    CASE WHEN k.kind <> 'done' THEN k.at + interval '30 minutes' END,
    k.at + interval '30 minutes',
    CASE WHEN k.kind = 'recovered' THEN 'recovered' END,
    CASE WHEN k.kind = 'recovered' THEN md5($1 || '/resolution/' || i)::uuid END,
    CASE WHEN k.kind = 'recovered' THEN k.at + interval '40 minutes' END,
    CASE WHEN k.kind = 'recovered' THEN 'recovery' END
FROM generate_series($2::bigint, $3::bigint) AS i
CROSS JOIN LATERAL (SELECT (i * 2654435761) % 1000003 AS c, i * 4 AS j) h
CROSS JOIN LATERAL (SELECT
    CASE WHEN h.c % 1000 < 2 THEN 'open' WHEN h.c % 1000 < 8 THEN 'recovered'
         ELSE 'done' END AS kind,
    CASE WHEN h.c % 1000 < 2
         THEN $4 - interval '1 hour' - ((i * 40503) % 172800) * interval '1 second'
         ELSE $4 - interval '1 hour' - ((i * 40503) % 7776000) * interval '1 second'
    END AS at) k";

/// Every bucket from `$3` (30 days before today, UTC) to the end of today.
const BUCKETS: &str = "
INSERT INTO delivery_buckets (tenant_id, bucket_start, accepted, delivered, recovered, missing)
SELECT $1, b, a, a - a / 14 - n % 5, n % 7, CASE WHEN b >= $2 THEN n % 3 ELSE 0 END
FROM generate_series($3::timestamptz, $2::timestamptz + interval '1 day' - interval '10 minutes',
                     interval '10 minutes') WITH ORDINALITY AS g(b, n)
CROSS JOIN LATERAL (SELECT ($4::bigint * (200 + (n * 37) % 300) / 10) AS a) x";

/// What was loaded, for the report.
#[derive(Debug, Clone, Copy)]
pub struct Loaded {
    /// Rows of the console's tenant.
    pub jobs: i64,
    pub exceptions: i64,
    pub open_exceptions: i64,
    pub launches: i64,
    pub open_missing: i64,
    pub buckets_today: i64,
    /// Seconds the whole load took (inserts, index builds, `VACUUM (ANALYZE)`).
    pub seconds: f64,
}

/// Inserts `rows` rows with `sql` in chunks (`$1` tenant, `$2`..`$3` row
/// numbers, `$4` now, `$5` the tenant's job count), logging each.
async fn chunks(
    pool: &PgPool,
    what: &str,
    sql: &str,
    tenant: &str,
    rows: i64,
    now: DateTime<Utc>,
    jobs: i64,
) -> Result<()> {
    let mut from = 0;
    while from < rows {
        let to = (from + CHUNK).min(rows) - 1;
        let started = Instant::now();
        sqlx::query(sql)
            .bind(tenant)
            .bind(from)
            .bind(to)
            .bind(now)
            .bind(jobs.max(1))
            .execute(pool)
            .await
            .with_context(|| format!("inserting {what} of {tenant}"))?;
        from = to + 1;
        info!(
            tenant,
            rows = from,
            of = rows,
            seconds = format!("{:.1}", started.elapsed().as_secs_f64()),
            "{what} inserted"
        );
    }
    Ok(())
}

/// Loads everything for both tenants.
pub async fn load(pool: &PgPool, jobs: i64, exceptions: i64) -> Result<Loaded> {
    let started = Instant::now();
    let now = Utc::now();
    let today = now
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .context("midnight")?
        .and_utc();

    // Each index's definition, to build it again after the load.
    let indexes: Vec<(String, String)> = sqlx::query_as(
        "SELECT indexname::text, indexdef FROM pg_indexes
         WHERE schemaname = current_schema() AND tablename = ANY($1)
           AND indexname NOT IN (SELECT conname FROM pg_constraint)
         ORDER BY tablename, indexname",
    )
    .bind(INDEXED.as_slice())
    .fetch_all(pool)
    .await
    .context("reading the index definitions")?;
    for (name, _) in &indexes {
        sqlx::query(&format!("DROP INDEX {name}"))
            .execute(pool)
            .await
            .with_context(|| format!("dropping {name} for the load"))?;
    }
    info!(
        indexes = indexes.len(),
        "secondary indexes dropped for the load; they are built again after it"
    );

    for (tenant, share) in [(TENANT, 1), (OTHER_TENANT, 10)] {
        let tenant_jobs = jobs / share;
        info!(
            tenant,
            jobs = tenant_jobs,
            "loading jobs (~15% still to come, the rest in the past 90 days)"
        );
        chunks(pool, "jobs", JOBS, tenant, tenant_jobs, now, tenant_jobs).await?;
        let tenant_exceptions = exceptions / share;
        info!(
            tenant,
            exceptions = tenant_exceptions,
            "loading exceptions (~20% open)"
        );
        chunks(
            pool,
            "exceptions",
            EXCEPTIONS,
            tenant,
            tenant_exceptions,
            now,
            tenant_jobs,
        )
        .await?;
        let launches = tenant_jobs / 4;
        info!(
            tenant,
            launches, "loading launches (0.2% missing and still open)"
        );
        chunks(
            pool,
            "launches",
            LAUNCHES,
            tenant,
            launches,
            now,
            tenant_jobs,
        )
        .await?;
        sqlx::query(BUCKETS)
            .bind(tenant)
            .bind(today)
            .bind(today - chrono::Duration::days(30))
            .bind(10 / share)
            .execute(pool)
            .await
            .with_context(|| format!("inserting the delivery buckets of {tenant}"))?;
        info!(
            tenant,
            "delivery buckets inserted (the last 30 days and today's 144)"
        );
    }

    let mut conn = pool.acquire().await?;
    sqlx::query("SET maintenance_work_mem = '256MB'")
        .execute(&mut *conn)
        .await?;
    for (name, definition) in &indexes {
        let built = Instant::now();
        info!(index = %name, "building index");
        sqlx::query(definition)
            .execute(&mut *conn)
            .await
            .with_context(|| format!("building {name}: {definition}"))?;
        info!(
            index = %name,
            seconds = format!("{:.1}", built.elapsed().as_secs_f64()),
            "index built"
        );
    }
    drop(conn);
    info!("VACUUM (ANALYZE)");
    sqlx::query("VACUUM (ANALYZE)")
        .execute(pool)
        .await
        .context("VACUUM (ANALYZE)")?;
    let seconds = started.elapsed().as_secs_f64();

    let count = |sql: &'static str| async move {
        sqlx::query_scalar::<_, i64>(sql)
            .bind(TENANT)
            .fetch_one(pool)
            .await
            .with_context(|| format!("counting: {sql}"))
    };
    Ok(Loaded {
        jobs: count("SELECT count(*) FROM jobs WHERE tenant_id = $1").await?,
        exceptions: count("SELECT count(*) FROM exceptions WHERE tenant_id = $1").await?,
        open_exceptions: count(
            "SELECT count(*) FROM exceptions WHERE tenant_id = $1 AND status = 'open'",
        )
        .await?,
        launches: count("SELECT count(*) FROM launches WHERE tenant_id = $1").await?,
        open_missing: count(
            "SELECT count(*) FROM launches
             WHERE tenant_id = $1 AND missing_at IS NOT NULL AND resolution IS NULL",
        )
        .await?,
        buckets_today: count(
            "SELECT count(*) FROM delivery_buckets
             WHERE tenant_id = $1 AND bucket_start >= date_trunc('day', now() AT TIME ZONE 'UTC')
                 AT TIME ZONE 'UTC'",
        )
        .await?,
        seconds,
    })
}

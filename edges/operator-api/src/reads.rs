//! The read routes: every query is scoped to the token's tenant (its first condition, and
//! first in every index), so a token of one tenant cannot see another's rows; an id of
//! another tenant is simply not found.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use sqlx::{Postgres, QueryBuilder};
use uuid::Uuid;

use crate::app::AppState;
use crate::auth::{Principal, Role};
use crate::cursor::{limit, Cursor};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{param_id, Path, Query};
use crate::model::*;
use crate::query::*;

fn page<T>(mut items: Vec<T>, limit: i64, key: impl Fn(&T) -> Cursor) -> Page<T> {
    let more = items.len() as i64 > limit;
    items.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_cursor = if more {
        items.last().map(|i| key(i).encode())
    } else {
        None
    };
    Page { items, next_cursor }
}

/// Jobs, filtered, in order of planned time.
#[utoipa::path(get, path = "/v1/jobs", tag = "reads", params(JobsQuery, crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Page<Job>), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list_jobs(
    State(state): State<AppState>,
    principal: Principal,
    Query(q): Query<JobsQuery>,
) -> Result<Json<Page<Job>>, ApiError> {
    principal.require(Role::Viewer)?;
    let limit = limit(q.limit)?;
    let cursor = q.cursor.as_deref().map(Cursor::decode).transpose()?;
    let mut sql: QueryBuilder<Postgres> =
        QueryBuilder::new(format!("SELECT {JOB_COLUMNS} FROM jobs WHERE tenant_id = "));
    sql.push_bind(&principal.tenant_id);
    if let Some(s) = q.state {
        sql.push(" AND state = ").push_bind(s.as_str());
    }
    if q.active == Some(true) {
        // A literal list (not a bound array), so the planner can use the partial index
        // `jobs_active`, whose predicate is the same list.
        sql.push(ACTIVE_JOBS_PREDICATE);
    }
    if let Some(c) = &q.contact_id {
        param_id("contact_id", c)?;
        sql.push(" AND contact_id = ").push_bind(c);
    }
    if let Some(c) = &q.campaign_id {
        param_id("campaign_id", c)?;
        sql.push(" AND campaign_id = ").push_bind(c);
    }
    if let Some(f) = q.from {
        sql.push(" AND planned_at >= ").push_bind(f);
    }
    if let Some(t) = q.to {
        sql.push(" AND planned_at < ").push_bind(t);
    }
    if let Some(c) = cursor {
        sql.push(" AND (planned_at, job_id) > (")
            .push_bind(c.at)
            .push(", ")
            .push_bind(c.id)
            .push(")");
    }
    sql.push(" ORDER BY planned_at, job_id LIMIT ")
        .push_bind(limit + 1);
    let jobs: Vec<Job> = sql.build_query_as().fetch_all(state.pool()).await?;
    Ok(Json(page(jobs, limit, |j| Cursor {
        at: j.planned_at,
        id: j.job_id,
    })))
}

/// One job with its lineage.
#[utoipa::path(get, path = "/v1/jobs/{job_id}", tag = "reads",
    params(("job_id" = Uuid, Path, description = "The job"), crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = JobDetail), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get_job(
    State(state): State<AppState>,
    principal: Principal,
    Path(job_id): Path<Uuid>,
) -> Result<Json<JobDetail>, ApiError> {
    principal.require(Role::Viewer)?;
    let job = find_job(&state, &principal.tenant_id, job_id)
        .await?
        .ok_or(ApiError::NotFound { what: "job" })?;
    // Walk the chain both ways, bounded (a chain is a handful of moves).
    let sql = format!(
        "WITH RECURSIVE back(job_id, depth) AS (
             SELECT replaces_job_id, 1 FROM jobs WHERE tenant_id = $1 AND job_id = $2
             UNION ALL
             SELECT j.replaces_job_id, b.depth + 1 FROM jobs j JOIN back b ON j.job_id = b.job_id
             WHERE j.tenant_id = $1 AND b.depth < 50
         ), fwd(job_id, depth) AS (
             SELECT replaced_by_job_id, 1 FROM jobs WHERE tenant_id = $1 AND job_id = $2
             UNION ALL
             SELECT j.replaced_by_job_id, f.depth + 1 FROM jobs j JOIN fwd f ON j.job_id = f.job_id
             WHERE j.tenant_id = $1 AND f.depth < 50
         )
         SELECT {JOB_COLUMNS} FROM jobs WHERE tenant_id = $1 AND (job_id = $2
             OR job_id IN (SELECT job_id FROM back) OR job_id IN (SELECT job_id FROM fwd))
         ORDER BY created_at, job_id"
    );
    let lineage: Vec<Job> = sqlx::query_as(&sql)
        .bind(&principal.tenant_id)
        .bind(job_id)
        .fetch_all(state.pool())
        .await?;
    Ok(Json(JobDetail { job, lineage }))
}

pub(crate) async fn find_job(
    state: &AppState,
    tenant: &str,
    job_id: Uuid,
) -> Result<Option<Job>, ApiError> {
    let sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE tenant_id = $1 AND job_id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(tenant)
        .bind(job_id)
        .fetch_optional(state.pool())
        .await?)
}

/// Exception cases, open ones by default, oldest first.
#[utoipa::path(get, path = "/v1/exceptions", tag = "reads", params(ExceptionsQuery, crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Page<Exception>), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list_exceptions(
    State(state): State<AppState>,
    principal: Principal,
    Query(q): Query<ExceptionsQuery>,
) -> Result<Json<Page<Exception>>, ApiError> {
    principal.require(Role::Viewer)?;
    let limit = limit(q.limit)?;
    let status = match q.status.unwrap_or_default() {
        ExceptionFilter::Open => "open",
        ExceptionFilter::Resolved => "resolved",
        ExceptionFilter::Ignored => "ignored",
        ExceptionFilter::All => "all",
    };
    let cursor = q.cursor.as_deref().map(Cursor::decode).transpose()?;
    let mut sql: QueryBuilder<Postgres> = QueryBuilder::new(format!(
        "SELECT {EXCEPTION_COLUMNS} FROM exceptions WHERE tenant_id = "
    ));
    sql.push_bind(&principal.tenant_id);
    if status != "all" {
        sql.push(" AND status = ").push_bind(status);
    }
    if let Some(t) = &q.exception_type {
        param_id("exception_type", t)?;
        sql.push(" AND exception_type = ").push_bind(t);
    }
    if let Some(c) = cursor {
        sql.push(" AND (first_seen_at, exception_id) > (")
            .push_bind(c.at)
            .push(", ")
            .push_bind(c.id)
            .push(")");
    }
    sql.push(" ORDER BY first_seen_at, exception_id LIMIT ")
        .push_bind(limit + 1);
    let rows: Vec<Exception> = sql.build_query_as().fetch_all(state.pool()).await?;
    Ok(Json(page(rows, limit, |e| Cursor {
        at: e.first_seen_at,
        id: e.exception_id,
    })))
}

/// The audit log, newest first: who did what, to what, when, why and with what result
/// (operators' requests and what the services made of them; control changes included).
/// Operators and admins only: it names who acted.
#[utoipa::path(get, path = "/v1/audit", tag = "reads", params(AuditQuery, crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Page<AuditEntry>), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn audit(
    State(state): State<AppState>,
    principal: Principal,
    Query(q): Query<AuditQuery>,
) -> Result<Json<Page<AuditEntry>>, ApiError> {
    principal.require(Role::Operator)?;
    let limit = limit(q.limit)?;
    let cursor = q.cursor.as_deref().map(Cursor::decode).transpose()?;
    let mut sql: QueryBuilder<Postgres> = QueryBuilder::new(format!(
        "SELECT {AUDIT_COLUMNS} FROM audit WHERE tenant_id = "
    ));
    sql.push_bind(&principal.tenant_id);
    for (field, column, value) in [
        ("action", " AND action = ", &q.action),
        ("subject_type", " AND subject_type = ", &q.subject_type),
        ("contact_id", " AND contact_id = ", &q.contact_id),
    ] {
        if let Some(v) = value {
            param_id(field, v)?;
            sql.push(column).push_bind(v);
        }
    }
    if let Some(c) = cursor {
        sql.push(" AND (occurred_at, event_id) < (")
            .push_bind(c.at)
            .push(", ")
            .push_bind(c.id)
            .push(")");
    }
    sql.push(" ORDER BY occurred_at DESC, event_id DESC LIMIT ")
        .push_bind(limit + 1);
    let rows: Vec<AuditEntry> = sql.build_query_as().fetch_all(state.pool()).await?;
    Ok(Json(page(rows, limit, |e| Cursor {
        at: e.occurred_at,
        id: e.event_id,
    })))
}

/// Occupancy of the slot grid over a range of at most 7 days (longer is 400).
#[utoipa::path(get, path = "/v1/slots", tag = "reads", params(RangeQuery, crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Slots), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn slots(
    State(state): State<AppState>,
    principal: Principal,
    Query(q): Query<RangeQuery>,
) -> Result<Json<Slots>, ApiError> {
    principal.require(Role::Viewer)?;
    let (from, to) = q.within(MAX_SLOT_RANGE)?;
    let slots: Vec<SlotOccupancy> = sqlx::query_as(
        "SELECT slot, min(slot_at) AS slot_at,
                count(*) FILTER (WHERE allocated AND NOT cancelled) AS booked,
                count(*) FILTER (WHERE cancelled) AS cancelled
         FROM slots WHERE tenant_id = $1 AND slot_at >= $2 AND slot_at < $3
         GROUP BY slot ORDER BY slot",
    )
    .bind(&principal.tenant_id)
    .bind(from)
    .bind(to)
    .fetch_all(state.pool())
    .await?;
    let capacity: Option<i64> = sqlx::query_scalar(
        "SELECT (value -> 'grid' ->> 'launches_per_slot')::bigint FROM control_settings
         WHERE tenant_id = $1 AND setting = 'grid_settings' AND campaign_id = ''",
    )
    .bind(&principal.tenant_id)
    .fetch_optional(state.pool())
    .await?
    .flatten();
    Ok(Json(Slots {
        from,
        to,
        capacity: capacity.unwrap_or(1),
        slots,
    }))
}

/// Launches whose completion is missing and not yet resolved, oldest first.
#[utoipa::path(get, path = "/v1/launches/missing", tag = "reads", params(PageQuery, crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Page<MissingLaunch>), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn missing_launches(
    State(state): State<AppState>,
    principal: Principal,
    Query(q): Query<PageQuery>,
) -> Result<Json<Page<MissingLaunch>>, ApiError> {
    principal.require(Role::Viewer)?;
    let limit = limit(q.limit)?;
    let cursor = q.cursor.as_deref().map(Cursor::decode).transpose()?;
    // The page's cases first, then each one's recovery lookups (by the partial index
    // `audit_recovery_lookups`), so only the rows shown are counted.
    let mut sql: QueryBuilder<Postgres> = QueryBuilder::new(format!(
        "SELECT m.*, coalesce(r.attempts, 0) AS recovery_attempts, r.last_lookup, r.last_lookup_at \
         FROM (SELECT {MISSING_COLUMNS} FROM launches \
         WHERE missing_at IS NOT NULL AND resolution IS NULL AND tenant_id = "
    ));
    sql.push_bind(&principal.tenant_id);
    if let Some(c) = cursor {
        sql.push(" AND (missing_at, launch_id) > (")
            .push_bind(c.at)
            .push(", ")
            .push_bind(c.id)
            .push(")");
    }
    sql.push(" ORDER BY missing_at, launch_id LIMIT ")
        .push_bind(limit + 1)
        .push(
            ") m LEFT JOIN LATERAL (SELECT count(*) AS attempts, \
             (array_agg(a.detail ORDER BY a.occurred_at DESC, a.event_id DESC))[1] AS last_lookup, \
             max(a.occurred_at) AS last_lookup_at FROM audit a WHERE a.tenant_id = ",
        )
        .push_bind(&principal.tenant_id)
        // A literal, not a parameter: a generic plan can only use a partial index whose
        // predicate the query states.
        .push(format_args!(
            " AND a.action = '{}' AND a.subject_id = m.launch_id::text) r ON true \
             ORDER BY m.missing_at, m.launch_id",
            callstream_schemas::AUDIT_RECOVERY_LOOKUP
        ));
    let rows: Vec<MissingLaunch> = sql.build_query_as().fetch_all(state.pool()).await?;
    Ok(Json(page(rows, limit, |m| Cursor {
        at: m.missing_at,
        id: m.launch_id,
    })))
}

/// Delivery per 10-minute bucket of accepted launches, over a range of at most 31 days
/// (longer is 400).
#[utoipa::path(get, path = "/v1/delivery", tag = "reads", params(RangeQuery, crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Vec<DeliveryBucket>), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn delivery(
    State(state): State<AppState>,
    principal: Principal,
    Query(q): Query<RangeQuery>,
) -> Result<Json<Vec<DeliveryBucket>>, ApiError> {
    principal.require(Role::Viewer)?;
    let (from, to) = q.within(MAX_DELIVERY_RANGE)?;
    let rows: Vec<(DateTime<Utc>, i64, i64, i64, i64)> = sqlx::query_as(
        "SELECT bucket_start, accepted, delivered, recovered, missing FROM delivery_buckets
         WHERE tenant_id = $1 AND bucket_start >= $2 AND bucket_start < $3 ORDER BY bucket_start",
    )
    .bind(&principal.tenant_id)
    .bind(from)
    .bind(to)
    .fetch_all(state.pool())
    .await?;
    Ok(Json(
        rows.into_iter()
            .map(
                |(bucket_start, accepted, delivered, recovered, missing)| DeliveryBucket {
                    bucket_start,
                    accepted,
                    delivered,
                    recovered,
                    missing,
                    delivery_rate: if accepted == 0 {
                        0.0
                    } else {
                        delivered as f64 / accepted as f64
                    },
                },
            )
            .collect(),
    ))
}

/// Every event of a contact, oldest first, with what happened and why.
#[utoipa::path(get, path = "/v1/contacts/{contact_id}/timeline", tag = "reads",
    params(("contact_id" = String, Path, description = "The contact", max_length = 256, pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"), PageQuery, crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Page<TimelineEntry>), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn timeline(
    State(state): State<AppState>,
    principal: Principal,
    Path(contact_id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<Page<TimelineEntry>>, ApiError> {
    principal.require(Role::Viewer)?;
    param_id("contact_id", &contact_id)?;
    let limit = limit(q.limit)?;
    let cursor = q.cursor.as_deref().map(Cursor::decode).transpose()?;
    let mut sql: QueryBuilder<Postgres> = QueryBuilder::new(
        "SELECT event_id, occurred_at, event_type, what, reason, causation_id, correlation_id, event
         FROM contact_timeline WHERE tenant_id = ",
    );
    sql.push_bind(&principal.tenant_id)
        .push(" AND contact_id = ")
        .push_bind(&contact_id);
    if let Some(c) = cursor {
        sql.push(" AND (occurred_at, event_id) > (")
            .push_bind(c.at)
            .push(", ")
            .push_bind(c.id)
            .push(")");
    }
    sql.push(" ORDER BY occurred_at, event_id LIMIT ")
        .push_bind(limit + 1);
    let rows: Vec<TimelineEntry> = sql.build_query_as().fetch_all(state.pool()).await?;
    if rows.is_empty() && cursor.is_none() {
        return Err(ApiError::NotFound { what: "contact" });
    }
    Ok(Json(page(rows, limit, |e| Cursor {
        at: e.occurred_at,
        id: e.event_id,
    })))
}

/// What needs a person now: open exceptions by type, open missing completions, and held
/// calls by the reason that holds them.
#[utoipa::path(get, path = "/v1/summary", tag = "reads", params(crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Summary), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)))]
pub async fn summary(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Json<Summary>, ApiError> {
    principal.require(Role::Viewer)?;
    let tenant = &principal.tenant_id;
    let pool = state.pool();
    let (open_exceptions, missing_completions, held_calls, dead_letters) = tokio::try_join!(
        sqlx::query_as::<_, Count>(
            "SELECT exception_type AS key, count(*) AS count FROM exceptions
             WHERE tenant_id = $1 AND status = 'open' GROUP BY 1 ORDER BY 2 DESC, 1",
        )
        .bind(tenant)
        .fetch_all(pool),
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM launches
             WHERE tenant_id = $1 AND missing_at IS NOT NULL AND resolution IS NULL",
        )
        .bind(tenant)
        .fetch_one(pool),
        sqlx::query_as::<_, Count>(
            "SELECT coalesce(reason, 'unknown') AS key, count(*) AS count FROM jobs
             WHERE tenant_id = $1 AND state = 'held' GROUP BY 1 ORDER BY 2 DESC, 1",
        )
        .bind(tenant)
        .fetch_all(pool),
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM dead_letters d WHERE d.tenant_id = $1 AND NOT EXISTS
                 (SELECT 1 FROM dead_letter_replays r
                  WHERE r.tenant_id = d.tenant_id AND r.letter_id = d.letter_id)",
        )
        .bind(tenant)
        .fetch_one(pool),
    )?;
    Ok(Json(Summary {
        open_exceptions,
        missing_completions,
        held_calls,
        dead_letters,
    }))
}

/// Dead letters, newest first: what failed, where and why, and whether it was replayed.
#[utoipa::path(get, path = "/v1/dead-letters", tag = "reads", params(PageQuery, crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Page<DeadLetter>), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn dead_letters(
    State(state): State<AppState>,
    principal: Principal,
    Query(q): Query<PageQuery>,
) -> Result<Json<Page<DeadLetter>>, ApiError> {
    principal.require(Role::Viewer)?;
    let limit = limit(q.limit)?;
    let cursor = q.cursor.as_deref().map(Cursor::decode).transpose()?;
    let mut sql: QueryBuilder<Postgres> = QueryBuilder::new(format!(
        "SELECT {DEAD_LETTER_COLUMNS} FROM dead_letters d LEFT JOIN dead_letter_replays r
         ON r.tenant_id = d.tenant_id AND r.letter_id = d.letter_id WHERE d.tenant_id = "
    ));
    sql.push_bind(&principal.tenant_id);
    if let Some(c) = cursor {
        sql.push(" AND (d.dead_at, d.letter_id) < (")
            .push_bind(c.at)
            .push(", ")
            .push_bind(c.id)
            .push(")");
    }
    sql.push(" ORDER BY d.dead_at DESC, d.letter_id DESC LIMIT ")
        .push_bind(limit + 1);
    let rows: Vec<DeadLetter> = sql.build_query_as().fetch_all(state.pool()).await?;
    Ok(Json(page(rows, limit, |d| Cursor {
        at: d.dead_at,
        id: d.letter_id,
    })))
}

/// The current runtime settings.
#[utoipa::path(get, path = "/v1/control", tag = "reads", params(crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = Vec<ControlSetting>), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)))]
pub async fn control(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Json<Vec<ControlSetting>>, ApiError> {
    principal.require(Role::Viewer)?;
    let rows: Vec<ControlSetting> = sqlx::query_as(
        "SELECT setting, campaign_id, enabled, value, changed_at, actor_kind, actor_id, reason
         FROM control_settings WHERE tenant_id = $1 ORDER BY setting, campaign_id",
    )
    .bind(&principal.tenant_id)
    .fetch_all(state.pool())
    .await?;
    Ok(Json(rows))
}

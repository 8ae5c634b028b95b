//! The rows of the jobs view as a batch folds them, and the two upserts that write them.
//!
//! Each `Merge` matches its upsert's `ON CONFLICT` clause column by column (see
//! [`fold`](super::super::fold)).

use callstream_schemas::Timestamp;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::apply::copy::copy_rows;
use crate::apply::fold::{col, first, first_non_null, insert_unnest, take_if_newer, Merge};
use crate::view::Tables;

/// One change of a job row; `None` fields leave the stored value alone.
#[derive(Debug, Default)]
pub(super) struct JobRow<'a> {
    pub tenant_id: &'a str,
    pub job_id: Uuid,
    /// Written when the row is created, never changed.
    pub contact_id: &'a str,
    pub campaign_id: Option<&'a str>,
    pub origin: Option<&'static str>,
    pub attempt: Option<i32>,
    pub state: &'static str,
    pub state_rank: i16,
    pub state_at: Timestamp,
    pub state_event_id: Uuid,
    pub reason: Option<&'a str>,
    pub reason_detail: Option<&'a str>,
    pub plan_reason: Option<&'a str>,
    pub outcome: Option<&'a str>,
    pub earliest_at: Option<Timestamp>,
    pub requested_at: Option<Timestamp>,
    pub slot: Option<i64>,
    pub slot_at: Option<Timestamp>,
    pub time_zone: Option<&'a str>,
    pub time_zone_source: Option<&'static str>,
    pub replaces_job_id: Option<Uuid>,
    pub replaced_by_job_id: Option<Uuid>,
    pub launch_id: Option<Uuid>,
    pub provider_call_id: Option<&'a str>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl<'a> JobRow<'a> {
    pub(super) fn new(
        tenant_id: &'a str,
        job_id: Uuid,
        contact_id: &'a str,
        (state, state_rank): (&'static str, i16),
        at: Timestamp,
        event_id: Uuid,
    ) -> Self {
        Self {
            tenant_id,
            job_id,
            contact_id,
            state,
            state_rank,
            state_at: at,
            state_event_id: event_id,
            created_at: at,
            updated_at: at,
            ..Self::default()
        }
    }

    fn state_key(&self) -> (i16, Timestamp, Uuid) {
        (self.state_rank, self.state_at, self.state_event_id)
    }
}

impl Merge for JobRow<'_> {
    fn merge(&mut self, later: Self) {
        first(&mut self.campaign_id, later.campaign_id);
        first(&mut self.origin, later.origin);
        first(&mut self.attempt, later.attempt);
        first(&mut self.plan_reason, later.plan_reason);
        first(&mut self.earliest_at, later.earliest_at);
        first(&mut self.requested_at, later.requested_at);
        first(&mut self.slot, later.slot);
        first(&mut self.slot_at, later.slot_at);
        first(&mut self.time_zone, later.time_zone);
        first(&mut self.time_zone_source, later.time_zone_source);
        first(&mut self.replaces_job_id, later.replaces_job_id);
        first(&mut self.replaced_by_job_id, later.replaced_by_job_id);
        first(&mut self.launch_id, later.launch_id);
        first(&mut self.provider_call_id, later.provider_call_id);
        if later.state_key() > self.state_key() {
            self.state = later.state;
            self.reason = later.reason;
            self.reason_detail = later.reason_detail;
            self.outcome = later.outcome;
            self.state_rank = later.state_rank;
            self.state_at = later.state_at;
            self.state_event_id = later.state_event_id;
        }
        self.created_at = self.created_at.min(later.created_at);
        self.updated_at = self.updated_at.max(later.updated_at);
    }
}

/// The bound columns of `jobs` (`planned_at` is generated), in the order both writes use.
const JOB_COLUMNS: &[(&str, &str)] = &[
    ("tenant_id", "text"),
    ("job_id", "uuid"),
    ("contact_id", "text"),
    ("campaign_id", "text"),
    ("origin", "text"),
    ("attempt", "int4"),
    ("state", "text"),
    ("state_rank", "int2"),
    ("state_at", "timestamptz"),
    ("state_event_id", "uuid"),
    ("reason", "text"),
    ("reason_detail", "text"),
    ("plan_reason", "text"),
    ("outcome", "text"),
    ("earliest_at", "timestamptz"),
    ("requested_at", "timestamptz"),
    ("slot", "int8"),
    ("slot_at", "timestamptz"),
    ("time_zone", "text"),
    ("time_zone_source", "text"),
    ("replaces_job_id", "uuid"),
    ("replaced_by_job_id", "uuid"),
    ("launch_id", "uuid"),
    ("provider_call_id", "text"),
    ("created_at", "timestamptz"),
    ("updated_at", "timestamptz"),
];

fn names(columns: &[(&'static str, &str)]) -> Vec<&'static str> {
    columns.iter().map(|(name, _)| *name).collect()
}

/// Writes job rows into a table that holds none of them (see [`crate::apply::Write::Copy`]).
pub(super) async fn copy_jobs(
    conn: &mut PgConnection,
    tables: Tables,
    rows: &[JobRow<'_>],
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    copy_rows(
        conn,
        &tables.name("jobs"),
        &names(JOB_COLUMNS),
        rows,
        |f, r| {
            f.text(Some(r.tenant_id))
                .uuid(Some(r.job_id))
                .text(Some(r.contact_id))
                .text(r.campaign_id)
                .text(r.origin)
                .int4(r.attempt)
                .text(Some(r.state))
                .int2(Some(r.state_rank))
                .timestamp(Some(r.state_at))
                .uuid(Some(r.state_event_id))
                .text(r.reason)
                .text(r.reason_detail)
                .text(r.plan_reason)
                .text(r.outcome)
                .timestamp(r.earliest_at)
                .timestamp(r.requested_at)
                .int8(r.slot)
                .timestamp(r.slot_at)
                .text(r.time_zone)
                .text(r.time_zone_source)
                .uuid(r.replaces_job_id)
                .uuid(r.replaced_by_job_id)
                .uuid(r.launch_id)
                .text(r.provider_call_id)
                .timestamp(Some(r.created_at))
                .timestamp(Some(r.updated_at));
        },
    )
    .await?;
    Ok(())
}

/// Upserts every job row of a batch in one statement.
pub(super) async fn write_jobs(
    conn: &mut PgConnection,
    tables: Tables,
    rows: &[JobRow<'_>],
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let insert = insert_unnest(&tables.name("jobs"), JOB_COLUMNS);
    let sql = format!(
        "{insert}
         ON CONFLICT (tenant_id, job_id) DO UPDATE SET
             {first}, {newer},
             created_at = LEAST(t.created_at, EXCLUDED.created_at),
             updated_at = GREATEST(t.updated_at, EXCLUDED.updated_at)",
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
        .bind(col(rows, |r| r.tenant_id))
        .bind(col(rows, |r| r.job_id))
        .bind(col(rows, |r| r.contact_id))
        .bind(col(rows, |r| r.campaign_id))
        .bind(col(rows, |r| r.origin))
        .bind(col(rows, |r| r.attempt))
        .bind(col(rows, |r| r.state))
        .bind(col(rows, |r| r.state_rank))
        .bind(col(rows, |r| r.state_at))
        .bind(col(rows, |r| r.state_event_id))
        .bind(col(rows, |r| r.reason))
        .bind(col(rows, |r| r.reason_detail))
        .bind(col(rows, |r| r.plan_reason))
        .bind(col(rows, |r| r.outcome))
        .bind(col(rows, |r| r.earliest_at))
        .bind(col(rows, |r| r.requested_at))
        .bind(col(rows, |r| r.slot))
        .bind(col(rows, |r| r.slot_at))
        .bind(col(rows, |r| r.time_zone))
        .bind(col(rows, |r| r.time_zone_source))
        .bind(col(rows, |r| r.replaces_job_id))
        .bind(col(rows, |r| r.replaced_by_job_id))
        .bind(col(rows, |r| r.launch_id))
        .bind(col(rows, |r| r.provider_call_id))
        .bind(col(rows, |r| r.created_at))
        .bind(col(rows, |r| r.updated_at))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// One change of a `job_launches` row: the launch's job, or one of its completions.
#[derive(Debug)]
pub(super) struct LinkRow<'a> {
    pub tenant_id: &'a str,
    pub launch_id: Uuid,
    pub job_id: Option<Uuid>,
    /// The contact of the launch (not stored: a completed job row created from this
    /// launch is created with it).
    pub contact_id: &'a str,
    pub completion_event_id: Option<Uuid>,
    pub completion_at: Option<Timestamp>,
    pub outcome: Option<&'a str>,
}

impl<'a> LinkRow<'a> {
    pub(super) fn link(
        tenant_id: &'a str,
        launch_id: Uuid,
        job_id: Uuid,
        contact_id: &'a str,
    ) -> Self {
        Self {
            tenant_id,
            launch_id,
            job_id: Some(job_id),
            contact_id,
            completion_event_id: None,
            completion_at: None,
            outcome: None,
        }
    }

    pub(super) fn completion(
        tenant_id: &'a str,
        launch_id: Uuid,
        contact_id: &'a str,
        event_id: Uuid,
        at: Timestamp,
        outcome: &'a str,
    ) -> Self {
        Self {
            tenant_id,
            launch_id,
            job_id: None,
            contact_id,
            completion_event_id: Some(event_id),
            completion_at: Some(at),
            outcome: Some(outcome),
        }
    }
}

impl Merge for LinkRow<'_> {
    fn merge(&mut self, later: Self) {
        first(&mut self.job_id, later.job_id);
        // The greatest `(completion_at, completion_event_id)` is kept, as in `write_links`.
        let Some(theirs) = later.completion_at.zip(later.completion_event_id) else {
            return;
        };
        let newer = match self.completion_at.zip(self.completion_event_id) {
            Some(mine) => theirs > mine,
            None => true,
        };
        if newer {
            self.completion_event_id = later.completion_event_id;
            self.completion_at = later.completion_at;
            self.outcome = later.outcome;
        }
    }
}

impl From<&LinkRow<'_>> for MergedLink {
    fn from(r: &LinkRow<'_>) -> Self {
        Self {
            tenant_id: r.tenant_id.to_owned(),
            launch_id: r.launch_id,
            job_id: r.job_id,
            completion_event_id: r.completion_event_id,
            completion_at: r.completion_at,
            outcome: r.outcome.map(str::to_owned),
        }
    }
}

const LINK_COLUMNS: &[(&str, &str)] = &[
    ("tenant_id", "text"),
    ("launch_id", "uuid"),
    ("job_id", "uuid"),
    ("completion_event_id", "uuid"),
    ("completion_at", "timestamptz"),
    ("outcome", "text"),
];

/// Writes launch links into a table that holds none of them (see
/// [`crate::apply::Write::Copy`]).
pub(super) async fn copy_links(
    conn: &mut PgConnection,
    tables: Tables,
    rows: &[LinkRow<'_>],
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    copy_rows(
        conn,
        &tables.name("job_launches"),
        &names(LINK_COLUMNS),
        rows,
        |f, r| {
            f.text(Some(r.tenant_id))
                .uuid(Some(r.launch_id))
                .uuid(r.job_id)
                .uuid(r.completion_event_id)
                .timestamp(r.completion_at)
                .text(r.outcome);
        },
    )
    .await?;
    Ok(())
}

/// A `job_launches` row as stored after a batch's upsert.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct MergedLink {
    pub tenant_id: String,
    pub launch_id: Uuid,
    pub job_id: Option<Uuid>,
    pub completion_event_id: Option<Uuid>,
    pub completion_at: Option<Timestamp>,
    pub outcome: Option<String>,
}

/// Upserts every launch link and completion of a batch in one statement and returns the
/// rows it inserted or changed, as stored. A row the batch does not change (the launch's
/// second link, from its `CallLaunch`; a completion no greater than the stored one) is
/// neither rewritten nor returned: whatever it completes was completed in the transaction
/// that stored it.
pub(super) async fn write_links(
    conn: &mut PgConnection,
    tables: Tables,
    rows: &[LinkRow<'_>],
) -> Result<Vec<MergedLink>, sqlx::Error> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let insert = insert_unnest(&tables.name("job_launches"), LINK_COLUMNS);
    // A NULL incoming completion never wins: the row comparison with NULLs is NULL.
    let greater = "t.completion_at IS NULL OR (EXCLUDED.completion_at, EXCLUDED.completion_event_id) > (t.completion_at, t.completion_event_id)";
    let sql = format!(
        "{insert}
         ON CONFLICT (tenant_id, launch_id) DO UPDATE SET
             job_id = COALESCE(t.job_id, EXCLUDED.job_id),
             completion_event_id = CASE WHEN {greater} THEN EXCLUDED.completion_event_id ELSE t.completion_event_id END,
             outcome = CASE WHEN {greater} THEN EXCLUDED.outcome ELSE t.outcome END,
             completion_at = CASE WHEN {greater} THEN EXCLUDED.completion_at ELSE t.completion_at END
         WHERE (t.job_id IS NULL AND EXCLUDED.job_id IS NOT NULL)
            OR (EXCLUDED.completion_at IS NOT NULL AND ({greater}))
         RETURNING tenant_id, launch_id, job_id, completion_event_id, completion_at, outcome"
    );
    sqlx::query_as(&sql)
        .bind(col(rows, |r| r.tenant_id))
        .bind(col(rows, |r| r.launch_id))
        .bind(col(rows, |r| r.job_id))
        .bind(col(rows, |r| r.completion_event_id))
        .bind(col(rows, |r| r.completion_at))
        .bind(col(rows, |r| r.outcome))
        .fetch_all(&mut *conn)
        .await
}

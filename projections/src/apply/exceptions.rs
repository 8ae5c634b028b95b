//! The exceptions view: one row per exception case; its latest status wins, closed beats
//! open, and the earliest opening is kept with who opened it. One upsert per batch.

use callstream_schemas::{AnyEvent, ExceptionEvent, ExceptionStatus, Timestamp};
use sqlx::PgConnection;
use uuid::Uuid;

use super::copy::copy_rows;
use super::fold::{col, first, first_non_null, insert_unnest, least, take_if_newer, Fold, Merge};
use super::simple::actor_label;
use super::{Located, Write};
use crate::view::Tables;

/// One change of an exception row.
#[derive(Debug)]
struct ExceptionRow<'a> {
    tenant_id: &'a str,
    exception_id: Uuid,
    /// Written when the row is created, never changed.
    exception_type: &'static str,
    contact_id: &'a str,
    status: &'static str,
    status_rank: i16,
    status_at: Timestamp,
    status_event_id: Uuid,
    urgent: bool,
    campaign_id: Option<&'a str>,
    job_id: Option<Uuid>,
    launch_id: Option<Uuid>,
    call_id: Option<&'a str>,
    operation_id: Option<Uuid>,
    reason: &'a str,
    detail: Option<&'a str>,
    assignee: Option<&'a str>,
    opened_at: Option<Timestamp>,
    opened_by: Option<String>,
    resolved_at: Option<Timestamp>,
    resolved_by: Option<String>,
    first_seen_at: Timestamp,
    updated_at: Timestamp,
}

impl<'a> ExceptionRow<'a> {
    fn of(e: &'a ExceptionEvent) -> Self {
        let status_rank: i16 = match e.status {
            ExceptionStatus::Open | ExceptionStatus::Unknown => 0,
            ExceptionStatus::Resolved | ExceptionStatus::Ignored => 1,
        };
        let open = e.status == ExceptionStatus::Open;
        let actor = actor_label(&e.actor);
        let closed = status_rank == 1;
        Self {
            tenant_id: &e.tenant_id,
            exception_id: e.exception_id,
            exception_type: e.exception_type.as_str(),
            contact_id: &e.contact_id,
            status: e.status.as_str(),
            status_rank,
            status_at: e.occurred_at,
            status_event_id: e.event_id,
            urgent: e.urgent,
            campaign_id: e.campaign_id.as_deref(),
            job_id: e.job_id,
            launch_id: e.launch_id,
            call_id: e.call_id.as_deref(),
            operation_id: e.operation_id,
            reason: &e.reason,
            detail: e.detail.as_deref(),
            assignee: e.assignee.as_deref(),
            opened_at: open.then_some(e.occurred_at),
            opened_by: open.then(|| actor.clone()),
            resolved_at: closed.then_some(e.occurred_at),
            resolved_by: closed.then_some(actor),
            first_seen_at: e.occurred_at,
            updated_at: e.occurred_at,
        }
    }

    fn status_key(&self) -> (i16, Timestamp, Uuid) {
        (self.status_rank, self.status_at, self.status_event_id)
    }
}

impl Merge for ExceptionRow<'_> {
    fn merge(&mut self, later: Self) {
        first(&mut self.campaign_id, later.campaign_id);
        first(&mut self.job_id, later.job_id);
        first(&mut self.launch_id, later.launch_id);
        first(&mut self.call_id, later.call_id);
        first(&mut self.operation_id, later.operation_id);
        let later_is_newer = later.status_key() > self.status_key();
        // The earliest opening and its opener; a tie keeps the first.
        if let Some(at) = later.opened_at {
            if self.opened_at.is_none_or(|mine| at < mine) {
                self.opened_by = later.opened_by;
            }
        }
        self.opened_at = least(self.opened_at, later.opened_at);
        if later_is_newer {
            self.status = later.status;
            self.reason = later.reason;
            self.detail = later.detail;
            self.assignee = later.assignee;
            self.urgent = later.urgent;
            self.resolved_at = later.resolved_at;
            self.resolved_by = later.resolved_by;
            self.status_rank = later.status_rank;
            self.status_at = later.status_at;
            self.status_event_id = later.status_event_id;
        }
        self.first_seen_at = self.first_seen_at.min(later.first_seen_at);
        self.updated_at = self.updated_at.max(later.updated_at);
    }
}

/// The columns of `exceptions`, in the order both writes use.
const COLUMNS: &[(&str, &str)] = &[
    ("tenant_id", "text"),
    ("exception_id", "uuid"),
    ("exception_type", "text"),
    ("status", "text"),
    ("status_rank", "int2"),
    ("status_at", "timestamptz"),
    ("status_event_id", "uuid"),
    ("urgent", "bool"),
    ("contact_id", "text"),
    ("campaign_id", "text"),
    ("job_id", "uuid"),
    ("launch_id", "uuid"),
    ("call_id", "text"),
    ("operation_id", "uuid"),
    ("reason", "text"),
    ("detail", "text"),
    ("assignee", "text"),
    ("opened_at", "timestamptz"),
    ("opened_by", "text"),
    ("resolved_at", "timestamptz"),
    ("resolved_by", "text"),
    ("first_seen_at", "timestamptz"),
    ("updated_at", "timestamptz"),
];

pub(super) async fn apply(
    conn: &mut PgConnection,
    tables: Tables,
    records: &[Located<'_>],
    how: Write,
) -> Result<(), sqlx::Error> {
    // Few: upserted however the exceptions are written.
    assignments(conn, tables, records).await?;
    let mut fold = Fold::default();
    for record in records {
        if let AnyEvent::ExceptionEvent(e) = record.event {
            fold.add((e.tenant_id.as_str(), e.exception_id), ExceptionRow::of(e));
        }
    }
    if fold.is_empty() {
        return Ok(());
    }
    let rows = fold.rows();
    let table = tables.name("exceptions");
    if how == Write::Copy {
        let names: Vec<&str> = COLUMNS.iter().map(|(name, _)| *name).collect();
        copy_rows(conn, &table, &names, rows, |f, r| {
            f.text(Some(r.tenant_id))
                .uuid(Some(r.exception_id))
                .text(Some(r.exception_type))
                .text(Some(r.status))
                .int2(Some(r.status_rank))
                .timestamp(Some(r.status_at))
                .uuid(Some(r.status_event_id))
                .bool(Some(r.urgent))
                .text(Some(r.contact_id))
                .text(r.campaign_id)
                .uuid(r.job_id)
                .uuid(r.launch_id)
                .text(r.call_id)
                .uuid(r.operation_id)
                .text(Some(r.reason))
                .text(r.detail)
                .text(r.assignee)
                .timestamp(r.opened_at)
                .text(r.opened_by.as_deref())
                .timestamp(r.resolved_at)
                .text(r.resolved_by.as_deref())
                .timestamp(Some(r.first_seen_at))
                .timestamp(Some(r.updated_at));
        })
        .await?;
        return Ok(());
    }
    let insert = insert_unnest(&table, COLUMNS);
    let sql = format!(
        "{insert}
         ON CONFLICT (tenant_id, exception_id) DO UPDATE SET
             {first},
             opened_by = CASE WHEN EXCLUDED.opened_at IS NOT NULL AND (t.opened_at IS NULL OR EXCLUDED.opened_at < t.opened_at) THEN EXCLUDED.opened_by ELSE t.opened_by END,
             opened_at = LEAST(t.opened_at, EXCLUDED.opened_at),
             {newer},
             first_seen_at = LEAST(t.first_seen_at, EXCLUDED.first_seen_at),
             updated_at = GREATEST(t.updated_at, EXCLUDED.updated_at)",
        first = first_non_null(&["campaign_id", "job_id", "launch_id", "call_id", "operation_id"]),
        newer = take_if_newer(
            "status",
            &[
                "status",
                "reason",
                "detail",
                "assignee",
                "urgent",
                "resolved_at",
                "resolved_by",
                "status_rank",
                "status_at",
                "status_event_id",
            ],
        ),
    );
    sqlx::query(&sql)
        .bind(col(rows, |r| r.tenant_id))
        .bind(col(rows, |r| r.exception_id))
        .bind(col(rows, |r| r.exception_type))
        .bind(col(rows, |r| r.status))
        .bind(col(rows, |r| r.status_rank))
        .bind(col(rows, |r| r.status_at))
        .bind(col(rows, |r| r.status_event_id))
        .bind(col(rows, |r| r.urgent))
        .bind(col(rows, |r| r.contact_id))
        .bind(col(rows, |r| r.campaign_id))
        .bind(col(rows, |r| r.job_id))
        .bind(col(rows, |r| r.launch_id))
        .bind(col(rows, |r| r.call_id))
        .bind(col(rows, |r| r.operation_id))
        .bind(col(rows, |r| r.reason))
        .bind(col(rows, |r| r.detail))
        .bind(col(rows, |r| r.assignee))
        .bind(col(rows, |r| r.opened_at))
        .bind(col(rows, |r| r.opened_by.as_deref()))
        .bind(col(rows, |r| r.resolved_at))
        .bind(col(rows, |r| r.resolved_by.as_deref()))
        .bind(col(rows, |r| r.first_seen_at))
        .bind(col(rows, |r| r.updated_at))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Assignments: the latest `exception.assign` per exception wins, by `(time, event id)`.
async fn assignments(
    conn: &mut PgConnection,
    tables: Tables,
    records: &[Located<'_>],
) -> Result<(), sqlx::Error> {
    struct Latest<'a> {
        tenant_id: &'a str,
        exception_id: Uuid,
        event: &'a callstream_schemas::AuditEvent,
    }
    impl Merge for Latest<'_> {
        fn merge(&mut self, later: Self) {
            if (later.event.occurred_at, later.event.event_id)
                > (self.event.occurred_at, self.event.event_id)
            {
                *self = later;
            }
        }
    }
    let mut fold = Fold::default();
    for record in records {
        let AnyEvent::AuditEvent(a) = record.event else {
            continue;
        };
        if a.action != callstream_schemas::AUDIT_EXCEPTION_ASSIGN || a.subject_type != "exception" {
            continue;
        }
        let Ok(exception_id) = a.subject_id.parse::<Uuid>() else {
            continue;
        };
        let latest = Latest {
            tenant_id: &a.tenant_id,
            exception_id,
            event: a,
        };
        fold.add((a.tenant_id.as_str(), exception_id), latest);
    }
    if fold.is_empty() {
        return Ok(());
    }
    let rows = fold.rows();
    let insert = insert_unnest(
        &tables.name("exception_assignments"),
        &[
            ("tenant_id", "text"),
            ("exception_id", "uuid"),
            ("assignee", "text"),
            ("assigned_at", "timestamptz"),
            ("assigned_by", "text"),
            ("event_id", "uuid"),
        ],
    );
    let later = "(EXCLUDED.assigned_at, EXCLUDED.event_id) > (t.assigned_at, t.event_id)";
    let set = ["assignee", "assigned_at", "assigned_by", "event_id"]
        .iter()
        .map(|c| format!("{c} = CASE WHEN {later} THEN EXCLUDED.{c} ELSE t.{c} END"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!("{insert} ON CONFLICT (tenant_id, exception_id) DO UPDATE SET {set}");
    sqlx::query(&sql)
        .bind(col(rows, |r| r.tenant_id))
        .bind(col(rows, |r| r.exception_id))
        .bind(col(rows, |r| {
            r.event.detail.as_deref().filter(|d| !d.is_empty())
        }))
        .bind(col(rows, |r| r.event.occurred_at))
        .bind(col(rows, |r| r.event.actor.id.as_str()))
        .bind(col(rows, |r| r.event.event_id))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

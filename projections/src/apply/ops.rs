//! The views about actions: audit (every operator and system action) and the contact
//! timeline (every event of a contact). Both keep the first row of an event, one insert
//! per batch: audit with `ON CONFLICT DO NOTHING`, the timeline's events with a plain
//! insert that falls back to it when the batch repeats a stored event. (Commands have a
//! file of their own.)

use callstream_schemas::{
    ActorKind, AnyEvent, AuditEvent, ContactCommand, ControlChange, Envelope, Timestamp,
};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use super::copy::copy_rows;
use super::fold::{col, insert_unnest, Fold};
use super::{Located, Write};
use crate::view::Tables;

/// The whole event as JSON (timestamps as epoch milliseconds, as the Avro types serialize).
pub(crate) fn event_json(event: &AnyEvent) -> Value {
    macro_rules! to_json {
        ($($variant:ident),+) => {
            match event {
                $(AnyEvent::$variant(e) => serde_json::to_value(e),)+
                // Contact state snapshots hold phone numbers and are not decisions; event
                // types added later show up once they are listed here.
                _ => Ok(Value::Null),
            }
        };
    }
    to_json!(
        CallEvent,
        ContactCommand,
        ScheduleRequest,
        ScheduleEvent,
        LaunchCommand,
        CallLaunch,
        CompletionMissing,
        CompletionResolved,
        CrmCommand,
        CrmResult,
        ExceptionEvent,
        ControlChange,
        Alert,
        AuditEvent
    )
    .unwrap_or(Value::Null)
}

fn text_field<'a>(json: &'a Value, names: &[&str]) -> Option<&'a str> {
    names
        .iter()
        .find_map(|n| json.get(*n).and_then(Value::as_str))
}

/// One timeline row.
struct TimelineRow<'a> {
    tenant_id: &'a str,
    event_id: uuid::Uuid,
    contact_id: String,
    occurred_at: Timestamp,
    event_type: String,
    what: Option<String>,
    reason: Option<String>,
    causation_id: Option<Uuid>,
    correlation_id: Option<Uuid>,
    topic: &'a str,
    partition: i32,
    offset: i64,
    /// The event as JSON text, bound as text and stored as `json` as it is.
    event: String,
}

/// Every event that names a contact becomes a timeline entry, with what happened (its
/// kind, status, outcome or action) and why (its reason).
fn timeline_row<'a>(record: &Located<'a>) -> Option<TimelineRow<'a>> {
    let json = event_json(record.event);
    let contact_id = text_field(&json, &["contact_id"])?.to_owned();
    let what = match record.event {
        // A live call event says `unknown` (the gateway keeps the raw status): the
        // timeline shows what the call meant, by the same rule the processors use.
        AnyEvent::CallEvent(e) => Some(e.mapped_outcome().as_str()),
        _ => text_field(
            &json,
            &[
                "kind",
                "status",
                "outcome",
                "action",
                "resolution",
                "setting",
            ],
        ),
    }
    .map(str::to_owned);
    let reason = text_field(&json, &["reason"]).map(str::to_owned);
    let Envelope {
        event_id,
        tenant_id,
        occurred_at,
        causation_id,
        correlation_id,
    } = record.event.envelope();
    Some(TimelineRow {
        tenant_id,
        event_id,
        contact_id,
        occurred_at,
        event_type: format!("{:?}", record.event.kind()),
        what,
        reason,
        causation_id,
        correlation_id,
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        event: json.to_string(),
    })
}

/// The holds a contact's state shows, as timeline entries: the contact processor holds a
/// job at its slot (a pause, calls held for an exception) with no event of its own. One
/// entry per hold (its id is derived from the job and the time it was held, so every
/// later state record that still shows it names the same entry), caused by what caused
/// the state change (the due launch it held). The state's phone number stays out.
fn hold_rows<'a>(record: &Located<'a>) -> Vec<TimelineRow<'a>> {
    let AnyEvent::ContactState(state) = record.event else {
        return Vec::new();
    };
    state
        .jobs
        .iter()
        .filter(|j| j.state == callstream_schemas::JobState::Held)
        .map(|job| {
            let event = serde_json::json!({
                "job_id": job.job_id.to_string(),
                "campaign_id": job.campaign_id,
                "reason": job.reason,
                "reason_detail": job.reason_detail,
                "held_at": job.updated_at.timestamp_millis(),
            });
            TimelineRow {
                tenant_id: &state.tenant_id,
                event_id: callstream_domain::ids::view::timeline_hold(
                    job.job_id,
                    job.updated_at.timestamp_millis(),
                ),
                contact_id: state.contact_id.clone(),
                occurred_at: job.updated_at,
                event_type: "JobHeld".into(),
                what: Some(
                    job.reason_detail
                        .clone()
                        .unwrap_or_else(|| "held".to_owned()),
                ),
                reason: Some(job.reason.clone()),
                causation_id: state.causation_id,
                correlation_id: state.correlation_id,
                topic: record.topic,
                partition: record.partition,
                offset: record.offset,
                event: event.to_string(),
            }
        })
        .collect()
}

pub(super) async fn timeline(
    conn: &mut PgConnection,
    tables: Tables,
    records: &[Located<'_>],
    how: Write,
) -> Result<(), sqlx::Error> {
    // Events and holds apart: an event's id is on the log once (twice only after a
    // producer's retry), while a hold's id repeats in every later state that still shows
    // it, so only the events are worth inserting without `ON CONFLICT` first.
    let mut events = Fold::default();
    let mut holds = Fold::default();
    for record in records {
        if let Some(row) = timeline_row(record) {
            events.add_first((row.tenant_id, row.event_id), row);
        }
        for row in hold_rows(record) {
            // A hold's id is derived from its job, never an event's own: kept apart anyway.
            let key = (row.tenant_id, row.event_id);
            if events.get(&key).is_none() {
                holds.add_first(key, row);
            }
        }
    }
    if how == Write::Copy {
        // A load into empty tables, with no key yet to skip on: each row once.
        write_timeline(conn, tables, events.rows(), Insert::Copy).await?;
        return write_timeline(conn, tables, holds.rows(), Insert::Copy).await;
    }
    if !events.is_empty() {
        // A plain insert spares Postgres `ON CONFLICT`'s second probe of the key and its
        // confirm record per row (20-25% of the insert's time, measured on this table);
        // a batch that repeats an event already stored inserts again, skipping it.
        let mut savepoint = sqlx::Connection::begin(&mut *conn).await?;
        match write_timeline(&mut savepoint, tables, events.rows(), Insert::Plain).await {
            Ok(()) => savepoint.commit().await?,
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                savepoint.rollback().await?;
                write_timeline(conn, tables, events.rows(), Insert::SkipExisting).await?;
            }
            Err(e) => return Err(e),
        }
    }
    if !holds.is_empty() {
        write_timeline(conn, tables, holds.rows(), Insert::SkipExisting).await?;
    }
    Ok(())
}

/// How [`write_timeline`] writes its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Insert {
    /// `COPY` into a rebuild's empty table.
    Copy,
    /// `INSERT`, failing on a row already there.
    Plain,
    /// `INSERT ... ON CONFLICT DO NOTHING`.
    SkipExisting,
}

async fn write_timeline(
    conn: &mut PgConnection,
    tables: Tables,
    rows: &[TimelineRow<'_>],
    how: Insert,
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let columns = [
        ("tenant_id", "text"),
        ("event_id", "uuid"),
        ("contact_id", "text"),
        ("occurred_at", "timestamptz"),
        ("event_type", "text"),
        ("what", "text"),
        ("reason", "text"),
        ("causation_id", "uuid"),
        ("correlation_id", "uuid"),
        ("topic", "text"),
        ("partition", "int4"),
        ("kafka_offset", "int8"),
        ("event", "json"),
    ];
    let table = tables.name("contact_timeline");
    if how == Insert::Copy {
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        copy_rows(conn, &table, &names, rows, |f, r| {
            f.text(Some(r.tenant_id))
                .uuid(Some(r.event_id))
                .text(Some(&r.contact_id))
                .timestamp(Some(r.occurred_at))
                .text(Some(&r.event_type))
                .text(r.what.as_deref())
                .text(r.reason.as_deref())
                .uuid(r.causation_id)
                .uuid(r.correlation_id)
                .text(Some(r.topic))
                .int4(Some(r.partition))
                .int8(Some(r.offset))
                .json(Some(&r.event));
        })
        .await?;
        return Ok(());
    }
    let insert = insert_unnest(&table, &columns);
    let sql = match how {
        Insert::SkipExisting => format!("{insert} ON CONFLICT (tenant_id, event_id) DO NOTHING"),
        _ => insert,
    };
    sqlx::query(&sql)
        .bind(col(rows, |r| r.tenant_id))
        .bind(col(rows, |r| r.event_id))
        .bind(col(rows, |r| r.contact_id.as_str()))
        .bind(col(rows, |r| r.occurred_at))
        .bind(col(rows, |r| r.event_type.as_str()))
        .bind(col(rows, |r| r.what.as_deref()))
        .bind(col(rows, |r| r.reason.as_deref()))
        .bind(col(rows, |r| r.causation_id))
        .bind(col(rows, |r| r.correlation_id))
        .bind(col(rows, |r| r.topic))
        .bind(col(rows, |r| r.partition))
        .bind(col(rows, |r| r.offset))
        .bind(col(rows, |r| r.event.as_str()))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// One audit row.
struct AuditRow<'a> {
    tenant_id: &'a str,
    event_id: Uuid,
    occurred_at: Timestamp,
    actor_kind: &'a str,
    actor_id: &'a str,
    action: String,
    subject_type: &'a str,
    subject_id: String,
    contact_id: Option<&'a str>,
    command_id: Option<Uuid>,
    result: &'a str,
    reason: Option<&'a str>,
    detail: Option<String>,
}

/// Audit events as they are, control changes (every change is an action) and operator
/// commands as they were requested; what became of a command is the processors' audit event.
pub(super) async fn audit(
    conn: &mut PgConnection,
    tables: Tables,
    records: &[Located<'_>],
    how: Write,
) -> Result<(), sqlx::Error> {
    let mut fold = Fold::default();
    for record in records {
        let row = match record.event {
            AnyEvent::AuditEvent(a) => audit_row(a),
            AnyEvent::ControlChange(c) => control_row(c),
            AnyEvent::ContactCommand(c) if c.actor.kind == ActorKind::Operator => command_row(c),
            _ => continue,
        };
        fold.add_first((row.tenant_id, row.event_id), row);
    }
    if fold.is_empty() {
        return Ok(());
    }
    let rows = fold.rows();
    let columns = [
        ("tenant_id", "text"),
        ("event_id", "uuid"),
        ("occurred_at", "timestamptz"),
        ("actor_kind", "text"),
        ("actor_id", "text"),
        ("action", "text"),
        ("subject_type", "text"),
        ("subject_id", "text"),
        ("contact_id", "text"),
        ("command_id", "uuid"),
        ("result", "text"),
        ("reason", "text"),
        ("detail", "text"),
    ];
    let table = tables.name("audit");
    if how == Write::Copy {
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        copy_rows(conn, &table, &names, rows, |f, r| {
            f.text(Some(r.tenant_id))
                .uuid(Some(r.event_id))
                .timestamp(Some(r.occurred_at))
                .text(Some(r.actor_kind))
                .text(Some(r.actor_id))
                .text(Some(&r.action))
                .text(Some(r.subject_type))
                .text(Some(&r.subject_id))
                .text(r.contact_id)
                .uuid(r.command_id)
                .text(Some(r.result))
                .text(r.reason)
                .text(r.detail.as_deref());
        })
        .await?;
        return Ok(());
    }
    let insert = insert_unnest(&table, &columns);
    sqlx::query(&format!(
        "{insert} ON CONFLICT (tenant_id, event_id) DO NOTHING"
    ))
    .bind(col(rows, |r| r.tenant_id))
    .bind(col(rows, |r| r.event_id))
    .bind(col(rows, |r| r.occurred_at))
    .bind(col(rows, |r| r.actor_kind))
    .bind(col(rows, |r| r.actor_id))
    .bind(col(rows, |r| r.action.as_str()))
    .bind(col(rows, |r| r.subject_type))
    .bind(col(rows, |r| r.subject_id.as_str()))
    .bind(col(rows, |r| r.contact_id))
    .bind(col(rows, |r| r.command_id))
    .bind(col(rows, |r| r.result))
    .bind(col(rows, |r| r.reason))
    .bind(col(rows, |r| r.detail.as_deref()))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

fn audit_row(a: &AuditEvent) -> AuditRow<'_> {
    AuditRow {
        tenant_id: &a.tenant_id,
        event_id: a.event_id,
        occurred_at: a.occurred_at,
        actor_kind: a.actor.kind.as_str(),
        actor_id: &a.actor.id,
        action: a.action.clone(),
        subject_type: &a.subject_type,
        subject_id: a.subject_id.clone(),
        contact_id: a.contact_id.as_deref(),
        command_id: a.command_id,
        result: a.result.as_str(),
        reason: a.reason.as_deref(),
        detail: a.detail.clone(),
    }
}

fn control_row(c: &ControlChange) -> AuditRow<'_> {
    let detail = serde_json::json!({ "new": c.new_value, "old": c.old_value });
    AuditRow {
        tenant_id: &c.tenant_id,
        event_id: c.event_id,
        occurred_at: c.occurred_at,
        actor_kind: c.actor.kind.as_str(),
        actor_id: &c.actor.id,
        action: format!("control.{}", c.setting),
        subject_type: "control",
        subject_id: c.record_key(),
        contact_id: None,
        command_id: (c.actor.kind == ActorKind::Operator).then_some(c.event_id),
        result: "applied",
        reason: c.reason.as_deref(),
        detail: Some(detail.to_string()),
    }
}

fn command_row(c: &ContactCommand) -> AuditRow<'_> {
    AuditRow {
        tenant_id: &c.tenant_id,
        event_id: c.event_id,
        occurred_at: c.occurred_at,
        actor_kind: c.actor.kind.as_str(),
        actor_id: &c.actor.id,
        action: format!("command.{}", c.kind),
        subject_type: "contact",
        subject_id: c.contact_id.clone(),
        contact_id: Some(&c.contact_id),
        command_id: Some(c.event_id),
        result: "requested",
        reason: c.reason.as_deref(),
        detail: Some(command_target(c).to_string()),
    }
}

/// What a contact command is about, beyond its contact.
pub(super) fn command_target(c: &ContactCommand) -> Value {
    serde_json::json!({
        "job_id": c.job_id,
        "launch_id": c.launch_id,
        "exception_id": c.exception_id,
        "campaign_id": c.campaign_id,
        "requested_at": c.requested_at.map(|t| t.timestamp_millis()),
    })
}

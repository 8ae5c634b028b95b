//! The views fed by one topic each: exceptions, slot bookings, and the control table.

use callstream_schemas::{
    Actor, AnyEvent, ControlChange, ExceptionEvent, ExceptionStatus, ScheduleEvent,
    ScheduleEventKind,
};
use sqlx::PgConnection;

use super::{first_non_null, take_if_newer};
use crate::view::Tables;

/// `kind:id`, how views show an actor.
pub(crate) fn actor_label(actor: &Actor) -> String {
    format!("{}:{}", actor.kind, actor.id)
}

/// An exception case: its latest status wins, closed beats open.
pub(super) async fn exceptions(
    conn: &mut PgConnection,
    tables: Tables,
    event: &AnyEvent,
) -> Result<(), sqlx::Error> {
    let AnyEvent::ExceptionEvent(e) = event else {
        return Ok(());
    };
    exception(conn, tables, e).await
}

async fn exception(
    conn: &mut PgConnection,
    tables: Tables,
    e: &ExceptionEvent,
) -> Result<(), sqlx::Error> {
    let rank: i16 = match e.status {
        ExceptionStatus::Open | ExceptionStatus::Unknown => 0,
        ExceptionStatus::Resolved | ExceptionStatus::Ignored => 1,
    };
    let open = e.status == ExceptionStatus::Open;
    let actor = actor_label(&e.actor);
    let (opened_at, opened_by) = if open {
        (Some(e.occurred_at), Some(actor.as_str()))
    } else {
        (None, None)
    };
    let (resolved_at, resolved_by) = if rank == 1 {
        (Some(e.occurred_at), Some(actor.as_str()))
    } else {
        (None, None)
    };
    let sql = format!(
        "INSERT INTO {t} AS t (tenant_id, exception_id, exception_type, status, status_rank,
             status_at, status_event_id, urgent, contact_id, campaign_id, job_id, launch_id,
             call_id, operation_id, reason, detail, assignee, opened_at, opened_by,
             resolved_at, resolved_by, first_seen_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18, $19, $20, $21, $6, $6)
         ON CONFLICT (tenant_id, exception_id) DO UPDATE SET
             {first},
             opened_by = CASE WHEN EXCLUDED.opened_at IS NOT NULL AND (t.opened_at IS NULL OR EXCLUDED.opened_at < t.opened_at) THEN EXCLUDED.opened_by ELSE t.opened_by END,
             opened_at = LEAST(t.opened_at, EXCLUDED.opened_at),
             {newer},
             first_seen_at = LEAST(t.first_seen_at, EXCLUDED.first_seen_at),
             updated_at = GREATEST(t.updated_at, EXCLUDED.updated_at)",
        t = tables.name("exceptions"),
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
        .bind(&e.tenant_id)
        .bind(e.exception_id)
        .bind(e.exception_type.as_str())
        .bind(e.status.as_str())
        .bind(rank)
        .bind(e.occurred_at)
        .bind(e.event_id)
        .bind(e.urgent)
        .bind(&e.contact_id)
        .bind(e.campaign_id.as_deref())
        .bind(e.job_id)
        .bind(e.launch_id)
        .bind(e.call_id.as_deref())
        .bind(e.operation_id)
        .bind(&e.reason)
        .bind(e.detail.as_deref())
        .bind(e.assignee.as_deref())
        .bind(opened_at)
        .bind(opened_by)
        .bind(resolved_at)
        .bind(resolved_by)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Slot bookings. `schedule-events` is keyed by tenant, so a tenant's allocations and
/// cancels arrive in the order the scheduler decided them.
pub(super) async fn slots(
    conn: &mut PgConnection,
    tables: Tables,
    event: &AnyEvent,
) -> Result<(), sqlx::Error> {
    let AnyEvent::ScheduleEvent(e) = event else {
        return Ok(());
    };
    match (e.kind, e.slot) {
        (ScheduleEventKind::Allocated, Some(slot)) => book(conn, tables, e, slot, true).await,
        (ScheduleEventKind::Cancelled, Some(slot)) => book(conn, tables, e, slot, false).await,
        (ScheduleEventKind::Cancelled, None) => {
            let sql = format!(
                "UPDATE {t} SET cancelled = true WHERE tenant_id = $1 AND job_id = $2",
                t = tables.name("slots")
            );
            sqlx::query(&sql)
                .bind(&e.tenant_id)
                .bind(e.job_id)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }
        _ => Ok(()),
    }
}

async fn book(
    conn: &mut PgConnection,
    tables: Tables,
    e: &ScheduleEvent,
    slot: i64,
    allocated: bool,
) -> Result<(), sqlx::Error> {
    let sql = format!(
        "INSERT INTO {t} AS t (tenant_id, slot, job_id, slot_at, contact_id, campaign_id,
             allocated, cancelled)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (tenant_id, slot, job_id) DO UPDATE SET
             slot_at = COALESCE(t.slot_at, EXCLUDED.slot_at),
             allocated = t.allocated OR EXCLUDED.allocated,
             cancelled = t.cancelled OR EXCLUDED.cancelled",
        t = tables.name("slots")
    );
    sqlx::query(&sql)
        .bind(&e.tenant_id)
        .bind(slot)
        .bind(e.job_id)
        .bind(e.slot_at)
        .bind(&e.contact_id)
        .bind(&e.campaign_id)
        .bind(allocated)
        .bind(!allocated)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The control table: the latest change per tenant, setting and campaign.
pub(super) async fn control(
    conn: &mut PgConnection,
    tables: Tables,
    event: &AnyEvent,
) -> Result<(), sqlx::Error> {
    let AnyEvent::ControlChange(c) = event else {
        return Ok(());
    };
    control_change(conn, tables, c).await
}

async fn control_change(
    conn: &mut PgConnection,
    tables: Tables,
    c: &ControlChange,
) -> Result<(), sqlx::Error> {
    let value = serde_json::to_value(&c.new_value).unwrap_or(serde_json::Value::Null);
    let later = "(EXCLUDED.changed_at, EXCLUDED.event_id) > (t.changed_at, t.event_id)";
    let columns = [
        "enabled",
        "value",
        "actor_kind",
        "actor_id",
        "reason",
        "changed_at",
        "event_id",
    ];
    let set = columns
        .iter()
        .map(|col| format!("{col} = CASE WHEN {later} THEN EXCLUDED.{col} ELSE t.{col} END"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "INSERT INTO {t} AS t (tenant_id, setting, campaign_id, enabled, value, event_id,
             changed_at, actor_kind, actor_id, reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (tenant_id, setting, campaign_id) DO UPDATE SET {set}",
        t = tables.name("control_settings"),
    );
    sqlx::query(&sql)
        .bind(&c.tenant_id)
        .bind(c.setting.as_str())
        .bind(c.campaign_id.as_deref().unwrap_or(""))
        .bind(c.new_value.enabled)
        .bind(value)
        .bind(c.event_id)
        .bind(c.occurred_at)
        .bind(c.actor.kind.as_str())
        .bind(&c.actor.id)
        .bind(c.reason.as_deref())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

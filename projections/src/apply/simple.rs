//! The views fed by one topic each and merged simply: slot bookings and the control table.
//! (Exceptions have a file of their own.)

use std::collections::{HashMap, HashSet};

use callstream_schemas::{Actor, AnyEvent, ControlChange, ScheduleEventKind, Timestamp};
use sqlx::PgConnection;
use uuid::Uuid;

use super::copy::copy_rows;
use super::fold::{col, first, insert_unnest, Fold, Merge};
use super::{Located, Write};
use crate::view::Tables;

/// `kind:id`, how views show an actor.
pub(crate) fn actor_label(actor: &Actor) -> String {
    format!("{}:{}", actor.kind, actor.id)
}

/// One change of a booking.
#[derive(Debug)]
struct SlotRow<'a> {
    tenant_id: &'a str,
    slot: i64,
    job_id: Uuid,
    slot_at: Option<Timestamp>,
    /// Written when the row is created, never changed.
    contact_id: &'a str,
    campaign_id: &'a str,
    allocated: bool,
    cancelled: bool,
}

impl Merge for SlotRow<'_> {
    fn merge(&mut self, later: Self) {
        first(&mut self.slot_at, later.slot_at);
        self.allocated |= later.allocated;
        self.cancelled |= later.cancelled;
    }
}

/// Slot bookings. `schedule-events` is keyed by tenant, so a tenant's allocations and
/// cancels arrive in the order the scheduler decided them.
///
/// A cancel that names no slot cancels every booking of its job that exists when it is
/// applied: in a batch, the bookings stored before it (one `UPDATE`, run before the
/// batch's bookings are written) and the bookings the batch made before it (in memory),
/// never one the batch makes after it, exactly as one-at-a-time application.
///
/// Written with `COPY` ([`Write::Copy`]) there are no stored bookings to cancel.
pub(super) async fn slots(
    conn: &mut PgConnection,
    tables: Tables,
    records: &[Located<'_>],
    how: Write,
) -> Result<(), sqlx::Error> {
    let mut fold: Fold<(&str, i64, Uuid), SlotRow<'_>> = Fold::default();
    let mut slots_of_job: HashMap<(&str, Uuid), Vec<i64>> = HashMap::new();
    let mut stored_cancels: HashSet<(&str, Uuid)> = HashSet::new();
    for record in records {
        let AnyEvent::ScheduleEvent(e) = record.event else {
            continue;
        };
        let tenant = e.tenant_id.as_str();
        let allocated = match (e.kind, e.slot) {
            (ScheduleEventKind::Allocated, Some(_)) => true,
            (ScheduleEventKind::Cancelled, Some(_)) => false,
            (ScheduleEventKind::Cancelled, None) => {
                stored_cancels.insert((tenant, e.job_id));
                for slot in slots_of_job.get(&(tenant, e.job_id)).into_iter().flatten() {
                    if let Some(row) = fold.get_mut(&(tenant, *slot, e.job_id)) {
                        row.cancelled = true;
                    }
                }
                continue;
            }
            _ => continue,
        };
        let Some(slot) = e.slot else { continue };
        let key = (tenant, slot, e.job_id);
        if fold.get(&key).is_none() {
            slots_of_job
                .entry((tenant, e.job_id))
                .or_default()
                .push(slot);
        }
        let row = SlotRow {
            tenant_id: tenant,
            slot,
            job_id: e.job_id,
            slot_at: e.slot_at,
            contact_id: &e.contact_id,
            campaign_id: &e.campaign_id,
            allocated,
            cancelled: !allocated,
        };
        fold.add(key, row);
    }
    let table = tables.name("slots");
    if how == Write::Copy {
        let rows = fold.rows();
        if rows.is_empty() {
            return Ok(());
        }
        let columns = [
            "tenant_id",
            "slot",
            "job_id",
            "slot_at",
            "contact_id",
            "campaign_id",
            "allocated",
            "cancelled",
        ];
        copy_rows(conn, &table, &columns, rows, |f, r| {
            f.text(Some(r.tenant_id))
                .int8(Some(r.slot))
                .uuid(Some(r.job_id))
                .timestamp(r.slot_at)
                .text(Some(r.contact_id))
                .text(Some(r.campaign_id))
                .bool(Some(r.allocated))
                .bool(Some(r.cancelled));
        })
        .await?;
        return Ok(());
    }
    if !stored_cancels.is_empty() {
        let (tenants, jobs): (Vec<&str>, Vec<Uuid>) = stored_cancels.into_iter().unzip();
        let sql = format!(
            "UPDATE {table} AS s SET cancelled = true
             FROM UNNEST($1::text[], $2::uuid[]) AS c(tenant_id, job_id)
             WHERE s.tenant_id = c.tenant_id AND s.job_id = c.job_id AND NOT s.cancelled"
        );
        sqlx::query(&sql)
            .bind(tenants)
            .bind(jobs)
            .execute(&mut *conn)
            .await?;
    }
    if fold.is_empty() {
        return Ok(());
    }
    let rows = fold.rows();
    let insert = insert_unnest(
        &table,
        &[
            ("tenant_id", "text"),
            ("slot", "int8"),
            ("job_id", "uuid"),
            ("slot_at", "timestamptz"),
            ("contact_id", "text"),
            ("campaign_id", "text"),
            ("allocated", "bool"),
            ("cancelled", "bool"),
        ],
    );
    let sql = format!(
        "{insert}
         ON CONFLICT (tenant_id, slot, job_id) DO UPDATE SET
             slot_at = COALESCE(t.slot_at, EXCLUDED.slot_at),
             allocated = t.allocated OR EXCLUDED.allocated,
             cancelled = t.cancelled OR EXCLUDED.cancelled"
    );
    sqlx::query(&sql)
        .bind(col(rows, |r| r.tenant_id))
        .bind(col(rows, |r| r.slot))
        .bind(col(rows, |r| r.job_id))
        .bind(col(rows, |r| r.slot_at))
        .bind(col(rows, |r| r.contact_id))
        .bind(col(rows, |r| r.campaign_id))
        .bind(col(rows, |r| r.allocated))
        .bind(col(rows, |r| r.cancelled))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The control table: the latest change per tenant, setting and campaign, whole.
pub(super) async fn control(
    conn: &mut PgConnection,
    tables: Tables,
    records: &[Located<'_>],
) -> Result<(), sqlx::Error> {
    struct Latest<'a>(&'a ControlChange);
    impl Merge for Latest<'_> {
        fn merge(&mut self, later: Self) {
            if (later.0.occurred_at, later.0.event_id) > (self.0.occurred_at, self.0.event_id) {
                *self = later;
            }
        }
    }
    let mut fold = Fold::default();
    for record in records {
        if let AnyEvent::ControlChange(c) = record.event {
            let key = (
                c.tenant_id.as_str(),
                c.setting,
                c.campaign_id.as_deref().unwrap_or(""),
            );
            fold.add(key, Latest(c));
        }
    }
    if fold.is_empty() {
        return Ok(());
    }
    let rows = fold.rows();
    let later = "(EXCLUDED.changed_at, EXCLUDED.event_id) > (t.changed_at, t.event_id)";
    let set = [
        "enabled",
        "value",
        "actor_kind",
        "actor_id",
        "reason",
        "changed_at",
        "event_id",
    ]
    .iter()
    .map(|col| format!("{col} = CASE WHEN {later} THEN EXCLUDED.{col} ELSE t.{col} END"))
    .collect::<Vec<_>>()
    .join(", ");
    let insert = insert_unnest(
        &tables.name("control_settings"),
        &[
            ("tenant_id", "text"),
            ("setting", "text"),
            ("campaign_id", "text"),
            ("enabled", "bool"),
            ("value", "jsonb"),
            ("event_id", "uuid"),
            ("changed_at", "timestamptz"),
            ("actor_kind", "text"),
            ("actor_id", "text"),
            ("reason", "text"),
        ],
    );
    let sql = format!("{insert} ON CONFLICT (tenant_id, setting, campaign_id) DO UPDATE SET {set}");
    sqlx::query(&sql)
        .bind(col(rows, |r| r.0.tenant_id.as_str()))
        .bind(col(rows, |r| r.0.setting.as_str()))
        .bind(col(rows, |r| r.0.campaign_id.as_deref().unwrap_or("")))
        .bind(col(rows, |r| r.0.new_value.enabled))
        .bind(col(rows, |r| {
            serde_json::to_value(&r.0.new_value).unwrap_or(serde_json::Value::Null)
        }))
        .bind(col(rows, |r| r.0.event_id))
        .bind(col(rows, |r| r.0.occurred_at))
        .bind(col(rows, |r| r.0.actor.kind.as_str()))
        .bind(col(rows, |r| r.0.actor.id.as_str()))
        .bind(col(rows, |r| r.0.reason.as_deref()))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

//! The commands view: operator commands, `pending` when the command is on the log, then
//! `applied` or `rejected` from the audit event that names it. A control change takes
//! effect by being on the log, so an operator's is `applied` at once. One upsert per batch.

use callstream_schemas::{ActorKind, AnyEvent, Timestamp};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use super::fold::{col, first, insert_unnest, take_if_newer, Fold, Merge};
use super::ops::command_target;
use super::Located;
use crate::view::Tables;

/// One change of a command row.
#[derive(Debug)]
struct CommandRow<'a> {
    tenant_id: &'a str,
    command_id: Uuid,
    kind: Option<String>,
    contact_id: Option<&'a str>,
    actor_id: Option<&'a str>,
    requested_at: Option<Timestamp>,
    target: Option<Value>,
    status: &'a str,
    status_rank: i16,
    status_at: Timestamp,
    status_event_id: Uuid,
    reason: Option<&'a str>,
}

impl Merge for CommandRow<'_> {
    fn merge(&mut self, later: Self) {
        first(&mut self.kind, later.kind);
        first(&mut self.contact_id, later.contact_id);
        first(&mut self.actor_id, later.actor_id);
        first(&mut self.requested_at, later.requested_at);
        first(&mut self.target, later.target);
        if (later.status_rank, later.status_at, later.status_event_id)
            > (self.status_rank, self.status_at, self.status_event_id)
        {
            self.status = later.status;
            self.reason = later.reason;
            self.status_rank = later.status_rank;
            self.status_at = later.status_at;
            self.status_event_id = later.status_event_id;
        }
    }
}

/// The change one event makes, if any.
fn change(event: &AnyEvent) -> Option<CommandRow<'_>> {
    let row = match event {
        AnyEvent::ContactCommand(c) if c.actor.kind == ActorKind::Operator => CommandRow {
            tenant_id: &c.tenant_id,
            command_id: c.event_id,
            kind: Some(c.kind.as_str().to_string()),
            contact_id: Some(&c.contact_id),
            actor_id: Some(&c.actor.id),
            requested_at: Some(c.occurred_at),
            target: Some(command_target(c)),
            status: "pending",
            status_rank: 0,
            status_at: c.occurred_at,
            status_event_id: c.event_id,
            reason: None,
        },
        AnyEvent::ControlChange(c) if c.actor.kind == ActorKind::Operator => CommandRow {
            tenant_id: &c.tenant_id,
            command_id: c.event_id,
            kind: Some(format!("control.{}", c.setting)),
            contact_id: None,
            actor_id: Some(&c.actor.id),
            requested_at: Some(c.occurred_at),
            target: Some(serde_json::json!({
                "campaign_id": c.campaign_id,
                "value": c.new_value,
            })),
            status: "applied",
            status_rank: 1,
            status_at: c.occurred_at,
            status_event_id: c.event_id,
            reason: None,
        },
        AnyEvent::AuditEvent(a) => CommandRow {
            tenant_id: &a.tenant_id,
            command_id: a.command_id?,
            kind: None,
            contact_id: a.contact_id.as_deref(),
            actor_id: None,
            requested_at: None,
            target: None,
            status: a.result.as_str(),
            status_rank: 1,
            status_at: a.occurred_at,
            status_event_id: a.event_id,
            reason: a.reason.as_deref(),
        },
        _ => return None,
    };
    Some(row)
}

pub(super) async fn apply(
    conn: &mut PgConnection,
    tables: Tables,
    records: &[Located<'_>],
) -> Result<(), sqlx::Error> {
    let mut fold = Fold::default();
    for record in records {
        if let Some(row) = change(record.event) {
            fold.add((row.tenant_id, row.command_id), row);
        }
    }
    if fold.is_empty() {
        return Ok(());
    }
    let rows = fold.rows();
    let insert = insert_unnest(
        &tables.name("commands"),
        &[
            ("tenant_id", "text"),
            ("command_id", "uuid"),
            ("kind", "text"),
            ("contact_id", "text"),
            ("actor_id", "text"),
            ("requested_at", "timestamptz"),
            ("target", "jsonb"),
            ("status", "text"),
            ("status_rank", "int2"),
            ("status_at", "timestamptz"),
            ("status_event_id", "uuid"),
            ("reason", "text"),
        ],
    );
    let sql = format!(
        "{insert}
         ON CONFLICT (tenant_id, command_id) DO UPDATE SET
             kind = COALESCE(t.kind, EXCLUDED.kind),
             contact_id = COALESCE(t.contact_id, EXCLUDED.contact_id),
             actor_id = COALESCE(t.actor_id, EXCLUDED.actor_id),
             requested_at = COALESCE(t.requested_at, EXCLUDED.requested_at),
             target = COALESCE(t.target, EXCLUDED.target),
             {newer}",
        newer = take_if_newer(
            "status",
            &[
                "status",
                "reason",
                "status_rank",
                "status_at",
                "status_event_id"
            ]
        ),
    );
    sqlx::query(&sql)
        .bind(col(rows, |r| r.tenant_id))
        .bind(col(rows, |r| r.command_id))
        .bind(col(rows, |r| r.kind.as_deref()))
        .bind(col(rows, |r| r.contact_id))
        .bind(col(rows, |r| r.actor_id))
        .bind(col(rows, |r| r.requested_at))
        .bind(col(rows, |r| r.target.as_ref()))
        .bind(col(rows, |r| r.status))
        .bind(col(rows, |r| r.status_rank))
        .bind(col(rows, |r| r.status_at))
        .bind(col(rows, |r| r.status_event_id))
        .bind(col(rows, |r| r.reason))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

//! The views about actions: audit (every operator and system action), commands (operator
//! commands and what became of them) and the contact timeline (every event of a contact).

use callstream_schemas::{
    ActorKind, AnyEvent, AuditEvent, ContactCommand, ControlChange, Envelope, Timestamp,
};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use super::{take_if_newer, Located};
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

/// Every event that names a contact becomes a timeline entry, with what happened (its
/// kind, status, outcome or action) and why (its reason).
pub(super) async fn timeline(
    conn: &mut PgConnection,
    tables: Tables,
    record: Located<'_>,
) -> Result<(), sqlx::Error> {
    let json = event_json(record.event);
    let Some(contact_id) = text_field(&json, &["contact_id"]) else {
        return Ok(());
    };
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
    };
    let reason = text_field(&json, &["reason"]);
    let Envelope {
        event_id,
        tenant_id,
        occurred_at,
        causation_id,
        correlation_id,
    } = record.event.envelope();
    let sql = format!(
        "INSERT INTO {t} (tenant_id, event_id, contact_id, occurred_at, event_type, what,
             reason, causation_id, correlation_id, topic, partition, kafka_offset, event)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT (tenant_id, event_id) DO NOTHING",
        t = tables.name("contact_timeline"),
    );
    sqlx::query(&sql)
        .bind(tenant_id)
        .bind(event_id)
        .bind(contact_id)
        .bind(occurred_at)
        .bind(format!("{:?}", record.event.kind()))
        .bind(what)
        .bind(reason)
        .bind(causation_id)
        .bind(correlation_id)
        .bind(record.topic)
        .bind(record.partition)
        .bind(record.offset)
        .bind(&json)
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
    event: &AnyEvent,
) -> Result<(), sqlx::Error> {
    let row = match event {
        AnyEvent::AuditEvent(a) => audit_row(a),
        AnyEvent::ControlChange(c) => control_row(c),
        AnyEvent::ContactCommand(c) if c.actor.kind == ActorKind::Operator => command_row(c),
        _ => return Ok(()),
    };
    let sql = format!(
        "INSERT INTO {t} (tenant_id, event_id, occurred_at, actor_kind, actor_id, action,
             subject_type, subject_id, contact_id, command_id, result, reason, detail)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT (tenant_id, event_id) DO NOTHING",
        t = tables.name("audit"),
    );
    sqlx::query(&sql)
        .bind(row.tenant_id)
        .bind(row.event_id)
        .bind(row.occurred_at)
        .bind(row.actor_kind)
        .bind(row.actor_id)
        .bind(row.action)
        .bind(row.subject_type)
        .bind(row.subject_id)
        .bind(row.contact_id)
        .bind(row.command_id)
        .bind(row.result)
        .bind(row.reason)
        .bind(row.detail)
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
fn command_target(c: &ContactCommand) -> Value {
    serde_json::json!({
        "job_id": c.job_id,
        "launch_id": c.launch_id,
        "exception_id": c.exception_id,
        "campaign_id": c.campaign_id,
        "requested_at": c.requested_at.map(|t| t.timestamp_millis()),
    })
}

/// One change of a command row.
struct CommandChange<'a> {
    tenant_id: &'a str,
    command_id: Uuid,
    kind: Option<String>,
    contact_id: Option<&'a str>,
    actor_id: Option<&'a str>,
    requested_at: Option<Timestamp>,
    target: Option<Value>,
    status: &'a str,
    rank: i16,
    at: Timestamp,
    event_id: Uuid,
    reason: Option<&'a str>,
}

/// Operator commands: `pending` when the command is on the log, then `applied` or
/// `rejected` from the audit event that names it. A control change takes effect by being
/// on the log, so an operator's is `applied` at once.
pub(super) async fn commands(
    conn: &mut PgConnection,
    tables: Tables,
    event: &AnyEvent,
) -> Result<(), sqlx::Error> {
    let change = match event {
        AnyEvent::ContactCommand(c) if c.actor.kind == ActorKind::Operator => CommandChange {
            tenant_id: &c.tenant_id,
            command_id: c.event_id,
            kind: Some(c.kind.as_str().to_string()),
            contact_id: Some(&c.contact_id),
            actor_id: Some(&c.actor.id),
            requested_at: Some(c.occurred_at),
            target: Some(command_target(c)),
            status: "pending",
            rank: 0,
            at: c.occurred_at,
            event_id: c.event_id,
            reason: None,
        },
        AnyEvent::ControlChange(c) if c.actor.kind == ActorKind::Operator => CommandChange {
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
            rank: 1,
            at: c.occurred_at,
            event_id: c.event_id,
            reason: None,
        },
        AnyEvent::AuditEvent(a) => match a.command_id {
            Some(command_id) => CommandChange {
                tenant_id: &a.tenant_id,
                command_id,
                kind: None,
                contact_id: a.contact_id.as_deref(),
                actor_id: None,
                requested_at: None,
                target: None,
                status: a.result.as_str(),
                rank: 1,
                at: a.occurred_at,
                event_id: a.event_id,
                reason: a.reason.as_deref(),
            },
            None => return Ok(()),
        },
        _ => return Ok(()),
    };
    let sql = format!(
        "INSERT INTO {t} AS t (tenant_id, command_id, kind, contact_id, actor_id, requested_at,
             target, status, status_rank, status_at, status_event_id, reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (tenant_id, command_id) DO UPDATE SET
             kind = COALESCE(t.kind, EXCLUDED.kind),
             contact_id = COALESCE(t.contact_id, EXCLUDED.contact_id),
             actor_id = COALESCE(t.actor_id, EXCLUDED.actor_id),
             requested_at = COALESCE(t.requested_at, EXCLUDED.requested_at),
             target = COALESCE(t.target, EXCLUDED.target),
             {newer}",
        t = tables.name("commands"),
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
        .bind(change.tenant_id)
        .bind(change.command_id)
        .bind(change.kind)
        .bind(change.contact_id)
        .bind(change.actor_id)
        .bind(change.requested_at)
        .bind(change.target)
        .bind(change.status)
        .bind(change.rank)
        .bind(change.at)
        .bind(change.event_id)
        .bind(change.reason)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

//! The dead-letters view: one row per record on `dead-letters`, with what failed (the
//! processor, the kind, the source, the reason), the record's own event when its value is
//! one (tenant, type, id, contact), and the key, value and headers a replay sends again;
//! and `replayed_at` from the operator's audit event `dead_letter.replay`.
//!
//! A letter's id is derived from its coordinates on the topic, so a rebuild gives the
//! same ids. A letter is written once (`ON CONFLICT DO NOTHING`); replays go to
//! `dead_letter_replays`, the latest per letter winning, so the two topics may be read in
//! any order.

use callstream_platform::topics::dead_letter::{
    DLQ_APP, DLQ_KIND, DLQ_PREFIX, DLQ_REASON, DLQ_SOURCE,
};
use callstream_schemas::{AnyEvent, AUDIT_DEAD_LETTER_REPLAY};
use serde_json::{Map, Value};
use sqlx::PgConnection;
use uuid::Uuid;

use super::fold::{col, insert_unnest, Fold, Merge};
use super::Located;
use crate::store::Decoded;
use crate::view::Tables;

/// Text as Postgres takes it: valid UTF-8 (lossy) without NUL.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace('\0', "")
}

struct LetterRow {
    tenant_id: String,
    letter_id: Uuid,
    topic: String,
    partition: i32,
    offset: i64,
    dead_at: chrono::DateTime<chrono::Utc>,
    app: Option<String>,
    kind: Option<String>,
    source: Option<String>,
    reason: Option<String>,
    event_type: Option<String>,
    event_id: Option<Uuid>,
    contact_id: Option<String>,
    key: Option<Vec<u8>>,
    payload: Option<Vec<u8>>,
    headers: Value,
}

fn letter_row(d: &Decoded) -> Option<LetterRow> {
    let parts = d.raw.letter.as_ref()?;
    let header = |name: &str| {
        parts
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| text(v))
    };
    let kept: Map<String, Value> = parts
        .headers
        .iter()
        .filter(|(n, _)| !n.starts_with(DLQ_PREFIX))
        .map(|(n, v)| (text(n.as_bytes()), Value::String(text(v))))
        .collect();
    let (tenant_id, event_type, event_id, contact_id) = match &d.event {
        Some(event) => {
            let envelope = event.envelope();
            let contact = super::ops::event_json(event)
                .get("contact_id")
                .and_then(Value::as_str)
                .map(str::to_owned);
            (
                envelope.tenant_id.to_owned(),
                Some(format!("{:?}", event.kind())),
                Some(envelope.event_id),
                contact,
            )
        }
        None => (String::new(), None, None, None),
    };
    Some(LetterRow {
        tenant_id,
        letter_id: callstream_domain::ids::view::dead_letter(
            &d.raw.topic,
            d.raw.partition,
            d.raw.offset,
        ),
        topic: d.raw.topic.to_string(),
        partition: d.raw.partition,
        offset: d.raw.offset,
        dead_at: parts
            .timestamp_ms
            .and_then(chrono::DateTime::from_timestamp_millis)
            .unwrap_or_default(),
        app: header(DLQ_APP),
        kind: header(DLQ_KIND),
        source: header(DLQ_SOURCE),
        reason: header(DLQ_REASON),
        event_type,
        event_id,
        contact_id,
        key: parts.key.clone(),
        payload: d.raw.payload.clone(),
        headers: Value::Object(kept),
    })
}

/// One replay: the latest per letter wins.
struct Replay<'a> {
    tenant_id: &'a str,
    letter_id: Uuid,
    at: chrono::DateTime<chrono::Utc>,
    by: &'a str,
    event_id: Uuid,
}

impl Merge for Replay<'_> {
    fn merge(&mut self, later: Self) {
        if (later.at, later.event_id) > (self.at, self.event_id) {
            *self = later;
        }
    }
}

pub(crate) async fn apply(
    conn: &mut PgConnection,
    tables: Tables,
    letters: &[&Decoded],
    events: &[Located<'_>],
) -> Result<(), sqlx::Error> {
    let table = tables.name("dead_letters");
    let rows: Vec<LetterRow> = letters.iter().filter_map(|d| letter_row(d)).collect();
    if !rows.is_empty() {
        let insert = insert_unnest(
            &table,
            &[
                ("tenant_id", "text"),
                ("letter_id", "uuid"),
                ("topic", "text"),
                ("partition", "int4"),
                ("kafka_offset", "int8"),
                ("dead_at", "timestamptz"),
                ("app", "text"),
                ("kind", "text"),
                ("source", "text"),
                ("reason", "text"),
                ("event_type", "text"),
                ("event_id", "uuid"),
                ("contact_id", "text"),
                ("record_key", "bytea"),
                ("payload", "bytea"),
                ("headers", "jsonb"),
            ],
        );
        sqlx::query(&format!(
            "{insert} ON CONFLICT (tenant_id, letter_id) DO NOTHING"
        ))
        .bind(col(&rows, |r| r.tenant_id.as_str()))
        .bind(col(&rows, |r| r.letter_id))
        .bind(col(&rows, |r| r.topic.as_str()))
        .bind(col(&rows, |r| r.partition))
        .bind(col(&rows, |r| r.offset))
        .bind(col(&rows, |r| r.dead_at))
        .bind(col(&rows, |r| r.app.as_deref()))
        .bind(col(&rows, |r| r.kind.as_deref()))
        .bind(col(&rows, |r| r.source.as_deref()))
        .bind(col(&rows, |r| r.reason.as_deref()))
        .bind(col(&rows, |r| r.event_type.as_deref()))
        .bind(col(&rows, |r| r.event_id))
        .bind(col(&rows, |r| r.contact_id.as_deref()))
        .bind(col(&rows, |r| r.key.as_deref()))
        .bind(col(&rows, |r| r.payload.as_deref()))
        .bind(col(&rows, |r| r.headers.clone()))
        .execute(&mut *conn)
        .await?;
    }
    let mut replays = Fold::default();
    for record in events {
        let AnyEvent::AuditEvent(a) = record.event else {
            continue;
        };
        if a.action != AUDIT_DEAD_LETTER_REPLAY || a.subject_type != "dead_letter" {
            continue;
        }
        let Ok(letter_id) = a.subject_id.parse::<Uuid>() else {
            continue;
        };
        let replay = Replay {
            tenant_id: &a.tenant_id,
            letter_id,
            at: a.occurred_at,
            by: &a.actor.id,
            event_id: a.event_id,
        };
        replays.add((a.tenant_id.as_str(), letter_id), replay);
    }
    if replays.is_empty() {
        return Ok(());
    }
    let rows = replays.rows();
    let insert = insert_unnest(
        &tables.name("dead_letter_replays"),
        &[
            ("tenant_id", "text"),
            ("letter_id", "uuid"),
            ("replayed_at", "timestamptz"),
            ("replayed_by", "text"),
            ("event_id", "uuid"),
        ],
    );
    let later = "(EXCLUDED.replayed_at, EXCLUDED.event_id) > (t.replayed_at, t.event_id)";
    let set = ["replayed_at", "replayed_by", "event_id"]
        .iter()
        .map(|c| format!("{c} = CASE WHEN {later} THEN EXCLUDED.{c} ELSE t.{c} END"))
        .collect::<Vec<_>>()
        .join(", ");
    sqlx::query(&format!(
        "{insert} ON CONFLICT (tenant_id, letter_id) DO UPDATE SET {set}"
    ))
    .bind(col(rows, |r| r.tenant_id))
    .bind(col(rows, |r| r.letter_id))
    .bind(col(rows, |r| r.at))
    .bind(col(rows, |r| r.by))
    .bind(col(rows, |r| r.event_id))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

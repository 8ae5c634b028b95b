//! The dead-letters view: every record on `dead-letters`, with what failed, where and why,
//! the tenant and contact of its event when its value is one (bytes no schema reads have
//! no tenant, so no token sees them), the bytes a replay sends again, and the replay.

mod support;

use anyhow::Result;
use callstream_schemas::{Actor, AnyEvent, AuditEvent, AUDIT_DEAD_LETTER_REPLAY};
use chrono::Utc;
use support::events::audit;
use support::*;
use uuid::Uuid;

/// tenant, event type, contact, reason, `app/kind/source`, headers.
type LetterRow = (
    String,
    Option<String>,
    Option<String>,
    String,
    String,
    serde_json::Value,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_kept_with_why_and_what_to_replay() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let live = Live::start(&db, &topics);
    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    produce_letters(&producer, &topics, "tenant-dl", 4, &mut produced).await?;
    caught_up(&db, &topics, &produced).await?;

    let rows: Vec<LetterRow> = sqlx::query_as(
        "SELECT tenant_id, event_type, contact_id, reason, app || '/' || kind || '/' || source,
                    headers
             FROM dead_letters ORDER BY kafka_offset",
    )
    .fetch_all(&db.pool)
    .await?;
    assert_eq!(rows.len(), 4);
    let of_tenant: Vec<_> = rows.iter().filter(|r| r.0 == "tenant-dl").collect();
    assert_eq!(of_tenant.len(), 2, "the two whose value is an event");
    for r in &of_tenant {
        assert_eq!(r.1.as_deref(), Some("ContactCommand"));
        assert!(r.2.as_deref().is_some_and(|c| c.starts_with("dl")), "{r:?}");
    }
    assert_eq!(
        rows.iter().filter(|r| r.0.is_empty()).count(),
        2,
        "bytes: no tenant"
    );
    for r in &rows {
        assert_eq!(r.3, "the processor refused it");
        assert!(r.4.starts_with("contact/record/"), "{r:?}");
        assert!(
            r.5.get("traceparent").is_some(),
            "the record's own headers kept"
        );
        assert!(r.5.get("dlq-reason").is_none(), "the runtime's are columns");
    }
    // The bytes a replay sends are the letter's value.
    let (letter_id, payload): (Uuid, Vec<u8>) = sqlx::query_as(
        "SELECT letter_id, payload FROM dead_letters WHERE tenant_id = 'tenant-dl' LIMIT 1",
    )
    .fetch_one(&db.pool)
    .await?;
    assert!(callstream_schemas::decode_any(&payload).is_ok());

    // A replay, read after the letter (and, in a rebuild, maybe before it).
    let replay: AnyEvent = AuditEvent {
        action: AUDIT_DEAD_LETTER_REPLAY.into(),
        subject_type: "dead_letter".into(),
        subject_id: letter_id.to_string(),
        actor: Actor::operator("lead@example.com"),
        ..audit("tenant-dl", None, None, Utc::now())
    }
    .into();
    produce_all(&producer, &topics, &[replay], &mut produced).await?;
    caught_up(&db, &topics, &produced).await?;
    let by: String = sqlx::query_scalar(
        "SELECT replayed_by FROM dead_letter_replays WHERE tenant_id = 'tenant-dl' AND letter_id = $1",
    )
    .bind(letter_id)
    .fetch_one(&db.pool)
    .await?;
    assert_eq!(by, "lead@example.com");
    live.stop().await?;
    Ok(())
}

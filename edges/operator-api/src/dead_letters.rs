//! Replaying a dead letter: the record a processor could not handle is sent again to the
//! topic it came from (same key, value and headers, plus `replayed-from`), together with
//! the audit event that says who replayed it and why, and the resolution of the letter's
//! `dead_letter` exception (which the notifier opened), in one Kafka transaction. Only a
//! record's letter can be replayed (a timer's or an effect's is for reading), only to a
//! topic of this deployment, and only by an operator of the letter's tenant.

use axum::extract::State;
use callstream_schemas::{
    ExceptionEvent, ExceptionStatus, ExceptionType, AUDIT_DEAD_LETTER_REPLAY,
};
use rdkafka::message::{Header, OwnedHeaders};
use uuid::Uuid;

use crate::actions::{accepted, applied_audit, reason_of, Answer, ReasonBody};
use crate::app::AppState;
use crate::auth::{Principal, Role};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Body, Path, Query, WaitParam};
use crate::model::Accepted;
use crate::publish::Prepared;

/// The header a replayed record carries: the letter it was sent again from.
pub const REPLAYED_FROM: &str = "replayed-from";

type LetterParts = (
    Option<String>,
    Option<String>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    serde_json::Value,
    Option<String>,
);

/// Send a dead letter's record again to the topic it came from (which resolves the
/// letter's `dead_letter` exception).
#[utoipa::path(post, path = "/v1/dead-letters/{letter_id}/replay", tag = "actions",
    params(("letter_id" = Uuid, Path), WaitParam, crate::app::TenantHeader), request_body(content = ReasonBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn replay(
    State(state): State<AppState>,
    principal: Principal,
    Path(letter_id): Path<Uuid>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<ReasonBody>,
) -> Answer {
    principal.require(Role::Operator)?;
    let wait = wait.duration(state.config().max_wait)?;
    let reason = reason_of(body.reason)?;
    let row: Option<LetterParts> = sqlx::query_as(
        "SELECT kind, source, record_key, payload, headers, contact_id FROM dead_letters
         WHERE tenant_id = $1 AND letter_id = $2",
    )
    .bind(&principal.tenant_id)
    .bind(letter_id)
    .fetch_optional(state.pool())
    .await?;
    let (kind, source, key, payload, headers, contact_id) = row.ok_or(ApiError::NotFound {
        what: "dead letter",
    })?;
    if kind.as_deref() != Some("record") {
        return Err(ApiError::Conflict(format!(
            "only a record can be sent again; this letter is of a {}",
            kind.as_deref().unwrap_or("unknown failure")
        )));
    }
    let payload = payload.ok_or_else(|| ApiError::Conflict("the letter has no value".into()))?;
    let topic = source_topic(&state, source.as_deref()).ok_or_else(|| {
        ApiError::Conflict(format!(
            "the letter's source {:?} is not a topic of this deployment",
            source.unwrap_or_default()
        ))
    })?;
    // Taken before sending: refused for the cap, nothing was sent.
    let _slot = state.limits().wait_slot(wait)?;
    let mut record_headers = OwnedHeaders::new();
    if let Some(kept) = headers.as_object() {
        for (name, value) in kept {
            record_headers = record_headers.insert(Header {
                key: name,
                value: value.as_str().map(str::as_bytes),
            });
        }
    }
    let letter = letter_id.to_string();
    record_headers = record_headers.insert(Header {
        key: REPLAYED_FROM,
        value: Some(letter.as_bytes()),
    });
    let audit = applied_audit(
        &principal,
        AUDIT_DEAD_LETTER_REPLAY,
        ("dead_letter", letter),
        contact_id.clone(),
        reason,
        Some(format!("sent again to {topic}")),
    );
    let id = audit.event_id;
    let key = key.unwrap_or_default();
    // The letter's dead_letter exception (the notifier opened it under the letter's id) is
    // resolved by the replay, in the same transaction.
    let resolved = ExceptionEvent {
        event_id: Uuid::new_v5(&id, b"dead-letter-exception-resolved"),
        tenant_id: principal.tenant_id.clone(),
        occurred_at: audit.occurred_at,
        causation_id: Some(id),
        correlation_id: Some(id),
        exception_id: letter_id,
        status: ExceptionStatus::Resolved,
        exception_type: ExceptionType::DeadLetter,
        urgent: false,
        contact_id: String::from_utf8_lossy(&key).into_owned(),
        campaign_id: None,
        job_id: None,
        launch_id: None,
        call_id: None,
        operation_id: None,
        reason: "replayed".into(),
        detail: Some(format!("sent again to {topic}")),
        actor: audit.actor.clone(),
        assignee: None,
    };
    let names = &state.config().topics;
    let (audit_topic, exceptions_topic) = (
        names.name(callstream_platform::topics::AUDIT),
        names.name(callstream_platform::topics::EXCEPTIONS),
    );
    let exception_key = resolved.contact_id.clone();
    let records = vec![
        Prepared {
            topic,
            key,
            payload,
            headers: record_headers,
        },
        Prepared::event(audit_topic, &principal.tenant_id, &audit.into())?,
        Prepared::event(exceptions_topic, &exception_key, &resolved.into())?,
    ];
    state.publisher().send_together(records, id).await?;
    accepted(
        &state,
        &principal,
        id,
        AUDIT_DEAD_LETTER_REPLAY.into(),
        contact_id,
        wait,
    )
    .await
}

/// The topic of a record letter's source (`topic/partition/offset`), if it is one of this
/// deployment's topics (a letter's headers are data: never send to a topic they name
/// otherwise).
fn source_topic(state: &AppState, source: Option<&str>) -> Option<String> {
    let mut parts = source?.rsplitn(3, '/');
    let (_offset, _partition, topic) = (parts.next()?, parts.next()?, parts.next()?);
    callstream_platform::topics::ALL
        .iter()
        .map(|(logical, _)| state.config().topics.name(logical))
        .find(|physical| physical == topic)
}

//! The actions: each becomes one command on Kafka (`contact-commands` keyed by contact,
//! or a change on the compacted `control` topic), answered 202 with the command id once the
//! broker has it. Nothing here writes a row: the commands view shows the command when the
//! projection has read it, and `applied` or `rejected` when a processor has acted on it.
//!
//! Every object an action names is looked up in the token's tenant first; one of another
//! tenant is not found (404), so no tenant can act on another's contacts.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use callstream_domain::input::MAX_REASON_CHARS;
use callstream_platform::topics;
use callstream_schemas::{
    Actor, AnyEvent, AuditEvent, AuditResult, ContactCommand, ContactCommandKind,
};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::app::AppState;
use crate::auth::{Principal, Role};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Body, Path, Query, WaitParam};
use crate::model::{Accepted, CommandStatus};

/// Status of a command; `?wait=` waits for `applied` or `rejected`.
#[utoipa::path(get, path = "/v1/commands/{command_id}", tag = "commands",
    params(("command_id" = Uuid, Path, description = "The id an action answered"), WaitParam, crate::app::TenantHeader),
    security(("bearer" = [])),
    responses((status = 200, body = CommandStatus), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn get_command(
    State(state): State<AppState>,
    principal: Principal,
    Path(command_id): Path<Uuid>,
    Query(wait): Query<WaitParam>,
) -> Result<Json<CommandStatus>, ApiError> {
    principal.require(Role::Viewer)?;
    let wait = wait.duration(state.config().max_wait)?;
    let _slot = state.limits().wait_slot(wait)?;
    let status = wait_for(
        &state,
        &principal.tenant_id,
        command_id,
        wait.unwrap_or_default(),
    )
    .await?;
    status
        .map(Json)
        .ok_or(ApiError::NotFound { what: "command" })
}

/// The command's status from the view, waiting up to `wait` for an outcome. A command this
/// API sent that the projection has not read yet is `pending`.
async fn wait_for(
    state: &AppState,
    tenant: &str,
    command_id: Uuid,
    wait: Duration,
) -> Result<Option<CommandStatus>, ApiError> {
    let deadline = Instant::now() + wait;
    loop {
        let row: Option<CommandStatus> = sqlx::query_as(
            "SELECT command_id, kind, contact_id, actor_id, requested_at, status, status_at, reason
             FROM commands WHERE tenant_id = $1 AND command_id = $2",
        )
        .bind(tenant)
        .bind(command_id)
        .fetch_optional(state.pool())
        .await?;
        let done = row.as_ref().is_some_and(|r| r.status != "pending");
        if done || Instant::now() >= deadline {
            return Ok(row.or_else(|| state.issued(tenant, command_id)));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends the command and answers 202, after waiting if asked.
#[allow(clippy::too_many_arguments)] // one place that sends every kind of command
pub(crate) async fn send(
    state: &AppState,
    principal: &Principal,
    topic: &str,
    key: &str,
    event: AnyEvent,
    kind: String,
    contact_id: Option<String>,
    wait: Option<Duration>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let command_id = event.envelope().event_id;
    // Taken before sending: refused for the cap, the command was not sent.
    let _slot = state.limits().wait_slot(wait)?;
    let physical = state.config().topics.name(topic);
    if topic == topics::CONTROL {
        // With its history, in one transaction.
        state
            .publisher()
            .send_control(&physical, key, &event)
            .await?;
    } else {
        state.publisher().send(&physical, key, &event).await?;
    }
    accepted(state, principal, command_id, kind, contact_id, wait).await
}

/// The answer to a command the broker has: remembered as `pending` until the view shows
/// it, and 202 with its status after waiting if asked.
pub(crate) async fn accepted(
    state: &AppState,
    principal: &Principal,
    command_id: Uuid,
    kind: String,
    contact_id: Option<String>,
    wait: Option<Duration>,
) -> Answer {
    state.remember(principal, command_id, kind.clone(), contact_id);
    tracing::info!(%command_id, kind, tenant = %principal.tenant_id, token = %principal.token_id, "command sent");
    let status = match wait {
        Some(wait) => wait_for(state, &principal.tenant_id, command_id, wait).await?,
        None => None,
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(Accepted {
            command_id,
            status: status
                .as_ref()
                .map_or("pending".into(), |s| s.status.clone()),
            reason: status.and_then(|s| s.reason),
            status_url: format!("/v1/commands/{command_id}"),
        }),
    ))
}

/// Sends an operator's contact command: keyed by its contact (the contact processor's
/// key), remembered under its kind and contact.
pub(crate) async fn send_contact_command(
    state: &AppState,
    principal: &Principal,
    command: ContactCommand,
    wait: Option<Duration>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let contact_id = command.contact_id.clone();
    let kind = command.kind.to_string();
    send(
        state,
        principal,
        topics::CONTACT_COMMANDS,
        &contact_id,
        command.into(),
        kind,
        Some(contact_id.clone()),
        wait,
    )
    .await
}

pub(crate) fn contact_command(
    principal: &Principal,
    kind: ContactCommandKind,
    contact_id: &str,
) -> ContactCommand {
    let id = Uuid::new_v4();
    ContactCommand {
        event_id: id,
        tenant_id: principal.tenant_id.clone(),
        occurred_at: callstream_platform::clock::now_utc(),
        causation_id: None,
        correlation_id: Some(id),
        kind,
        contact_id: contact_id.to_string(),
        actor: Actor::operator(principal.subject.clone()),
        request_id: None,
        campaign_id: None,
        job_id: None,
        launch_id: None,
        exception_id: None,
        origin: None,
        slot: None,
        slot_at: None,
        requested_at: None,
        contact: None,
        reason: None,
    }
}

/// The audit event of an operator's action that no processor judges (an assignment, a
/// replay): applied as it is made, so the event is its own outcome, and its id is the
/// command's.
pub(crate) fn applied_audit(
    principal: &Principal,
    action: &str,
    (subject_type, subject_id): (&str, String),
    contact_id: Option<String>,
    reason: Option<String>,
    detail: Option<String>,
) -> AuditEvent {
    let id = Uuid::new_v4();
    AuditEvent {
        event_id: id,
        tenant_id: principal.tenant_id.clone(),
        occurred_at: callstream_platform::clock::now_utc(),
        causation_id: None,
        correlation_id: Some(id),
        actor: Actor::operator(principal.subject.clone()),
        action: action.into(),
        subject_type: subject_type.into(),
        subject_id,
        contact_id,
        command_id: Some(id),
        result: AuditResult::Applied,
        reason,
        detail,
    }
}

pub(crate) async fn contact_exists(
    state: &AppState,
    tenant: &str,
    contact_id: &str,
) -> Result<(), ApiError> {
    // The path's contact id, checked before Postgres sees it (a NUL would be a 500 there).
    crate::extract::param_id("contact_id", contact_id)?;
    let found: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM contact_timeline WHERE tenant_id = $1 AND contact_id = $2)
             OR EXISTS (SELECT 1 FROM jobs WHERE tenant_id = $1 AND contact_id = $2)",
    )
    .bind(tenant)
    .bind(contact_id)
    .fetch_one(state.pool())
    .await?;
    if found {
        Ok(())
    } else {
        Err(ApiError::NotFound { what: "contact" })
    }
}

/// A reason as given: free text of at most 500 characters (as the schema counts them,
/// not bytes) without control characters but tab and line breaks; blank is none.
pub(crate) fn reason_of(reason: Option<String>) -> Result<Option<String>, ApiError> {
    match reason {
        Some(r) => {
            crate::extract::body_text("reason", &r, MAX_REASON_CHARS)?;
            Ok((!r.trim().is_empty()).then_some(r))
        }
        None => Ok(None),
    }
}

/// Body of an action that only needs a reason.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasonBody {
    /// Why (kept on the audit trail).
    #[schema(
        max_length = 500,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F]*$"
    )]
    pub reason: Option<String>,
}

/// Body of cancelling a contact's future jobs: a reason is required.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    /// Why they are cancelled (required, not blank: no cancellation without a reason).
    #[schema(value_type = String, required = true, max_length = 500, pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F]*[^\\s\\u0000-\\u001F][^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F]*$")]
    pub reason: Option<String>,
}

pub(crate) type Answer = Result<(StatusCode, Json<Accepted>), ApiError>;

async fn simple_contact_action(
    state: &AppState,
    principal: &Principal,
    contact_id: &str,
    kind: ContactCommandKind,
    reason: Option<String>,
    wait: Option<Duration>,
) -> Answer {
    principal.require(Role::Operator)?;
    contact_exists(state, &principal.tenant_id, contact_id).await?;
    let mut command = contact_command(principal, kind, contact_id);
    command.reason = reason;
    send_contact_command(state, principal, command, wait).await
}

/// Cancel every future job of the contact.
#[utoipa::path(post, path = "/v1/contacts/{contact_id}/cancel-future-jobs", tag = "actions",
    params(("contact_id" = String, Path, max_length = 256, pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"), WaitParam, crate::app::TenantHeader), request_body(content = CancelBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn cancel_future_jobs(
    State(state): State<AppState>,
    principal: Principal,
    Path(contact_id): Path<String>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<CancelBody>,
) -> Answer {
    let wait = wait.duration(state.config().max_wait)?;
    let reason = reason_of(body.reason)?
        .ok_or_else(|| ApiError::Unprocessable("reason is required to cancel jobs".into()))?;
    simple_contact_action(
        &state,
        &principal,
        &contact_id,
        ContactCommandKind::CancelFutureJobs,
        Some(reason),
        wait,
    )
    .await
}

/// Finish the contact's workflow now.
#[utoipa::path(post, path = "/v1/contacts/{contact_id}/force-finish", tag = "actions",
    params(("contact_id" = String, Path, max_length = 256, pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"), WaitParam, crate::app::TenantHeader), request_body(content = ReasonBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn force_finish(
    State(state): State<AppState>,
    principal: Principal,
    Path(contact_id): Path<String>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<ReasonBody>,
) -> Answer {
    let wait = wait.duration(state.config().max_wait)?;
    let reason = reason_of(body.reason)?;
    simple_contact_action(
        &state,
        &principal,
        &contact_id,
        ContactCommandKind::ForceFinish,
        reason,
        wait,
    )
    .await
}

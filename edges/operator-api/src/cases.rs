//! Actions on cases: recover a missing completion or advance it as voicemail or no-answer
//! (named by its launch), and ignore an open exception. The contact of the command is the
//! launch's or the exception's, read from the views in the token's tenant. An ignore names
//! the exception's launch too: recovery judges the ignore of a missing-completion case's
//! exception (derived from its launch), the contact processor every other one, so each
//! ignore ends `applied` or `rejected` exactly once.

use axum::extract::State;
use callstream_schemas::ContactCommandKind;
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::actions::{
    applied_audit, contact_command, reason_of, send, send_contact_command, Answer, ReasonBody,
};
use crate::app::AppState;
use crate::auth::{Principal, Role};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Body, Path, Query, WaitParam};
use crate::model::Accepted;

async fn launch_contact(
    state: &AppState,
    tenant: &str,
    launch_id: Uuid,
) -> Result<String, ApiError> {
    sqlx::query_scalar("SELECT contact_id FROM launches WHERE tenant_id = $1 AND launch_id = $2")
        .bind(tenant)
        .bind(launch_id)
        .fetch_optional(state.pool())
        .await?
        .ok_or(ApiError::NotFound { what: "launch" })
}

async fn launch_action(
    state: &AppState,
    principal: &Principal,
    launch_id: Uuid,
    kind: ContactCommandKind,
    reason: Option<String>,
    wait: WaitParam,
) -> Answer {
    principal.require(Role::Operator)?;
    let wait = wait.duration(state.config().max_wait)?;
    let reason = reason_of(reason)?;
    let contact_id = launch_contact(state, &principal.tenant_id, launch_id).await?;
    let mut command = contact_command(principal, kind, &contact_id);
    command.launch_id = Some(launch_id);
    command.reason = reason;
    send_contact_command(state, principal, command, wait).await
}

/// Look the call up at the voice platform now and replay what it says.
#[utoipa::path(post, path = "/v1/launches/{launch_id}/recover", tag = "actions",
    params(("launch_id" = Uuid, Path), WaitParam, crate::app::TenantHeader), request_body(content = ReasonBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn recover(
    State(state): State<AppState>,
    principal: Principal,
    Path(launch_id): Path<Uuid>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<ReasonBody>,
) -> Answer {
    launch_action(
        &state,
        &principal,
        launch_id,
        ContactCommandKind::Recover,
        body.reason,
        wait,
    )
    .await
}

/// How to advance a launch whose completion is missing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdvanceAs {
    #[default]
    NoAnswer,
    Voicemail,
}

/// Body of an advance.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdvanceBody {
    /// `no_answer` or `voicemail` (required).
    #[serde(rename = "as")]
    #[schema(value_type = AdvanceAs, required = true)]
    pub advance_as: Option<AdvanceAs>,
    /// Why (kept on the audit trail).
    #[schema(
        max_length = 500,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F]*$"
    )]
    pub reason: Option<String>,
}

/// Treat the missing completion as voicemail or no-answer and take the next step.
#[utoipa::path(post, path = "/v1/launches/{launch_id}/advance", tag = "actions",
    params(("launch_id" = Uuid, Path), WaitParam, crate::app::TenantHeader), request_body(content = AdvanceBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn advance(
    State(state): State<AppState>,
    principal: Principal,
    Path(launch_id): Path<Uuid>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<AdvanceBody>,
) -> Answer {
    let kind = match body.advance_as {
        Some(AdvanceAs::NoAnswer) => ContactCommandKind::AdvanceNoAnswer,
        Some(AdvanceAs::Voicemail) => ContactCommandKind::AdvanceVoicemail,
        None => {
            return Err(ApiError::Unprocessable(
                "as is required: no_answer or voicemail".into(),
            ))
        }
    };
    launch_action(&state, &principal, launch_id, kind, body.reason, wait).await
}

/// Ignore an open exception case (409 when the view shows it closed).
#[utoipa::path(post, path = "/v1/exceptions/{exception_id}/ignore", tag = "actions",
    params(("exception_id" = Uuid, Path), WaitParam, crate::app::TenantHeader), request_body(content = ReasonBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn ignore_exception(
    State(state): State<AppState>,
    principal: Principal,
    Path(exception_id): Path<Uuid>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<ReasonBody>,
) -> Answer {
    principal.require(Role::Operator)?;
    let wait = wait.duration(state.config().max_wait)?;
    let reason = reason_of(body.reason)?;
    let row: Option<(String, Option<Uuid>, String)> = sqlx::query_as(
        "SELECT contact_id, launch_id, status FROM exceptions
         WHERE tenant_id = $1 AND exception_id = $2",
    )
    .bind(&principal.tenant_id)
    .bind(exception_id)
    .fetch_optional(state.pool())
    .await?;
    let (contact_id, launch_id, status) = row.ok_or(ApiError::NotFound { what: "exception" })?;
    // A closed exception has nothing to ignore, and the contact processor, which judges
    // ignores of exceptions other services opened, cannot tell whether one is still open.
    if status != "open" {
        return Err(ApiError::Conflict(format!(
            "the exception is {status}; only an open one can be ignored"
        )));
    }
    let mut command = contact_command(&principal, ContactCommandKind::Ignore, &contact_id);
    command.exception_id = Some(exception_id);
    command.launch_id = launch_id;
    command.reason = reason;
    send_contact_command(&state, &principal, command, wait).await
}

/// Body of an assignment.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignBody {
    /// Who takes the exception (an operator's name or id); absent or null unassigns it.
    #[schema(
        max_length = 256,
        pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"
    )]
    pub assignee: Option<String>,
    /// Why (kept on the audit trail).
    #[schema(
        max_length = 500,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F]*$"
    )]
    pub reason: Option<String>,
}

/// Assign an exception to someone, or unassign it. An annotation for people, judged by no
/// processor: it is an audit event (`exception.assign`, applied) on the audit topic, and
/// the exceptions view shows the latest assignment. Closed exceptions are refused (409).
#[utoipa::path(post, path = "/v1/exceptions/{exception_id}/assign", tag = "actions",
    params(("exception_id" = Uuid, Path), WaitParam, crate::app::TenantHeader), request_body(content = AssignBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn assign_exception(
    State(state): State<AppState>,
    principal: Principal,
    Path(exception_id): Path<Uuid>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<AssignBody>,
) -> Answer {
    principal.require(Role::Operator)?;
    let wait = wait.duration(state.config().max_wait)?;
    let reason = reason_of(body.reason)?;
    let assignee = body.assignee.filter(|a| !a.trim().is_empty());
    if let Some(a) = &assignee {
        crate::extract::body_id("assignee", a)?;
    }
    let row: Option<(String, String)> = sqlx::query_as(
        "SELECT contact_id, status FROM exceptions WHERE tenant_id = $1 AND exception_id = $2",
    )
    .bind(&principal.tenant_id)
    .bind(exception_id)
    .fetch_optional(state.pool())
    .await?;
    let (contact_id, status) = row.ok_or(ApiError::NotFound { what: "exception" })?;
    if status != "open" {
        return Err(ApiError::Conflict(format!(
            "the exception is {status}; only an open one can be assigned"
        )));
    }
    let event = applied_audit(
        &principal,
        callstream_schemas::AUDIT_EXCEPTION_ASSIGN,
        ("exception", exception_id.to_string()),
        Some(contact_id.clone()),
        reason,
        assignee,
    );
    send(
        &state,
        &principal,
        callstream_platform::topics::AUDIT,
        &principal.tenant_id.clone(),
        event.into(),
        callstream_schemas::AUDIT_EXCEPTION_ASSIGN.into(),
        Some(contact_id),
        wait,
    )
    .await
}

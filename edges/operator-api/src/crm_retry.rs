//! Retry of a CRM command that failed for good, named by its open `crm_failed` exception.
//!
//! The CRM dispatcher keeps a failed command in its effect ledger; this action asks it to
//! run that command again. The command is a `ContactCommand` (kind `retry_now`, the
//! exception's id, the operator as actor) on `crm-commands`, keyed by the exception's
//! contact, so it reaches the dispatcher partition that holds the failed command. The
//! dispatcher audits it `applied` (the exception is resolved and the command runs again,
//! searching the CRM by its operation id first, so a retry never duplicates a write) or
//! `rejected` (nothing failed there to retry, for example a second retry), which
//! `GET /v1/commands/{id}` and `?wait=` report.

use axum::extract::State;
use callstream_platform::topics;
use callstream_schemas::{ContactCommandKind, ExceptionType};
use uuid::Uuid;

use crate::actions::{contact_command, reason_of, send, Answer, ReasonBody};
use crate::app::AppState;
use crate::auth::{Principal, Role};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Body, Path, Query, WaitParam};
use crate::model::Accepted;

/// The kind the command is remembered by until the commands view shows its outcome.
const KIND: &str = "crm_retry";

/// Retry the failed CRM command of an open `crm_failed` exception.
#[utoipa::path(post, path = "/v1/exceptions/{exception_id}/retry", tag = "actions",
    params(("exception_id" = Uuid, Path, description = "An open crm_failed exception"), WaitParam,
        crate::app::TenantHeader),
    request_body(content = ReasonBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn retry_crm_command(
    State(state): State<AppState>,
    principal: Principal,
    Path(exception_id): Path<Uuid>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<ReasonBody>,
) -> Answer {
    principal.require(Role::Operator)?;
    let wait = wait.duration(state.config().max_wait)?;
    let reason = reason_of(body.reason)?;
    let row: Option<(String, String, String)> = sqlx::query_as(
        "SELECT contact_id, exception_type, status FROM exceptions
         WHERE tenant_id = $1 AND exception_id = $2",
    )
    .bind(&principal.tenant_id)
    .bind(exception_id)
    .fetch_optional(state.pool())
    .await?;
    let (contact_id, exception_type, status) =
        row.ok_or(ApiError::NotFound { what: "exception" })?;
    let crm_failed = ExceptionType::CrmFailed.as_str();
    // The request is well formed either way; it is the exception that has no command to
    // retry (another type) or is no longer open: a conflict with its state, as for ignore.
    if exception_type != crm_failed {
        return Err(ApiError::Conflict(format!(
            "only {crm_failed} exceptions have a CRM command to retry; this one is {exception_type}"
        )));
    }
    if status != "open" {
        return Err(ApiError::Conflict(format!(
            "the exception is {status}; only an open one can be retried"
        )));
    }
    let mut command = contact_command(&principal, ContactCommandKind::RetryNow, &contact_id);
    command.exception_id = Some(exception_id);
    command.reason = reason;
    send(
        &state,
        &principal,
        topics::CRM_COMMANDS,
        &contact_id,
        command.into(),
        KIND.into(),
        Some(contact_id.clone()),
        wait,
    )
    .await
}

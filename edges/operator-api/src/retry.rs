//! Retry now and retry later: a new call for the contact, planned through the scheduler
//! (in the lead's calling window), replacing the named job when there is one. The command
//! goes to `contact-commands`; the contact processor audits it `applied` or `rejected`
//! (a lead who may not be called, a job it does not know, no campaign to call in).

use std::time::Duration;

use axum::extract::State;
use callstream_schemas::{ContactCommandKind, JobOrigin};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::actions::{contact_command, contact_exists, reason_of, send_contact_command, Answer};
use crate::app::AppState;
use crate::auth::{Principal, Role};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Body, Path, Query, WaitParam};
use crate::model::Accepted;

/// Body of a retry now.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryNowBody {
    /// The job to retry (one of the contact's); default its latest.
    pub job_id: Option<Uuid>,
    /// The campaign to plan the retry in; default the job's.
    #[schema(
        max_length = 256,
        pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"
    )]
    pub campaign_id: Option<String>,
    /// Why (kept on the audit trail).
    #[schema(
        max_length = 500,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F]*$"
    )]
    pub reason: Option<String>,
}

/// Body of a retry later.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryLaterBody {
    /// When to call (RFC 3339), required; the calling window still applies, and a time
    /// already past means as soon as it allows (the processor never plans into the past).
    #[schema(value_type = DateTime<Utc>, required = true)]
    pub at: Option<DateTime<Utc>>,
    /// The job to retry (one of the contact's); default its latest.
    pub job_id: Option<Uuid>,
    /// The campaign to plan the retry in; default the job's.
    #[schema(
        max_length = 256,
        pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"
    )]
    pub campaign_id: Option<String>,
    /// Why (kept on the audit trail).
    #[schema(
        max_length = 500,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F]*$"
    )]
    pub reason: Option<String>,
}

/// What both retries say.
struct Retry {
    kind: ContactCommandKind,
    job_id: Option<Uuid>,
    campaign_id: Option<String>,
    reason: Option<String>,
    at: Option<DateTime<Utc>>,
}

async fn retry(
    state: &AppState,
    principal: &Principal,
    contact_id: &str,
    r: Retry,
    wait: Option<Duration>,
) -> Answer {
    principal.require(Role::Operator)?;
    let reason = reason_of(r.reason)?;
    if let Some(campaign) = &r.campaign_id {
        crate::extract::body_id("campaign_id", campaign)?;
    }
    contact_exists(state, &principal.tenant_id, contact_id).await?;
    let mut campaign_id = r.campaign_id;
    if let Some(job_id) = r.job_id {
        let job = crate::reads::find_job(state, &principal.tenant_id, job_id).await?;
        match job {
            Some(job) if job.contact_id == contact_id => {
                campaign_id = campaign_id.or(job.campaign_id);
            }
            _ => return Err(ApiError::NotFound { what: "job" }),
        }
    }
    let mut command = contact_command(principal, r.kind, contact_id);
    command.job_id = r.job_id;
    command.campaign_id = campaign_id;
    command.origin = Some(JobOrigin::OperatorRetry);
    command.requested_at = r.at;
    command.reason = reason;
    send_contact_command(state, principal, command, wait).await
}

/// Plan a call for the contact now (through the scheduler, in its window).
#[utoipa::path(post, path = "/v1/contacts/{contact_id}/retry-now", tag = "actions",
    params(("contact_id" = String, Path, max_length = 256, pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"), WaitParam, crate::app::TenantHeader), request_body(content = RetryNowBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn retry_now(
    State(state): State<AppState>,
    principal: Principal,
    Path(contact_id): Path<String>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<RetryNowBody>,
) -> Answer {
    let wait = wait.duration(state.config().max_wait)?;
    let r = Retry {
        kind: ContactCommandKind::RetryNow,
        job_id: body.job_id,
        campaign_id: body.campaign_id,
        reason: body.reason,
        at: None,
    };
    retry(&state, &principal, &contact_id, r, wait).await
}

/// Plan a call for the contact at a time.
#[utoipa::path(post, path = "/v1/contacts/{contact_id}/retry-later", tag = "actions",
    params(("contact_id" = String, Path, max_length = 256, pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"), WaitParam, crate::app::TenantHeader), request_body(content = RetryLaterBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn retry_later(
    State(state): State<AppState>,
    principal: Principal,
    Path(contact_id): Path<String>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<RetryLaterBody>,
) -> Answer {
    principal.require(Role::Operator)?;
    let wait = wait.duration(state.config().max_wait)?;
    let at = body
        .at
        .ok_or_else(|| ApiError::Unprocessable("at is required for retry later".into()))?;
    let r = Retry {
        kind: ContactCommandKind::RetryLater,
        job_id: body.job_id,
        campaign_id: body.campaign_id,
        reason: body.reason,
        at: Some(at),
    };
    retry(&state, &principal, &contact_id, r, wait).await
}

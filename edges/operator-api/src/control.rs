//! Control actions (admin only): system and campaign pauses, shadow mode and the CRM write
//! switch, each a `ControlChange` on the compacted `control` topic with who, when, the old
//! value (from the control view) and the new one. A change takes effect by being on the
//! log, so its command is `applied` as soon as the projection has read it.

use axum::extract::State;
use callstream_platform::topics;
use callstream_schemas::{Actor, ControlChange, ControlSetting, ControlValue};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::actions::{reason_of, send, Answer};
use crate::app::AppState;
use crate::auth::{Principal, Role};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Body, Path, Query, WaitParam};
use crate::model::Accepted;

/// Body of a switch.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchBody {
    /// Pauses: paused; shadow mode: on; CRM writes: allowed (required).
    // An `Option` (documented as a required bool) so that an absent value is refused with
    // a message rather than read as `false`, which would unpause.
    #[schema(value_type = bool, required = true)]
    pub enabled: Option<bool>,
    /// Why (kept on the audit trail).
    #[schema(
        max_length = 500,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F]*$"
    )]
    pub reason: Option<String>,
}

async fn switch(
    state: &AppState,
    principal: &Principal,
    setting: ControlSetting,
    campaign_id: Option<String>,
    body: SwitchBody,
    wait: WaitParam,
) -> Answer {
    principal.require(Role::Admin)?;
    let wait = wait.duration(state.config().max_wait)?;
    let enabled = body
        .enabled
        .ok_or_else(|| ApiError::Unprocessable("enabled is required (true or false)".into()))?;
    let reason = reason_of(body.reason)?;
    if let Some(campaign) = &campaign_id {
        crate::extract::param_id("campaign_id", campaign)?;
    }
    let old: Option<serde_json::Value> = sqlx::query_scalar(
        "SELECT value FROM control_settings WHERE tenant_id = $1 AND setting = $2 AND campaign_id = $3",
    )
    .bind(&principal.tenant_id)
    .bind(setting.as_str())
    .bind(campaign_id.as_deref().unwrap_or(""))
    .fetch_optional(state.pool())
    .await?;
    let id = Uuid::new_v4();
    let change = ControlChange {
        event_id: id,
        tenant_id: principal.tenant_id.clone(),
        occurred_at: callstream_platform::clock::now_utc(),
        causation_id: None,
        correlation_id: Some(id),
        setting,
        campaign_id,
        new_value: ControlValue {
            enabled: Some(enabled),
            ..ControlValue::default()
        },
        old_value: old.and_then(|v| serde_json::from_value(v).ok()),
        actor: Actor::operator(principal.subject.clone()),
        reason,
    };
    let key = change.record_key();
    send(
        state,
        principal,
        topics::CONTROL,
        &key,
        change.into(),
        format!("control.{setting}"),
        None,
        wait,
    )
    .await
}

/// Pause (`enabled: true`) or unpause every launch of the tenant.
#[utoipa::path(post, path = "/v1/control/system-pause", tag = "control",
    params(WaitParam, crate::app::TenantHeader), request_body(content = SwitchBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn system_pause(
    State(state): State<AppState>,
    principal: Principal,
    Query(wait): Query<WaitParam>,
    Body(body): Body<SwitchBody>,
) -> Answer {
    switch(
        &state,
        &principal,
        ControlSetting::SystemPause,
        None,
        body,
        wait,
    )
    .await
}

/// Pause (`enabled: true`) or unpause one campaign.
#[utoipa::path(post, path = "/v1/control/campaigns/{campaign_id}/pause", tag = "control",
    params(("campaign_id" = String, Path, max_length = 256, pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"), WaitParam, crate::app::TenantHeader), request_body(content = SwitchBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn campaign_pause(
    State(state): State<AppState>,
    principal: Principal,
    Path(campaign_id): Path<String>,
    Query(wait): Query<WaitParam>,
    Body(body): Body<SwitchBody>,
) -> Answer {
    switch(
        &state,
        &principal,
        ControlSetting::CampaignPause,
        Some(campaign_id),
        body,
        wait,
    )
    .await
}

/// Turn shadow mode on (`enabled: true`: launches are recorded, no call is made) or off.
#[utoipa::path(post, path = "/v1/control/shadow-mode", tag = "control",
    params(WaitParam, crate::app::TenantHeader), request_body(content = SwitchBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn shadow_mode(
    State(state): State<AppState>,
    principal: Principal,
    Query(wait): Query<WaitParam>,
    Body(body): Body<SwitchBody>,
) -> Answer {
    switch(
        &state,
        &principal,
        ControlSetting::ShadowMode,
        None,
        body,
        wait,
    )
    .await
}

/// Allow (`enabled: true`) or stop writes to the CRM.
#[utoipa::path(post, path = "/v1/control/crm-writes", tag = "control",
    params(WaitParam, crate::app::TenantHeader), request_body(content = SwitchBody),
    security(("bearer" = [])),
    responses((status = 202, body = Accepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn crm_writes(
    State(state): State<AppState>,
    principal: Principal,
    Query(wait): Query<WaitParam>,
    Body(body): Body<SwitchBody>,
) -> Answer {
    switch(
        &state,
        &principal,
        ControlSetting::CrmWrites,
        None,
        body,
        wait,
    )
    .await
}

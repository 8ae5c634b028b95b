//! The console's actions: a form post becomes a call of the API's own action handler (same
//! role check, tenant scope, input rules and command on Kafka), waiting a few seconds for
//! the command's outcome. The answer is a fragment for the page's live region; a command
//! still pending polls its status until it is applied or rejected, so the outcome shows
//! without a reload. Every answer also asks the page's list to refresh.

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use chrono_tz::Tz;
use maud::html;
use serde::Deserialize;
use uuid::Uuid;

use super::fmt::{parse_local, short};
use super::{ConsoleError, Operator};
use crate::actions::{self, CancelBody, ReasonBody};
use crate::app::AppState;
use crate::cases::{self, AdvanceAs, AdvanceBody, AssignBody};
use crate::control::{self, SwitchBody};
use crate::error::ApiError;
use crate::extract::{Body, Path, Query, WaitParam};
use crate::model::{Accepted, CommandStatus};
use crate::retry::{self, RetryLaterBody, RetryNowBody};
use crate::{crm_retry, reads};

/// How long an action waits for its outcome before answering `pending` (and polling).
const WAIT: &str = "3s";

fn wait() -> Query<WaitParam> {
    Query(WaitParam {
        wait: Some(WAIT.into()),
    })
}

/// The fields any action form may send; each action reads the ones it takes. Blank fields
/// are absent.
#[derive(Debug, Default, Deserialize)]
pub struct ActionForm {
    reason: Option<String>,
    #[serde(rename = "as")]
    advance_as: Option<String>,
    job_id: Option<String>,
    at_local: Option<String>,
    zone: Option<String>,
    enabled: Option<String>,
    campaign_id: Option<String>,
    assignee: Option<String>,
}

fn present(field: Option<String>) -> Option<String> {
    field.filter(|v| !v.trim().is_empty())
}

impl ActionForm {
    fn reason(&self) -> Option<String> {
        present(self.reason.clone())
    }

    fn job_id(&self) -> Result<Option<Uuid>, ApiError> {
        present(self.job_id.clone())
            .map(|j| {
                j.parse()
                    .map_err(|_| ApiError::Unprocessable("job_id is not a job id".into()))
            })
            .transpose()
    }
}

type Outcome = Result<(axum::http::StatusCode, Json<Accepted>), ApiError>;

/// `response`, asking the page's list to refresh (htmx's `HX-Trigger`: the list reloads
/// on `refresh`).
fn refreshing(mut response: Response) -> Response {
    response.headers_mut().insert(
        HeaderName::from_static("hx-trigger"),
        HeaderValue::from_static("refresh"),
    );
    response
}

/// The outcome of an action as the live region shows it.
fn render(what: &str, outcome: Outcome) -> Response {
    match outcome {
        Ok((_, Json(a))) => {
            let body = status_markup(what, a.command_id, &a.status, a.reason.as_deref());
            refreshing(axum::response::Html(body.into_string()).into_response())
        }
        Err(e) => ConsoleError(e).into_response(),
    }
}

fn status_markup(what: &str, command_id: Uuid, status: &str, reason: Option<&str>) -> maud::Markup {
    html! {
        div class="command" data-command=(command_id) data-status=(status) {
            strong { (what) } ": "
            @match status {
                "applied" => span class="ok" { "applied" },
                "rejected" => span class="bad" { "rejected" },
                _ => span class="warn" { "sent, waiting for the processor…" },
            }
            @if let Some(r) = reason { " — " (r) }
            " " small { "(command " (short(command_id)) ")" }
            @if status == "pending" {
                // Asks again until the command is applied or rejected.
                span hx-get={ "/console/f/commands/" (command_id) "?what=" (query_value(what)) }
                    hx-trigger="load delay:1s" hx-target="closest div.command" hx-swap="outerHTML" {}
            }
        }
    }
}

/// `text` as a URL query value (every byte but letters and digits percent-encoded).
fn query_value(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[derive(Debug, Deserialize)]
pub struct CommandQuery {
    what: Option<String>,
}

/// A command's status, for an outcome still pending.
pub async fn command(
    State(state): State<AppState>,
    Operator(p): Operator,
    Path(command_id): Path<Uuid>,
    axum::extract::Query(q): axum::extract::Query<CommandQuery>,
) -> Result<Response, ConsoleError> {
    let Json(CommandStatus { status, reason, .. }) =
        actions::get_command(State(state), p, Path(command_id), wait()).await?;
    let what = q.what.unwrap_or_else(|| "Command".into());
    let response = axum::response::Html(
        status_markup(&what, command_id, &status, reason.as_deref()).into_string(),
    )
    .into_response();
    // Once the outcome is known, the list shows its effect.
    Ok(if status == "pending" {
        response
    } else {
        refreshing(response)
    })
}

/// Recover now, or advance as no-answer or voicemail, a launch whose completion is missing.
pub async fn launch(
    State(state): State<AppState>,
    Operator(p): Operator,
    Path((launch_id, action)): Path<(Uuid, String)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let reason = form.reason();
    let (what, outcome) = match action.as_str() {
        "recover" => (
            "Recover now",
            cases::recover(
                State(state),
                p,
                Path(launch_id),
                wait(),
                Body(ReasonBody { reason }),
            )
            .await,
        ),
        "advance" => {
            let (what, advance_as) = match form.advance_as.as_deref() {
                Some("voicemail") => ("Advance as voicemail", AdvanceAs::Voicemail),
                Some("no_answer") => ("Advance as no-answer", AdvanceAs::NoAnswer),
                _ => {
                    return ConsoleError(ApiError::Unprocessable(
                        "as must be no_answer or voicemail".into(),
                    ))
                    .into_response()
                }
            };
            let body = AdvanceBody {
                advance_as: Some(advance_as),
                reason,
            };
            (
                what,
                cases::advance(State(state), p, Path(launch_id), wait(), Body(body)).await,
            )
        }
        _ => return ConsoleError(ApiError::NotFound { what: "action" }).into_response(),
    };
    render(
        &format!("{what} (launch {})", &launch_id.to_string()[..8]),
        outcome,
    )
}

/// Ignore an exception, or retry its failed CRM command.
pub async fn exception(
    State(state): State<AppState>,
    Operator(p): Operator,
    Path((exception_id, action)): Path<(Uuid, String)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let body = ReasonBody {
        reason: form.reason(),
    };
    let (what, outcome) = match action.as_str() {
        "assign" => {
            let assign = AssignBody {
                assignee: present(form.assignee.clone()),
                reason: body.reason,
            };
            (
                "Assign",
                cases::assign_exception(State(state), p, Path(exception_id), wait(), Body(assign))
                    .await,
            )
        }
        "ignore" => (
            "Ignore",
            cases::ignore_exception(State(state), p, Path(exception_id), wait(), Body(body)).await,
        ),
        "retry-crm" => (
            "Retry the CRM write",
            crm_retry::retry_crm_command(State(state), p, Path(exception_id), wait(), Body(body))
                .await,
        ),
        _ => return ConsoleError(ApiError::NotFound { what: "action" }).into_response(),
    };
    render(
        &format!("{what} (exception {})", &exception_id.to_string()[..8]),
        outcome,
    )
}

/// Retry now or later, cancel future jobs, force finish: actions on a contact.
pub async fn contact(
    State(state): State<AppState>,
    Operator(p): Operator,
    Path((contact_id, action)): Path<(String, String)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let job_id = match form.job_id() {
        Ok(j) => j,
        Err(e) => return ConsoleError(e).into_response(),
    };
    let reason = form.reason();
    let path = Path(contact_id.clone());
    let (what, outcome) = match action.as_str() {
        "retry-now" => (
            "Retry now",
            retry::retry_now(
                State(state),
                p,
                path,
                wait(),
                Body(RetryNowBody {
                    job_id,
                    campaign_id: None,
                    reason,
                }),
            )
            .await,
        ),
        "retry-later" => {
            let at = match retry_at(&state, &p, &contact_id, &form).await {
                Ok(at) => at,
                Err(e) => return ConsoleError(e).into_response(),
            };
            (
                "Retry later",
                retry::retry_later(
                    State(state),
                    p,
                    path,
                    wait(),
                    Body(RetryLaterBody {
                        at: Some(at),
                        job_id,
                        campaign_id: None,
                        reason,
                    }),
                )
                .await,
            )
        }
        "cancel-future-jobs" => (
            "Cancel future jobs",
            actions::cancel_future_jobs(State(state), p, path, wait(), Body(CancelBody { reason }))
                .await,
        ),
        "force-finish" => (
            "Force finish",
            actions::force_finish(State(state), p, path, wait(), Body(ReasonBody { reason })).await,
        ),
        _ => return ConsoleError(ApiError::NotFound { what: "action" }).into_response(),
    };
    render(&format!("{what} ({contact_id})"), outcome)
}

/// The time of a retry later: the picker's local time read in the lead's zone (the form's,
/// else the zone of the contact's latest job), which the form named beside the picker.
async fn retry_at(
    state: &AppState,
    p: &crate::auth::Principal,
    contact_id: &str,
    form: &ActionForm,
) -> Result<chrono::DateTime<chrono::Utc>, ApiError> {
    let text = present(form.at_local.clone())
        .ok_or_else(|| ApiError::Unprocessable("at is required: the time to call".into()))?;
    let zone = match present(form.zone.clone()) {
        Some(z) => z,
        None => {
            crate::extract::param_id("contact_id", contact_id)?;
            let q = crate::query::JobsQuery {
                contact_id: Some(contact_id.to_string()),
                limit: Some(500),
                ..Default::default()
            };
            let Json(page) = reads::list_jobs(State(state.clone()), p.clone(), Query(q)).await?;
            super::pages::lead_zone(&page.items).ok_or_else(|| {
                ApiError::Unprocessable(
                    "the lead's time zone is not known yet: use retry now".into(),
                )
            })?
        }
    };
    let tz: Tz = zone
        .parse()
        .map_err(|_| ApiError::Unprocessable(format!("{zone:?} is not a time zone")))?;
    parse_local(&text, tz).ok_or_else(|| {
        ApiError::Unprocessable(format!(
            "{text:?} is not a time that exists in {zone} (a date and time such as 2026-12-04T15:30)"
        ))
    })
}

/// Pauses and switches (admins).
pub async fn control(
    State(state): State<AppState>,
    Operator(p): Operator,
    Path(setting): Path<String>,
    Form(form): Form<ActionForm>,
) -> Response {
    let enabled = match form.enabled.as_deref() {
        Some("true") => true,
        Some("false") => false,
        _ => {
            return ConsoleError(ApiError::Unprocessable(
                "enabled must be true or false".into(),
            ))
            .into_response()
        }
    };
    let body = SwitchBody {
        enabled: Some(enabled),
        reason: form.reason(),
    };
    let state_word = if enabled { "on" } else { "off" };
    let (what, outcome) = match setting.as_str() {
        "system_pause" => (
            format!("System pause {state_word}"),
            control::system_pause(State(state), p, wait(), Body(body)).await,
        ),
        "shadow_mode" => (
            format!("Shadow mode {state_word}"),
            control::shadow_mode(State(state), p, wait(), Body(body)).await,
        ),
        "crm_writes" => (
            format!("CRM writes {state_word}"),
            control::crm_writes(State(state), p, wait(), Body(body)).await,
        ),
        "campaign_pause" => {
            let Some(campaign) = present(form.campaign_id.clone()) else {
                return ConsoleError(ApiError::Unprocessable("campaign_id is required".into()))
                    .into_response();
            };
            (
                format!(
                    "{} campaign {campaign}",
                    if enabled { "Pause" } else { "Resume" }
                ),
                control::campaign_pause(
                    State(state),
                    p,
                    Path(campaign.clone()),
                    wait(),
                    Body(body),
                )
                .await,
            )
        }
        _ => return ConsoleError(ApiError::NotFound { what: "setting" }).into_response(),
    };
    render(&what, outcome)
}

/// Replay a dead letter.
pub async fn replay(
    State(state): State<AppState>,
    Operator(p): Operator,
    Path(letter_id): Path<Uuid>,
    Form(form): Form<ActionForm>,
) -> Response {
    let body = ReasonBody {
        reason: form.reason(),
    };
    let outcome =
        crate::dead_letters::replay(State(state), p, Path(letter_id), wait(), Body(body)).await;
    render(
        &format!("Replay (letter {})", &letter_id.to_string()[..8]),
        outcome,
    )
}

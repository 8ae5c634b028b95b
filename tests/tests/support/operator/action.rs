//! One operator action followed through: sent to the API (202 and a command id), its
//! command's outcome (`GET /v1/commands/{id}?wait=5s`), and what the views must then show.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use axum::http::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use super::{eventually, Stack};

pub const SOON: Duration = Duration::from_secs(10);

/// What the views must show once an action took effect.
pub enum Shows {
    /// Some job of the contact has every one of these fields.
    Job(&'static str, Vec<(&'static str, Value)>),
    /// The contact has no job at all.
    NoJob(&'static str),
    /// The exception has this status.
    Exception(Uuid, &'static str),
    /// The launch's missing-completion case closed with this resolution.
    Resolved(&'static str, Uuid, &'static str),
    /// The control view has the setting (and campaign) at this value.
    Control(&'static str, &'static str, bool),
}

/// One action: its name, path, who sends it, body, and the outcome it must end with.
pub struct Action {
    pub name: &'static str,
    pub uri: String,
    pub token: String,
    pub body: Value,
    pub outcome: (&'static str, Option<&'static str>),
    pub shows: Shows,
}

pub fn applied() -> (&'static str, Option<&'static str>) {
    ("applied", None)
}

pub async fn jobs_of(s: &Stack, contact: &str) -> Result<Vec<Value>> {
    let page = s.get(&format!("/v1/jobs?contact_id={contact}")).await?;
    Ok(page["items"].as_array().cloned().unwrap_or_default())
}

pub async fn shows(s: &Stack, what: &Shows) -> Result<bool> {
    Ok(match what {
        Shows::Job(contact, fields) => jobs_of(s, contact)
            .await?
            .iter()
            .any(|job| fields.iter().all(|(k, v)| &job[*k] == v)),
        Shows::NoJob(contact) => jobs_of(s, contact).await?.is_empty(),
        Shows::Exception(id, status) => {
            let page = s.get(&format!("/v1/exceptions?status={status}")).await?;
            let id = json!(id);
            page["items"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| e["exception_id"] == id)
        }
        Shows::Resolved(contact, launch, resolution) => {
            let missing = s.get("/v1/launches/missing").await?;
            let launch = json!(launch);
            let still_missing = missing["items"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["launch_id"] == launch);
            let timeline = s.get(&format!("/v1/contacts/{contact}/timeline")).await?;
            let resolved = timeline["items"].as_array().into_iter().flatten().any(|e| {
                e["event_type"] == "CompletionResolved"
                    && e["event"]["launch_id"] == launch
                    && e["event"]["resolution"] == *resolution
            });
            !still_missing && resolved
        }
        Shows::Control(setting, campaign, enabled) => {
            let settings = s.get("/v1/control").await?;
            settings.as_array().into_iter().flatten().any(|c| {
                c["setting"] == *setting
                    && c["campaign_id"] == *campaign
                    && c["enabled"] == json!(enabled)
            })
        }
    })
}

/// Sends the action and follows it through: 202, the command's outcome, the view.
pub async fn run(s: &Stack, a: &Action) -> Result<Uuid> {
    let started = Instant::now();
    let (status, answer) = s
        .call("POST", &a.uri, &a.token, Some(a.body.clone()))
        .await?;
    ensure!(
        status == StatusCode::ACCEPTED,
        "{}: {status} {answer}",
        a.name
    );
    let id: Uuid = answer["command_id"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .with_context(|| format!("{}: no command id in {answer}", a.name))?;
    ensure!(
        answer["status_url"] == format!("/v1/commands/{id}"),
        "{answer}"
    );
    let command = s.get(&format!("/v1/commands/{id}?wait=5s")).await?;
    // An applied command carries the processor's reason code too; a rejection must name
    // the expected one.
    let reason = command["reason"].as_str();
    ensure!(
        command["status"] == a.outcome.0 && a.outcome.1.is_none_or(|r| reason == Some(r)),
        "{}: command ended {command}",
        a.name
    );
    eventually(a.name, SOON, || async {
        Ok(shows(s, &a.shows).await?.then_some(()))
    })
    .await?;
    println!(
        "{:<28} {:>5} ms  {}",
        a.name,
        started.elapsed().as_millis(),
        a.outcome.0
    );
    Ok(id)
}

//! `POST /v1/exceptions/{id}/retry` against the real broker and a fresh Postgres database
//! with the live projections: only an open `crm_failed` exception of the token's tenant can
//! be retried, by an operator; the answer is 202 with a command id once the retry command
//! (`retry_now` naming the exception) is on `crm-commands`, keyed by the exception's
//! contact, where the CRM dispatcher reads it; the dispatcher's audit of it shows in
//! `GET /v1/commands/{id}`.

use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use callstream_e2e::fixtures;
use callstream_e2e::views::Views;
use callstream_operator_api::{app, create_token, state, OperatorApiConfig, Role};
use callstream_platform::topics as t;
use callstream_schemas::{
    decode_any, Actor, ActorKind, AnyEvent, AuditEvent, AuditResult, ContactCommandKind, Event,
    ExceptionEvent, ExceptionStatus, ExceptionType,
};
use chrono::Utc;
use http_body_util::BodyExt;
use rdkafka::consumer::Consumer;
use rdkafka::Message;
use serde_json::{json, Value};
use tower::ServiceExt;
use uuid::Uuid;

struct Env {
    router: axum::Router,
    views: Views,
}

/// A database of its own, topics behind a unique prefix, the projections running and the
/// router.
async fn setup() -> Result<Env> {
    let views = Views::start("callstream_test_crm_retry", "crmretry").await?;
    let config = OperatorApiConfig::new(
        views.db.url.clone(),
        views.kafka.clone(),
        views.topics.clone(),
    );
    let router = app(state(&config)?);
    Ok(Env { router, views })
}

async fn post(env: &Env, uri: &str, token: &str) -> Result<(StatusCode, Value)> {
    let request = Request::builder()
        .method("POST")
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(json!({"reason": "CRM is back"}).to_string()))?;
    let response = env.router.clone().oneshot(request).await?;
    let status = response.status();
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

fn exception(
    contact: &str,
    exception_type: ExceptionType,
    status: ExceptionStatus,
) -> ExceptionEvent {
    ExceptionEvent {
        operation_id: Some(Uuid::new_v4()),
        reason: "crm_retries_exhausted".into(),
        ..fixtures::exception(
            "ta",
            contact,
            Uuid::new_v4(),
            status,
            exception_type,
            Actor::system("crm-dispatcher"),
            Utc::now(),
        )
    }
}

/// Produces `exceptions` and waits until the view has them all.
async fn seed(env: &Env, exceptions: &[&ExceptionEvent]) -> Result<()> {
    let producer = callstream_e2e::producer()?;
    for e in exceptions {
        let topic = env.views.topics.name(t::EXCEPTIONS);
        callstream_e2e::produce(&producer, &topic, &e.contact_id, &e.encode()?).await?;
    }
    for _ in 0..400 {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM exceptions")
            .fetch_one(&env.views.db.pool)
            .await?;
        if n >= exceptions.len() as i64 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("exceptions not projected")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_crm_failed_exception_is_retried_through_crm_commands() -> Result<()> {
    use ExceptionStatus::{Open, Resolved};
    let env = setup().await?;
    let failed = exception("c1", ExceptionType::CrmFailed, Open);
    let other_type = exception("c2", ExceptionType::NoSlot, Open);
    let closed = exception("c3", ExceptionType::CrmFailed, Resolved);
    seed(&env, &[&failed, &other_type, &closed]).await?;
    let viewer = create_token(&env.views.db.pool, "ta", Role::Viewer, "viewer@a")
        .await?
        .token;
    let operator = create_token(&env.views.db.pool, "ta", Role::Operator, "op@a")
        .await?
        .token;
    let stranger = create_token(&env.views.db.pool, "tb", Role::Admin, "admin@b")
        .await?
        .token;
    let uri = |id: Uuid| format!("/v1/exceptions/{id}/retry");
    let refused = [
        (uri(failed.exception_id), &viewer, 403, "forbidden"),
        (uri(failed.exception_id), &stranger, 404, "not_found"),
        (uri(Uuid::new_v4()), &operator, 404, "not_found"),
        (uri(other_type.exception_id), &operator, 409, "conflict"),
        (uri(closed.exception_id), &operator, 409, "conflict"),
    ];
    for (uri, token, status, code) in refused {
        let (got, body) = post(&env, &uri, token).await?;
        assert_eq!(
            (got.as_u16(), body["code"].as_str()),
            (status, Some(code)),
            "{uri}: {body}"
        );
    }

    let (status, accepted) = post(&env, &uri(failed.exception_id), &operator).await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    let command_id: Uuid = accepted["command_id"]
        .as_str()
        .context("command id")?
        .parse()?;

    // On crm-commands, keyed by the exception's contact: the dispatcher's partition.
    let consumer =
        callstream_e2e::read_committed_consumer(&callstream_e2e::unique_name("crm-retry-check"))?;
    consumer.subscribe(&[&env.views.topics.name(t::CRM_COMMANDS)])?;
    let message = tokio::time::timeout(Duration::from_secs(30), consumer.recv()).await??;
    assert_eq!(message.key(), Some(&b"c1"[..]));
    let Ok(AnyEvent::ContactCommand(command)) = decode_any(message.payload().unwrap_or_default())
    else {
        anyhow::bail!("not a contact command");
    };
    assert_eq!(command.event_id, command_id);
    assert_eq!(command.kind, ContactCommandKind::RetryNow);
    assert_eq!(command.exception_id, Some(failed.exception_id));
    assert_eq!(
        (
            command.actor.kind,
            command.actor.id.as_str(),
            command.tenant_id.as_str()
        ),
        (ActorKind::Operator, "op@a", "ta")
    );

    // The dispatcher audits it; the commands view reports that.
    let subject = failed.exception_id.to_string();
    let audit = AuditEvent {
        causation_id: Some(command_id),
        correlation_id: Some(command_id),
        contact_id: Some("c1".into()),
        command_id: Some(command_id),
        reason: Some("retried".into()),
        ..fixtures::audit(
            "ta",
            command.actor.clone(),
            "crm.retry",
            ("exception", &subject),
            AuditResult::Applied,
            Utc::now(),
        )
    };
    let producer = callstream_e2e::producer()?;
    let topic = env.views.topics.name(t::AUDIT);
    callstream_e2e::produce(&producer, &topic, "ta", &audit.encode()?).await?;
    let request = Request::builder()
        .uri(format!("/v1/commands/{command_id}?wait=10s"))
        .header("authorization", format!("Bearer {operator}"))
        .body(Body::empty())?;
    let response = env.router.clone().oneshot(request).await?;
    let bytes = response.into_body().collect().await?.to_bytes();
    let done: Value = serde_json::from_slice(&bytes)?;
    assert_eq!(done["status"], "applied", "{done}");
    Ok(())
}

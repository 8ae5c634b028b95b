//! The operator API against the real broker and a fresh Postgres database, with the live
//! projections running: each error class, roles, tenant isolation, reads of the views, and
//! actions that put the right command on Kafka and show in the commands view.

use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use callstream_e2e::fixtures;
use callstream_e2e::views::Views;
use callstream_operator_api::{app, create_token, state, OperatorApiConfig, Role};
use callstream_platform::topics as t;
use callstream_schemas::{decode_any, AnyEvent, ContactCommandKind};
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

async fn setup() -> Result<Env> {
    let views = Views::start("callstream_test_api", "api").await?;
    let config = OperatorApiConfig::new(
        views.db.url.clone(),
        views.kafka.clone(),
        views.topics.clone(),
    );
    let router = app(state(&config)?);
    Ok(Env { router, views })
}

async fn call(
    env: &Env,
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Result<(StatusCode, Value)> {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = match body {
        Some(Value::String(raw)) => Body::from(raw),
        Some(v) => Body::from(v.to_string()),
        None => Body::empty(),
    };
    let resp = env.router.clone().oneshot(req.body(body)?).await?;
    let status = resp.status();
    let bytes = resp.into_body().collect().await?.to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok((status, value))
}

/// Produces events and waits until the jobs and timeline views show `jobs` jobs.
async fn seed(env: &Env, events: &[AnyEvent], tenant: &str, jobs: i64) -> Result<()> {
    let producer = callstream_e2e::producer()?;
    for e in events {
        let (topic, key) = match e {
            AnyEvent::ScheduleRequest(_) => (t::SCHEDULE_REQUESTS, tenant.to_string()),
            AnyEvent::ExceptionEvent(x) => (t::EXCEPTIONS, x.contact_id.clone()),
            AnyEvent::AuditEvent(_) => (t::AUDIT, tenant.to_string()),
            AnyEvent::CallLaunch(l) => (t::CALL_LAUNCHES, l.contact_id.clone()),
            _ => anyhow::bail!("not seeded here"),
        };
        callstream_e2e::produce(&producer, &env.views.topics.name(topic), &key, &e.encode()?)
            .await?;
    }
    for _ in 0..200 {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE tenant_id = $1")
            .bind(tenant)
            .fetch_one(&env.views.db.pool)
            .await?;
        if n >= jobs {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("jobs not projected")
}

fn plan(tenant: &str, contact: &str, job: Uuid) -> AnyEvent {
    fixtures::schedule_plan(tenant, contact, "camp", job, Utc::now()).into()
}

/// method, uri, token, body, headers, expected status, expected code.
type Case<'a> = (
    &'a str,
    String,
    Option<&'a str>,
    Option<Value>,
    Vec<(&'a str, &'a str)>,
    u16,
    &'a str,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_roles_and_tenant_isolation() -> Result<()> {
    let env = setup().await?;
    let job_a = Uuid::new_v4();
    seed(
        &env,
        &[plan("ta", "c1", job_a), plan("tb", "c9", Uuid::new_v4())],
        "ta",
        1,
    )
    .await?;
    seed(&env, &[], "tb", 1).await?;
    let viewer = create_token(&env.views.db.pool, "ta", Role::Viewer, "viewer@a")
        .await?
        .token;
    let operator = create_token(&env.views.db.pool, "ta", Role::Operator, "op@a")
        .await?
        .token;
    let other = create_token(&env.views.db.pool, "tb", Role::Admin, "admin@b")
        .await?
        .token;
    let job_uri = format!("/v1/jobs/{job_a}");
    let cases: Vec<Case> = vec![
        (
            "GET",
            "/v1/jobs".into(),
            None,
            None,
            vec![],
            401,
            "unauthenticated",
        ),
        (
            "GET",
            "/v1/jobs".into(),
            Some("cs_wrong"),
            None,
            vec![],
            401,
            "unauthenticated",
        ),
        (
            "POST",
            "/v1/contacts/c1/retry-now".into(),
            Some(&viewer),
            None,
            vec![],
            403,
            "forbidden",
        ),
        (
            "POST",
            "/v1/control/shadow-mode".into(),
            Some(&operator),
            Some(json!({"enabled": true})),
            vec![],
            403,
            "forbidden",
        ),
        (
            "GET",
            "/v1/jobs".into(),
            Some(&viewer),
            None,
            vec![("x-tenant-id", "tb")],
            403,
            "forbidden",
        ),
        (
            "GET",
            format!("/v1/jobs/{}", Uuid::new_v4()),
            Some(&viewer),
            None,
            vec![],
            404,
            "not_found",
        ),
        (
            "GET",
            job_uri.clone(),
            Some(&other),
            None,
            vec![],
            404,
            "not_found",
        ),
        (
            "POST",
            "/v1/contacts/c1/force-finish".into(),
            Some(&other),
            None,
            vec![],
            404,
            "not_found",
        ),
        (
            "GET",
            "/v1/nope".into(),
            Some(&viewer),
            None,
            vec![],
            404,
            "not_found",
        ),
        (
            "GET",
            "/v1/jobs/not-a-uuid".into(),
            Some(&viewer),
            None,
            vec![],
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/jobs?cursor=garbage".into(),
            Some(&viewer),
            None,
            vec![],
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/jobs?from=yesterday".into(),
            Some(&viewer),
            None,
            vec![],
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/slots".into(),
            Some(&viewer),
            None,
            vec![],
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/jobs?limit=0".into(),
            Some(&viewer),
            None,
            vec![],
            422,
            "unprocessable",
        ),
        (
            "GET",
            "/v1/jobs?state=sleeping".into(),
            Some(&viewer),
            None,
            vec![],
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/contacts/c1/retry-now".into(),
            Some(&operator),
            Some(Value::String("{not json".into())),
            vec![],
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/contacts/c1/retry-now".into(),
            Some(&operator),
            Some(json!({"job_id": 5})),
            vec![],
            422,
            "unprocessable",
        ),
        (
            "POST",
            "/v1/contacts/c1/retry-later".into(),
            Some(&operator),
            Some(json!({})),
            vec![],
            422,
            "unprocessable",
        ),
        (
            "POST",
            "/v1/contacts/c1/cancel-future-jobs".into(),
            Some(&operator),
            None,
            vec![],
            422,
            "unprocessable",
        ),
        (
            "GET",
            "/v1/commands/00000000-0000-0000-0000-000000000001?wait=forever".into(),
            Some(&viewer),
            None,
            vec![],
            400,
            "bad_request",
        ),
    ];
    for (method, uri, token, body, headers, status, code) in cases {
        let (got, value) = call(&env, method, &uri, token, body, &headers).await?;
        assert_eq!(got.as_u16(), status, "{method} {uri}: {value}");
        assert_eq!(value["code"], code, "{method} {uri}: {value}");
        assert!(value["detail"].is_string(), "{method} {uri}: {value}");
    }
    // Each tenant sees its own jobs only.
    let (_, a) = call(&env, "GET", "/v1/jobs", Some(&viewer), None, &[]).await?;
    let (_, b) = call(&env, "GET", "/v1/jobs", Some(&other), None, &[]).await?;
    assert_eq!(a["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(a["items"][0]["job_id"], job_a.to_string());
    assert_eq!(b["items"].as_array().map(Vec::len), Some(1));
    assert_ne!(b["items"][0]["job_id"], job_a.to_string());
    let (status, detail) = call(
        &env,
        "GET",
        &job_uri,
        Some(&viewer),
        None,
        &[("x-tenant-id", "ta")],
    )
    .await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(detail["lineage"].as_array().map(Vec::len), Some(1));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_put_commands_on_kafka_and_show_in_the_commands_view() -> Result<()> {
    let env = setup().await?;
    let job = Uuid::new_v4();
    seed(&env, &[plan("ta", "c1", job)], "ta", 1).await?;
    let operator = create_token(&env.views.db.pool, "ta", Role::Operator, "op@a")
        .await?
        .token;
    let admin = create_token(&env.views.db.pool, "ta", Role::Admin, "admin@a")
        .await?
        .token;

    let (status, accepted) = call(
        &env,
        "POST",
        "/v1/contacts/c1/retry-now",
        Some(&operator),
        Some(json!({"job_id": job, "reason": "lead asked"})),
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    let command_id: Uuid = accepted["command_id"]
        .as_str()
        .context("command id")?
        .parse()?;
    assert_eq!(accepted["status"], "pending");

    // The command is on contact-commands, keyed by contact, as the schema defines it.
    let consumer =
        callstream_e2e::read_committed_consumer(&callstream_e2e::unique_name("api-check"))?;
    consumer.subscribe(&[&env.views.topics.name(t::CONTACT_COMMANDS)])?;
    let msg = tokio::time::timeout(Duration::from_secs(30), consumer.recv()).await??;
    assert_eq!(msg.key(), Some(&b"c1"[..]));
    let Ok(AnyEvent::ContactCommand(cmd)) = decode_any(msg.payload().unwrap_or_default()) else {
        anyhow::bail!("not a contact command");
    };
    assert_eq!(cmd.event_id, command_id);
    assert_eq!(cmd.kind, ContactCommandKind::RetryNow);
    assert_eq!(
        (cmd.job_id, cmd.campaign_id.as_deref()),
        (Some(job), Some("camp"))
    );
    assert_eq!(cmd.actor.id, "op@a");

    // Pending until a processor reports on it; then applied.
    let (_, pending) = call(
        &env,
        "GET",
        &format!("/v1/commands/{command_id}"),
        Some(&operator),
        None,
        &[],
    )
    .await?;
    assert_eq!(pending["status"], "pending");
    let processed: AnyEvent = callstream_schemas::AuditEvent {
        causation_id: Some(command_id),
        contact_id: Some("c1".into()),
        command_id: Some(command_id),
        reason: Some("contact finished".into()),
        ..fixtures::audit(
            "ta",
            callstream_schemas::Actor::system("contact"),
            "command.retry_now",
            ("contact", "c1"),
            callstream_schemas::AuditResult::Rejected,
            Utc::now(),
        )
    }
    .into();
    seed(&env, &[processed], "ta", 1).await?;
    let (_, done) = call(
        &env,
        "GET",
        &format!("/v1/commands/{command_id}?wait=10s"),
        Some(&operator),
        None,
        &[],
    )
    .await?;
    assert_eq!(
        (done["status"].as_str(), done["reason"].as_str()),
        (Some("rejected"), Some("contact finished"))
    );
    // The audit view has the operator's request with its actor.
    let actor: String = sqlx::query_scalar("SELECT actor_id FROM audit WHERE tenant_id = 'ta' AND command_id = $1 AND result = 'requested'")
        .bind(command_id).fetch_one(&env.views.db.pool).await?;
    assert_eq!(actor, "op@a");

    // A control change is applied once it is on the log; ?wait sees it.
    let (status, body) = call(
        &env,
        "POST",
        "/v1/control/system-pause?wait=10s",
        Some(&admin),
        Some(json!({"enabled": true, "reason": "incident"})),
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["status"], "applied", "{body}");
    // On the history topic too (committed with the change on `control`), so the audit
    // trail outlives compaction.
    for logical in [t::CONTROL, t::CONTROL_HISTORY] {
        let topic = env.views.topics.name(logical);
        let reader = callstream_e2e::runtime::reader(&topic, env.views.topics.partitions)?;
        let message = tokio::time::timeout(Duration::from_secs(20), reader.recv())
            .await
            .with_context(|| format!("nothing on {topic}"))??;
        let event = decode_any(message.payload().unwrap_or_default())?;
        let AnyEvent::ControlChange(change) = event else {
            anyhow::bail!("not a control change on {topic}");
        };
        assert_eq!(change.reason.as_deref(), Some("incident"), "{topic}");
        assert_eq!(change.actor.id, "admin@a", "{topic}");
    }
    let (_, settings) = call(&env, "GET", "/v1/control", Some(&operator), None, &[]).await?;
    assert_eq!(settings[0]["setting"], "system_pause");
    assert_eq!(settings[0]["enabled"], true);

    // The audit log says who paused, when and why; newest first, a page at a time.
    let (status, log) = call(
        &env,
        "GET",
        "/v1/audit?action=control.system_pause",
        Some(&operator),
        None,
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{log}");
    let pause = log["items"]
        .as_array()
        .and_then(|items| items.iter().find(|e| e["actor_id"] == "admin@a"))
        .with_context(|| format!("no pause by admin@a in {log}"))?;
    assert_eq!(pause["reason"], "incident", "{pause}");
    assert!(pause["occurred_at"].is_string(), "{pause}");
    let (_, first) = call(&env, "GET", "/v1/audit?limit=1", Some(&operator), None, &[]).await?;
    let cursor = first["next_cursor"].as_str().context("a second page")?;
    let (_, second) = call(
        &env,
        "GET",
        &format!("/v1/audit?limit=1&cursor={cursor}"),
        Some(&operator),
        None,
        &[],
    )
    .await?;
    let time = |page: &Value| page["items"][0]["occurred_at"].as_str().map(str::to_owned);
    assert!(
        time(&second) <= time(&first),
        "newest first: {first} then {second}"
    );
    assert_ne!(
        first["items"][0]["event_id"],
        second["items"][0]["event_id"]
    );
    // Viewers do not read who did what; another tenant sees none of it; a bad filter is 400.
    let viewer = create_token(&env.views.db.pool, "ta", Role::Viewer, "view@a")
        .await?
        .token;
    let (status, _) = call(&env, "GET", "/v1/audit", Some(&viewer), None, &[]).await?;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let other = create_token(&env.views.db.pool, "tb", Role::Admin, "admin@b")
        .await?
        .token;
    let (status, theirs) = call(&env, "GET", "/v1/audit", Some(&other), None, &[]).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(theirs["items"], json!([]), "{theirs}");
    let (status, refused) = call(
        &env,
        "GET",
        "/v1/audit?action=a%2Fb",
        Some(&operator),
        None,
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    Ok(())
}

/// method, uri, body, expected status, code and refused field.
type Refusal<'a> = (
    &'a str,
    &'a str,
    Option<Value>,
    u16,
    &'a str,
    Option<&'a str>,
);

/// Records on `topic` (every partition's high watermark, summed).
fn records_on(topic: &str) -> Result<i64> {
    let consumer = callstream_e2e::read_committed_consumer(&callstream_e2e::unique_name("count"))?;
    let metadata = consumer.fetch_metadata(Some(topic), Duration::from_secs(10))?;
    let mut total = 0;
    for t in metadata.topics() {
        for p in t.partitions() {
            let (low, high) = consumer.fetch_watermarks(topic, p.id(), Duration::from_secs(10))?;
            total += high - low;
        }
    }
    Ok(total)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_input_the_views_cannot_store_is_refused_naming_the_field_and_nothing_reaches_kafka(
) -> Result<()> {
    let env = setup().await?;
    let job = Uuid::new_v4();
    seed(&env, &[plan("ta", "c1", job)], "ta", 1).await?;
    let admin = create_token(&env.views.db.pool, "ta", Role::Admin, "admin@a")
        .await?
        .token;
    let long = "é".repeat(501);
    let cases: Vec<Refusal> = vec![
        (
            "POST",
            "/v1/contacts/c1/force-finish",
            Some(json!({"reason": "done\u{0}"})),
            422,
            "unprocessable",
            Some("reason"),
        ),
        (
            "POST",
            "/v1/contacts/c1/force-finish",
            Some(json!({"reason": "\u{1b}[2J"})),
            422,
            "unprocessable",
            Some("reason"),
        ),
        (
            "POST",
            "/v1/contacts/c1/cancel-future-jobs",
            Some(json!({"reason": long})),
            422,
            "unprocessable",
            Some("reason"),
        ),
        (
            "POST",
            "/v1/control/system-pause",
            Some(json!({"enabled": true, "reason": "a\u{0}b"})),
            422,
            "unprocessable",
            Some("reason"),
        ),
        (
            "POST",
            "/v1/contacts/c1/retry-now",
            Some(json!({"campaign_id": "spring 2027"})),
            422,
            "unprocessable",
            Some("campaign_id"),
        ),
        (
            "POST",
            "/v1/contacts/c1/retry-now",
            Some(json!({"campaign_id": "a\u{0}"})),
            422,
            "unprocessable",
            Some("campaign_id"),
        ),
        (
            "POST",
            "/v1/control/campaigns/a%00b/pause",
            Some(json!({"enabled": true})),
            400,
            "bad_request",
            Some("campaign_id"),
        ),
        (
            "POST",
            "/v1/control/campaigns/..%2Fx/pause",
            Some(json!({"enabled": true})),
            400,
            "bad_request",
            Some("campaign_id"),
        ),
        (
            "POST",
            "/v1/control/campaigns/a%20b/pause",
            Some(json!({"enabled": true})),
            400,
            "bad_request",
            Some("campaign_id"),
        ),
        (
            "POST",
            "/v1/contacts/c%001/force-finish",
            None,
            400,
            "bad_request",
            Some("contact_id"),
        ),
        (
            "POST",
            "/v1/contacts/a%2F..%2Fb/retry-now",
            None,
            400,
            "bad_request",
            Some("contact_id"),
        ),
        (
            "GET",
            "/v1/jobs?contact_id=a%00b",
            None,
            400,
            "bad_request",
            Some("contact_id"),
        ),
        (
            "GET",
            "/v1/jobs?campaign_id=%01",
            None,
            400,
            "bad_request",
            Some("campaign_id"),
        ),
        (
            "GET",
            "/v1/contacts/c%001/timeline",
            None,
            400,
            "bad_request",
            Some("contact_id"),
        ),
        ("GET", "/v1/jobs?limit=%00", None, 400, "bad_request", None),
        ("GET", "/v1/jobs?cursor=%00", None, 400, "bad_request", None),
        ("GET", "/v1/jobs?from=%00", None, 400, "bad_request", None),
        ("DELETE", "/v1/jobs", None, 405, "method_not_allowed", None),
        (
            "PUT",
            "/v1/control/system-pause",
            None,
            405,
            "method_not_allowed",
            None,
        ),
    ];
    for (method, uri, body, status, code, field) in cases {
        let (got, value) = call(&env, method, uri, Some(&admin), body, &[]).await?;
        assert_eq!(
            (
                got.as_u16(),
                value["code"].as_str(),
                value["field"].as_str()
            ),
            (status, Some(code), field),
            "{method} {uri}: {value}"
        );
        assert_eq!(
            value["status"], status,
            "{method} {uri}: the problem repeats the status"
        );
        assert_eq!(value["type"], "about:blank", "{method} {uri}");
        if let Some(field) = field {
            let detail = value["detail"].as_str().unwrap_or_default();
            assert!(detail.contains(field), "{method} {uri}: {detail}");
        }
    }
    for topic in [t::CONTACT_COMMANDS, t::CONTROL] {
        let name = env.views.topics.name(topic);
        assert_eq!(records_on(&name)?, 0, "nothing reached {name}");
    }
    // The longest reason of every allowed character class is taken whole.
    let reason = format!("tab\tline\r\nünïcödé ✓ 🎉 {}", "x".repeat(470));
    let (got, value) = call(
        &env,
        "POST",
        "/v1/control/system-pause",
        Some(&admin),
        Some(json!({"enabled": true, "reason": reason})),
        &[],
    )
    .await?;
    assert_eq!(got, StatusCode::ACCEPTED, "{value}");
    Ok(())
}

/// What needs a person (`/v1/summary`), held and upcoming jobs, and exceptions by type: each
/// counted and filtered within the token's tenant only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_held_jobs_and_exception_types() -> Result<()> {
    use callstream_schemas::{Actor, ExceptionStatus, ExceptionType, LaunchStatus};
    let env = setup().await?;
    let now = Utc::now();
    let (held_job, planned_job, done_job) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let mut held = fixtures::call_launch(
        "ts",
        "c-held",
        "camp",
        Uuid::new_v4(),
        held_job,
        LaunchStatus::Held,
        now,
    );
    held.reason = Some("campaign_paused".into());
    let failed = fixtures::call_launch(
        "ts",
        "c-done",
        "camp",
        Uuid::new_v4(),
        done_job,
        LaunchStatus::Failed,
        now,
    );
    let exception = |contact: &str, kind, status| -> AnyEvent {
        fixtures::exception(
            "ts",
            contact,
            Uuid::new_v4(),
            status,
            kind,
            Actor::system("scheduler"),
            now,
        )
        .into()
    };
    let events = vec![
        plan("ts", "c-held", held_job),
        plan("ts", "c-planned", planned_job),
        plan("ts", "c-done", done_job),
        held.into(),
        failed.into(),
        exception("c-1", ExceptionType::NoSlot, ExceptionStatus::Open),
        exception("c-2", ExceptionType::NoSlot, ExceptionStatus::Open),
        exception("c-3", ExceptionType::LaunchFailed, ExceptionStatus::Open),
        exception(
            "c-4",
            ExceptionType::LaunchFailed,
            ExceptionStatus::Resolved,
        ),
        // Another tenant's, counted nowhere here.
        fixtures::exception(
            "tz",
            "c-z",
            Uuid::new_v4(),
            ExceptionStatus::Open,
            ExceptionType::NoSlot,
            Actor::system("scheduler"),
            now,
        )
        .into(),
        plan("tz", "c-z", Uuid::new_v4()),
    ];
    seed(&env, &events, "ts", 3).await?;
    let viewer = create_token(&env.views.db.pool, "ts", Role::Viewer, "viewer@s")
        .await?
        .token;
    // The views settle: the held launch and the four exceptions (the resolved one too: it
    // is on a partition of its own and may be applied after the three open ones).
    let mut summary = Value::Null;
    for _ in 0..200 {
        summary = call(&env, "GET", "/v1/summary", Some(&viewer), None, &[])
            .await?
            .1;
        let exceptions: i64 = summary["open_exceptions"].as_array().map_or(0, |a| {
            a.iter().map(|c| c["count"].as_i64().unwrap_or(0)).sum()
        });
        let all_exceptions: i64 =
            sqlx::query_scalar("SELECT count(*) FROM exceptions WHERE tenant_id = 'ts'")
                .fetch_one(&env.views.db.pool)
                .await?;
        if exceptions == 3
            && all_exceptions == 4
            && summary["held_calls"]
                .as_array()
                .is_some_and(|h| !h.is_empty())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        summary,
        json!({
            "open_exceptions": [{"key": "no_slot", "count": 2}, {"key": "launch_failed", "count": 1}],
            "missing_completions": 0,
            "held_calls": [{"key": "campaign_paused", "count": 1}],
            "dead_letters": 0,
        })
    );
    let contacts = |page: &Value| -> Vec<String> {
        page["items"].as_array().map_or(Vec::new(), |items| {
            items
                .iter()
                .map(|i| i["contact_id"].as_str().unwrap_or_default().to_string())
                .collect()
        })
    };
    let (status, held_page) =
        call(&env, "GET", "/v1/jobs?state=held", Some(&viewer), None, &[]).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(contacts(&held_page), ["c-held"]);
    assert_eq!(held_page["items"][0]["reason"], "campaign_paused");
    // Upcoming: the held and the planned call, not the one that failed.
    let (_, active) = call(
        &env,
        "GET",
        "/v1/jobs?active=true",
        Some(&viewer),
        None,
        &[],
    )
    .await?;
    let mut upcoming = contacts(&active);
    upcoming.sort();
    assert_eq!(upcoming, ["c-held", "c-planned"]);
    let (_, launch_failed) = call(
        &env,
        "GET",
        "/v1/exceptions?exception_type=launch_failed&status=all",
        Some(&viewer),
        None,
        &[],
    )
    .await?;
    let mut failed_contacts = contacts(&launch_failed);
    failed_contacts.sort();
    assert_eq!(failed_contacts, ["c-3", "c-4"]);
    let (status, _) = call(
        &env,
        "GET",
        "/v1/exceptions?exception_type=a%2Fb",
        Some(&viewer),
        None,
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(&env, "GET", "/v1/summary", None, None, &[]).await?;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Assign an open exception: applied at once, and the list shows the assignee; a viewer
    // may not; a closed one is refused.
    let operator = create_token(&env.views.db.pool, "ts", Role::Operator, "op@s")
        .await?
        .token;
    let open_id = launch_failed["items"]
        .as_array()
        .and_then(|items| items.iter().find(|e| e["status"] == "open"))
        .map(|e| e["exception_id"].as_str().unwrap_or_default().to_string())
        .context("an open launch_failed exception")?;
    let closed_id = launch_failed["items"]
        .as_array()
        .and_then(|items| items.iter().find(|e| e["status"] == "resolved"))
        .map(|e| e["exception_id"].as_str().unwrap_or_default().to_string())
        .context("a resolved launch_failed exception")?;
    let assign = |id: &str| format!("/v1/exceptions/{id}/assign?wait=10s");
    let body = json!({"assignee": "dana@admissions", "reason": "she knows this lead"});
    let (status, answer) = call(
        &env,
        "POST",
        &assign(&open_id),
        Some(&operator),
        Some(body.clone()),
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer["status"], "applied", "{answer}");
    let (status, _) = call(
        &env,
        "POST",
        &assign(&open_id),
        Some(&viewer),
        Some(body.clone()),
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &env,
        "POST",
        &assign(&closed_id),
        Some(&operator),
        Some(body),
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::CONFLICT);
    let (_, open_now) = call(
        &env,
        "GET",
        "/v1/exceptions?exception_type=launch_failed",
        Some(&viewer),
        None,
        &[],
    )
    .await?;
    assert_eq!(
        open_now["items"][0]["assignee"], "dana@admissions",
        "{open_now}"
    );
    let (_, log) = call(
        &env,
        "GET",
        "/v1/audit?action=exception.assign",
        Some(&operator),
        None,
        &[],
    )
    .await?;
    assert_eq!(log["items"][0]["actor_id"], "op@s", "{log}");
    assert_eq!(log["items"][0]["reason"], "she knows this lead", "{log}");
    Ok(())
}

/// A dead letter as the runtime parks it: the failed record's key and value, and why.
async fn park(env: &Env, value: &[u8], kind: &str, source: &str) -> Result<()> {
    let topic = env.views.topics.name(t::DEAD_LETTERS);
    let traceparent = [(
        "traceparent",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    )];
    let why = ("contact", kind, source, "contact processor: refused");
    callstream_e2e::park_dead_letter(
        &callstream_e2e::producer()?,
        &topic,
        "c-dead",
        value,
        why,
        &traceparent,
    )
    .await?;
    Ok(())
}

/// Dead letters: listed with why, counted in the summary, replayed by an operator to the
/// topic they came from (with who and why on the audit trail), and never another tenant's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_listed_and_replayed_to_where_they_came_from() -> Result<()> {
    let env = setup().await?;
    let command = fixtures::contact_command(
        "td",
        "c-dead",
        ContactCommandKind::RetryNow,
        callstream_schemas::Actor::operator("op@d"),
        Utc::now(),
    );
    let source = format!("{}/0/7", env.views.topics.name(t::CONTACT_COMMANDS));
    park(
        &env,
        &AnyEvent::from(command.clone()).encode()?,
        "record",
        &source,
    )
    .await?;
    let mut timer_command = command.clone();
    timer_command.event_id = Uuid::new_v4();
    park(
        &env,
        &AnyEvent::from(timer_command).encode()?,
        "timer",
        "timer/0/wall-clock/recheck",
    )
    .await?;
    let viewer = create_token(&env.views.db.pool, "td", Role::Viewer, "viewer@d")
        .await?
        .token;
    let operator = create_token(&env.views.db.pool, "td", Role::Operator, "op@d")
        .await?
        .token;
    let other = create_token(&env.views.db.pool, "tz", Role::Admin, "admin@z")
        .await?
        .token;
    let mut letters = Value::Null;
    for _ in 0..200 {
        letters = call(&env, "GET", "/v1/dead-letters", Some(&viewer), None, &[])
            .await?
            .1;
        if letters["items"].as_array().is_some_and(|i| i.len() == 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let items = letters["items"].as_array().context("two letters")?;
    let record = items
        .iter()
        .find(|l| l["kind"] == "record")
        .context("the record's letter")?;
    let timer = items
        .iter()
        .find(|l| l["kind"] == "timer")
        .context("the timer's letter")?;
    assert_eq!(record["reason"], "contact processor: refused");
    assert_eq!(record["event_type"], "ContactCommand");
    assert_eq!(record["contact_id"], "c-dead");
    assert_eq!(record["replayable"], true);
    assert_eq!(timer["replayable"], false);
    let (_, summary) = call(&env, "GET", "/v1/summary", Some(&viewer), None, &[]).await?;
    assert_eq!(summary["dead_letters"], 2);
    let (_, theirs) = call(&env, "GET", "/v1/dead-letters", Some(&other), None, &[]).await?;
    assert_eq!(theirs["items"], json!([]));

    let replay = |id: &Value| {
        format!(
            "/v1/dead-letters/{}/replay?wait=10s",
            id.as_str().unwrap_or_default()
        )
    };
    let why = json!({"reason": "fixed the campaign settings"});
    let (status, _) = call(
        &env,
        "POST",
        &replay(&record["letter_id"]),
        Some(&viewer),
        Some(why.clone()),
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &env,
        "POST",
        &replay(&record["letter_id"]),
        Some(&other),
        Some(why.clone()),
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = call(
        &env,
        "POST",
        &replay(&timer["letter_id"]),
        Some(&operator),
        Some(why.clone()),
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = call(
        &env,
        "POST",
        &replay(&record["letter_id"]),
        Some(&operator),
        Some(why),
        &[],
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["status"], "applied", "{body}");

    // The record is on the topic it came from, as it was, saying where it came from.
    let topic = env.views.topics.name(t::CONTACT_COMMANDS);
    let reader = callstream_e2e::runtime::reader(&topic, env.views.topics.partitions)?;
    let message = tokio::time::timeout(Duration::from_secs(20), reader.recv())
        .await
        .context("nothing replayed")??;
    let AnyEvent::ContactCommand(again) = decode_any(message.payload().unwrap_or_default())? else {
        anyhow::bail!("not the contact command");
    };
    assert_eq!(again.event_id, command.event_id);
    use rdkafka::message::Headers as _;
    let from = message
        .headers()
        .and_then(|h| h.iter().find(|x| x.key == "replayed-from"))
        .and_then(|x| x.value)
        .map(|v| String::from_utf8_lossy(v).into_owned());
    assert_eq!(from.as_deref(), record["letter_id"].as_str());
    let (_, after) = call(&env, "GET", "/v1/dead-letters", Some(&viewer), None, &[]).await?;
    let replayed = after["items"]
        .as_array()
        .and_then(|i| i.iter().find(|l| l["kind"] == "record"))
        .context("the record's letter")?;
    assert_eq!(replayed["replayed_by"], "op@d", "{replayed}");
    let (_, summary) = call(&env, "GET", "/v1/summary", Some(&viewer), None, &[]).await?;
    assert_eq!(summary["dead_letters"], 1, "the timer's is left");
    let (_, log) = call(
        &env,
        "GET",
        "/v1/audit?action=dead_letter.replay",
        Some(&operator),
        None,
        &[],
    )
    .await?;
    assert_eq!(
        log["items"][0]["reason"], "fixed the campaign settings",
        "{log}"
    );
    // The replay resolved the letter's dead_letter exception (its id is the letter's), by
    // the operator, in the same transaction.
    let mut resolved = Value::Null;
    for _ in 0..200 {
        let (_, page) = call(
            &env,
            "GET",
            "/v1/exceptions?status=all&exception_type=dead_letter",
            Some(&viewer),
            None,
            &[],
        )
        .await?;
        if let Some(e) = page["items"]
            .as_array()
            .and_then(|i| i.iter().find(|e| e["exception_id"] == record["letter_id"]))
        {
            resolved = e.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(resolved["status"], "resolved", "{resolved}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_is_3_1_and_covers_every_route() -> Result<()> {
    let env = setup().await?;
    let (status, doc) = call(&env, "GET", "/openapi.json", None, None, &[]).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "{}",
        doc["openapi"]
    );
    let routes = [
        ("get", "/v1/jobs"),
        ("get", "/v1/jobs/{job_id}"),
        ("get", "/v1/exceptions"),
        ("post", "/v1/exceptions/{exception_id}/ignore"),
        ("post", "/v1/exceptions/{exception_id}/assign"),
        ("post", "/v1/exceptions/{exception_id}/retry"),
        ("get", "/v1/slots"),
        ("get", "/v1/launches/missing"),
        ("post", "/v1/launches/{launch_id}/recover"),
        ("post", "/v1/launches/{launch_id}/advance"),
        ("get", "/v1/delivery"),
        ("get", "/v1/contacts/{contact_id}/timeline"),
        ("post", "/v1/contacts/{contact_id}/retry-now"),
        ("post", "/v1/contacts/{contact_id}/retry-later"),
        ("post", "/v1/contacts/{contact_id}/cancel-future-jobs"),
        ("post", "/v1/contacts/{contact_id}/force-finish"),
        ("get", "/v1/control"),
        ("post", "/v1/control/system-pause"),
        ("post", "/v1/control/campaigns/{campaign_id}/pause"),
        ("post", "/v1/control/shadow-mode"),
        ("post", "/v1/control/crm-writes"),
        ("get", "/v1/audit"),
        ("get", "/v1/summary"),
        ("get", "/v1/dead-letters"),
        ("post", "/v1/dead-letters/{letter_id}/replay"),
        ("get", "/v1/commands/{command_id}"),
        ("get", "/healthz"),
        ("get", "/readyz"),
    ];
    for (method, path) in routes {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} missing from /openapi.json"
        );
        // Every route is behind the address budget: 429 with Retry-After is documented.
        let too_many = &doc["paths"][path][method]["responses"]["429"];
        assert!(
            too_many["headers"]["Retry-After"].is_object(),
            "{method} {path} does not document 429 with Retry-After"
        );
    }
    for path in ["/v1/delivery", "/v1/slots"] {
        assert!(
            doc["paths"][path]["get"]["responses"]["400"].is_object(),
            "{path} does not document 400 (a range too long)"
        );
    }
    let documented: usize = doc["paths"].as_object().map_or(0, |p| {
        p.values()
            .map(|m| m.as_object().map_or(0, |m| m.len()))
            .sum()
    });
    assert_eq!(
        documented,
        routes.len(),
        "a documented route is not in this list"
    );
    Ok(())
}

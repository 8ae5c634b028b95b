//! The operator API's brakes and token rules against a fresh Postgres database of the dev
//! stack (and its broker, for the control change): request budgets per token and per peer
//! address (429 `rate_limited` with `Retry-After`), the cap on waiting requests, bounded
//! date ranges (400), expired and revoked tokens (401), no token for every tenant, and the
//! actor of a control change being the token's holder.
//!
//! Budgets here are a few requests a minute, so a slow machine cannot refill one between
//! two requests of a test.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use callstream_e2e::postgres::TestDatabase;
use callstream_operator_api::{
    app, create_token, create_token_expiring, hash_token, revoke_token, state, CreateTokenError,
    OperatorApiConfig, RateLimit, Role,
};
use callstream_platform::{admin, topics as t, KafkaSettings, TopicKind, Topics};
use callstream_schemas::{decode_any, ActorKind, AnyEvent};
use chrono::Utc;
use http_body_util::BodyExt;
use rdkafka::consumer::Consumer;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;
use uuid::Uuid;

/// No budget and generous waits: each test turns on the one it is about.
const OFF: RateLimit = RateLimit {
    per_minute: 0,
    burst: 0,
};

struct Env {
    db: TestDatabase,
    config: OperatorApiConfig,
    router: axum::Router,
}

async fn setup(tune: impl FnOnce(&mut OperatorApiConfig)) -> Result<Env> {
    let db = TestDatabase::create("callstream_test_limits").await?;
    callstream_projections::migrate(&db.pool).await?;
    let topics = Topics::with_prefix(format!("{}-", callstream_e2e::unique_name("limits")));
    let kafka = KafkaSettings::new(callstream_e2e::bootstrap_servers(), "limits-test");
    let mut config = OperatorApiConfig::new(db.url.clone(), kafka, topics);
    config.per_token = OFF;
    config.per_address = OFF;
    tune(&mut config);
    let router = app(state(&config)?);
    Ok(Env { db, config, router })
}

/// The answer's status, `Retry-After` and JSON body.
async fn call(
    env: &Env,
    method: &str,
    uri: &str,
    token: Option<&str>,
    peer: Option<SocketAddr>,
    body: Option<Value>,
) -> Result<(StatusCode, Option<String>, Value)> {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let mut req = req.body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))?;
    if let Some(peer) = peer {
        // What `serve` puts on every request it accepts.
        req.extensions_mut().insert(ConnectInfo(peer));
    }
    let resp = env.router.clone().oneshot(req).await?;
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = resp.into_body().collect().await?.to_bytes();
    Ok((
        status,
        retry_after,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// Asserts a 429 `rate_limited` with a whole, positive `Retry-After`.
fn assert_rate_limited(answer: &(StatusCode, Option<String>, Value)) {
    let (status, retry_after, body) = answer;
    assert_eq!(*status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["code"], "rate_limited", "{body}");
    let secs: u64 = retry_after
        .as_deref()
        .and_then(|s| s.parse().ok())
        .unwrap_or_default();
    assert!(secs >= 1, "Retry-After {retry_after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_over_its_budget_is_429_with_retry_after_and_another_token_is_not_slowed(
) -> Result<()> {
    let env = setup(|c| {
        c.per_token = RateLimit {
            per_minute: 1,
            burst: 3,
        }
    })
    .await?;
    let a = create_token(&env.db.pool, "ta", Role::Viewer, "a")
        .await?
        .token;
    let b = create_token(&env.db.pool, "ta", Role::Viewer, "b")
        .await?
        .token;
    for i in 0..3 {
        let (status, _, body) = call(&env, "GET", "/v1/control", Some(&a), None, None).await?;
        assert_eq!(status, StatusCode::OK, "request {i}: {body}");
    }
    let fourth = call(&env, "GET", "/v1/control", Some(&a), None, None).await?;
    assert_rate_limited(&fourth);
    let (status, _, body) = call(&env, "GET", "/v1/control", Some(&b), None, None).await?;
    assert_eq!(status, StatusCode::OK, "another token: {body}");
    // An unknown token has no budget to spend: it is simply 401.
    let (status, _, _) = call(&env, "GET", "/v1/control", Some("cs_nope"), None, None).await?;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_over_its_budget_is_429_and_another_address_is_not_slowed() -> Result<()> {
    let env = setup(|c| {
        c.per_address = RateLimit {
            per_minute: 1,
            burst: 3,
        }
    })
    .await?;
    let token = create_token(&env.db.pool, "ta", Role::Viewer, "a")
        .await?
        .token;
    let one: SocketAddr = "10.0.0.1:40000".parse()?;
    let two: SocketAddr = "10.0.0.2:40000".parse()?;
    for i in 0..3 {
        // Another port of the same host is the same address.
        let peer = SocketAddr::new(one.ip(), 40000 + i);
        let (status, _, body) =
            call(&env, "GET", "/v1/control", Some(&token), Some(peer), None).await?;
        assert_eq!(status, StatusCode::OK, "request {i}: {body}");
    }
    // The address budget comes first: even an unauthenticated probe is refused.
    assert_rate_limited(&call(&env, "GET", "/v1/control", Some(&token), Some(one), None).await?);
    assert_rate_limited(&call(&env, "GET", "/healthz", None, Some(one), None).await?);
    let (status, _, _) = call(&env, "GET", "/v1/control", Some(&token), Some(two), None).await?;
    assert_eq!(status, StatusCode::OK);
    // Without a peer address (a router called directly) there is no address budget.
    let (status, _, _) = call(&env, "GET", "/v1/control", Some(&token), None, None).await?;
    assert_eq!(status, StatusCode::OK);
    Ok(())
}

/// `GET /healthz` over a real socket: the status code of the answer.
async fn healthz_over_tcp(addr: SocketAddr) -> Result<u16> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: api\r\nConnection: close\r\n\r\n")
        .await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("no status line in {text:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_api_limits_by_the_peer_address_of_the_socket() -> Result<()> {
    let env = setup(|c| {
        c.per_address = RateLimit {
            per_minute: 1,
            burst: 2,
        }
    })
    .await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(callstream_operator_api::serve(
        listener,
        state(&env.config)?,
        async {
            let _ = stopped.await;
        },
    ));
    let mut codes = Vec::new();
    for _ in 0..3 {
        codes.push(healthz_over_tcp(addr).await?);
    }
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), server).await???;
    assert_eq!(codes, [200, 200, 429]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_past_the_cap_is_answered_at_once_with_429_and_no_wait_is_never_refused(
) -> Result<()> {
    let env = setup(|c| {
        c.max_waiting = 1;
        c.max_wait = Duration::from_secs(120);
    })
    .await?;
    let token = create_token(&env.db.pool, "ta", Role::Admin, "a")
        .await?
        .token;
    // An unknown command waits its whole wait: it holds the one slot. Which of two
    // requests takes the slot first is a race on a loaded machine, so the holder is sent
    // again until it is the one waiting (a holder refused ends at once) when the probe
    // comes.
    let unknown = format!("/v1/commands/{}", Uuid::new_v4());
    let spawn_holder = || {
        let (router, uri, token) = (
            env.router.clone(),
            format!("{unknown}?wait=120s"),
            token.clone(),
        );
        tokio::spawn(async move {
            let req = Request::get(uri)
                .header("authorization", format!("Bearer {token}"))
                .body(Body::empty())?;
            anyhow::Ok(router.oneshot(req).await?.status())
        })
    };
    let mut refused = None;
    let mut holder = None;
    for _ in 0..30 {
        let candidate = spawn_holder();
        tokio::time::sleep(Duration::from_millis(500)).await;
        if candidate.is_finished() {
            continue;
        }
        let answer = call(
            &env,
            "GET",
            &format!("{unknown}?wait=1s"),
            Some(&token),
            None,
            None,
        )
        .await?;
        if answer.0 == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(answer);
            holder = Some(candidate);
            break;
        }
        // The probe took the slot first (the holder had not reached it yet): again.
        candidate.abort();
        let _ = candidate.await;
    }
    let holder = holder.context("the holder never kept the slot")?;
    let refused = refused.context("no waiting request was refused while the slot was held")?;
    assert_rate_limited(&refused);
    // An action that asks to wait is refused too, before it is sent.
    let action = call(
        &env,
        "POST",
        "/v1/control/system-pause?wait=5s",
        Some(&token),
        None,
        Some(json!({"enabled": true})),
    )
    .await?;
    assert_rate_limited(&action);
    // Without a wait (or with a zero one) nothing is refused.
    let (status, _, _) = call(&env, "GET", &unknown, Some(&token), None, None).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = call(
        &env,
        "GET",
        &format!("{unknown}?wait=0s"),
        Some(&token),
        None,
        None,
    )
    .await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The slot frees when the holder ends.
    holder.abort();
    let _ = holder.await;
    let (status, _, _) = call(
        &env,
        "GET",
        &format!("{unknown}?wait=1s"),
        Some(&token),
        None,
        None,
    )
    .await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn date_ranges_past_their_bound_are_400_naming_from_and_to() -> Result<()> {
    let env = setup(|_| {}).await?;
    let token = create_token(&env.db.pool, "ta", Role::Viewer, "a")
        .await?
        .token;
    let from = Utc::now() - chrono::Duration::days(40);
    let at = |days: i64| {
        (from + chrono::Duration::days(days)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    let start = at(0);
    // route, days asked, expected status.
    let cases = [
        ("/v1/delivery", 31, 200),
        ("/v1/delivery", 32, 400),
        ("/v1/slots", 7, 200),
        ("/v1/slots", 8, 400),
        // An inverted range is empty, not refused.
        ("/v1/delivery", -400, 200),
    ];
    for (route, days, expected) in cases {
        let uri = format!("{route}?from={start}&to={}", at(days));
        let (status, _, body) = call(&env, "GET", &uri, Some(&token), None, None).await?;
        assert_eq!(status.as_u16(), expected, "{uri}: {body}");
        if expected == 400 {
            assert_eq!(body["code"], "bad_request", "{body}");
            let message = body["detail"].as_str().unwrap_or_default();
            assert!(
                message.contains("from") && message.contains("to"),
                "{message}"
            );
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_401_like_an_unknown_one() -> Result<()> {
    let env = setup(|_| {}).await?;
    let in_an_hour = Utc::now() + chrono::Duration::hours(1);
    let created =
        create_token_expiring(&env.db.pool, "ta", Role::Viewer, "a", Some(in_an_hour)).await?;
    let (status, _, _) = call(&env, "GET", "/v1/control", Some(&created.token), None, None).await?;
    assert_eq!(status, StatusCode::OK, "before its expiry");
    // Its hour passes.
    sqlx::query(
        "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE token_id = $1",
    )
    .bind(created.token_id)
    .execute(&env.db.pool)
    .await?;
    let expired = call(&env, "GET", "/v1/control", Some(&created.token), None, None).await?;
    let unknown = call(&env, "GET", "/v1/control", Some("cs_unknown"), None, None).await?;
    assert_eq!(expired.0, StatusCode::UNAUTHORIZED);
    assert_eq!((expired.0, &expired.2), (unknown.0, &unknown.2));
    // A token already expired when made is not made.
    let past = Utc::now() - chrono::Duration::minutes(1);
    let refused = create_token_expiring(&env.db.pool, "ta", Role::Viewer, "a", Some(past)).await;
    assert!(
        matches!(refused, Err(CreateTokenError::AlreadyExpired(_))),
        "{refused:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_worked_is_401_right_after_it_is_revoked() -> Result<()> {
    let env = setup(|_| {}).await?;
    let created = create_token(&env.db.pool, "ta", Role::Operator, "a").await?;
    let (status, _, _) = call(&env, "GET", "/v1/control", Some(&created.token), None, None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(revoke_token(&env.db.pool, created.token_id).await?);
    let (status, _, body) =
        call(&env, "GET", "/v1/control", Some(&created.token), None, None).await?;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["code"], "unauthenticated");
    // Revoking again says there was no active token.
    assert!(!revoke_token(&env.db.pool, created.token_id).await?);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_acts_for_every_tenant() -> Result<()> {
    let env = setup(|_| {}).await?;
    for tenant in ["*", "", "a/b", "ac*me"] {
        let refused = create_token(&env.db.pool, tenant, Role::Admin, "a").await;
        assert!(
            matches!(refused, Err(CreateTokenError::Tenant(..))),
            "{tenant:?}: {refused:?}"
        );
    }
    // One stored by hand (or before tenants were checked) is refused like an unknown one.
    sqlx::query(
        "INSERT INTO api_tokens (token_id, token_hash, tenant_id, role, subject)
         VALUES ($1, $2, '*', 'admin', 'old')",
    )
    .bind(Uuid::new_v4())
    .bind(hash_token("cs_every_tenant"))
    .execute(&env.db.pool)
    .await?;
    let (status, _, _) = call(
        &env,
        "POST",
        "/v1/control/system-pause",
        Some("cs_every_tenant"),
        None,
        Some(json!({"enabled": true})),
    )
    .await?;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_change_records_the_tokens_holder_and_a_body_cannot_name_another() -> Result<()> {
    let env = setup(|_| {}).await?;
    admin::ensure_topics(
        &env.config.kafka,
        &[
            env.config.topics.spec(t::CONTROL, TopicKind::Table),
            env.config
                .topics
                .spec(t::CONTROL_HISTORY, TopicKind::Events),
        ],
    )
    .await?;
    let token = create_token(&env.db.pool, "ta", Role::Admin, "ann@ops")
        .await?
        .token;
    let (status, _, body) = call(
        &env,
        "POST",
        "/v1/control/system-pause",
        Some(&token),
        None,
        Some(json!({"enabled": true, "actor": "mallory"})),
    )
    .await?;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _, body) = call(
        &env,
        "POST",
        "/v1/control/system-pause",
        Some(&token),
        None,
        Some(json!({"enabled": true, "reason": "incident"})),
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let consumer =
        callstream_e2e::read_committed_consumer(&callstream_e2e::unique_name("limits-ctl"))?;
    consumer.subscribe(&[&env.config.topics.name(t::CONTROL)])?;
    let msg = tokio::time::timeout(Duration::from_secs(30), consumer.recv()).await??;
    let payload = rdkafka::Message::payload(&msg).unwrap_or_default();
    let Ok(AnyEvent::ControlChange(change)) = decode_any(payload) else {
        anyhow::bail!("not a control change");
    };
    assert_eq!(change.tenant_id, "ta");
    assert_eq!(
        (change.actor.kind, change.actor.id.as_str()),
        (ActorKind::Operator, "ann@ops")
    );
    Ok(())
}

//! What the edges accept, the views store whole (issue 15): a launch request and a call
//! event at the gateway, and an operator's pause at the operator API, each with the
//! longest fields the input rules allow and every allowed character class (tabs, line
//! breaks, accents, emoji, every id mark), go through the real broker and the live
//! projections into Postgres, and read back byte for byte.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use callstream_domain::input::{MAX_ID_BYTES, MAX_REASON_CHARS, MAX_SUMMARY_CHARS};
use callstream_e2e::views::Views;
use callstream_gateway::codec::AvroCodec;
use callstream_gateway::config::{IntegrationConfig, RateLimit, TenantConfig};
use callstream_gateway::event::ProviderKind;
use callstream_gateway::verify::standard_webhooks::decode_secret;
use callstream_gateway::verify::SystemClock;
use callstream_gateway::{testkit, AppState, GatewayConfig};
use callstream_operator_api::{create_token, OperatorApiConfig, Role};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

const TENANT: &str = "acme";
const LAUNCH_TOKEN: &str = "crm-launch-token-for-the-views-test";
const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// An id of exactly the longest length, with every mark the rule allows.
fn longest_id(seed: &str) -> String {
    let mut id = format!("{seed}-_:@+=~.");
    while id.len() < MAX_ID_BYTES {
        id.push(char::from(b'a' + (id.len() % 26) as u8));
    }
    id
}

/// Text of exactly `chars` characters with tab, CR, LF, accents, CJK and emoji.
fn longest_text(chars: usize) -> String {
    let classes = [
        "tab\t",
        "crlf\r\n",
        "lf\n",
        "ünïcödé ",
        "日本語 ",
        "🎉✓ ",
        "\"quoted\" \\ ",
    ];
    let mut text: String = classes.concat();
    while text.chars().count() < chars {
        text.push('x');
    }
    text
}

async fn send(router: &axum::Router, request: Request<Body>) -> Result<(StatusCode, Value)> {
    let response = router.clone().oneshot(request).await?;
    let status = response.status();
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// The timeline row's stored event, once the projections have it.
async fn stored_event(views: &Views, event_id: &str) -> Result<Value> {
    for _ in 0..600 {
        let row: Option<Value> = sqlx::query_scalar(
            "SELECT event::jsonb FROM contact_timeline WHERE tenant_id = $1 AND event_id = $2::uuid",
        )
        .bind(TENANT)
        .bind(event_id)
        .fetch_optional(&views.db.pool)
        .await?;
        if let Some(row) = row {
            return Ok(row);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("event {event_id} never reached the timeline view")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_each_edge_accepts_the_views_store_whole() -> Result<()> {
    let views = Views::start("callstream_test_edges", "edges").await?;

    // The gateway, producing to the views' topics.
    let mut config = GatewayConfig::new(views.kafka.clone(), views.topics.clone());
    config.integrations = vec![IntegrationConfig {
        id: "acme-ai".into(),
        tenant_id: TENANT.into(),
        provider: ProviderKind::Json,
        secrets: vec![decode_secret(WHSEC).context("the test secret")?],
        rate_limit: RateLimit::default(),
    }];
    config.tenants = vec![TenantConfig::with_tokens(TENANT, &[LAUNCH_TOKEN])];
    let state = AppState::with_parts(&config, Arc::new(AvroCodec), Arc::new(SystemClock))?;
    let gateway = callstream_gateway::app(state);

    let contact = longest_id("c");
    let campaign = longest_id("camp");
    let reason = longest_text(MAX_REASON_CHARS);
    let launch = json!({
        "request_id": longest_id("r"),
        "contact_id": contact,
        "campaign_id": campaign,
        "reason": reason,
        "contact": {"phone_number": "+123456789012345", "time_zone": "America/Indiana/Indianapolis"},
    });
    let request = Request::post("/v1/launch-requests")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {LAUNCH_TOKEN}"))
        .body(Body::from(launch.to_string()))?;
    let (status, answer) = send(&gateway, request).await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let command_id = answer["command_id"].as_str().context("command id")?;
    let stored = stored_event(&views, command_id).await?;
    assert_eq!(stored["reason"], reason, "the reason, whole");
    assert_eq!(stored["contact_id"], contact);
    assert_eq!(stored["campaign_id"], campaign);
    assert_eq!(stored["contact"]["phone_number"], "+123456789012345");

    let summary = longest_text(MAX_SUMMARY_CHARS);
    let phrase = longest_text(500);
    let event = json!({
        "call_id": longest_id("CA"),
        "contact_id": contact,
        "status": "completed",
        "analysis": {"summary": summary, "callback_requested": true, "callback_phrase": phrase},
    })
    .to_string();
    let webhook_id = longest_id("msg");
    let now = chrono::Utc::now().timestamp();
    let signature = testkit::standard_signature(WHSEC, &webhook_id, now, event.as_bytes());
    let request = Request::post("/v1/webhooks/json/acme-ai")
        .header("content-type", "application/json")
        .header("webhook-id", &webhook_id)
        .header("webhook-timestamp", now.to_string())
        .header("webhook-signature", signature)
        .body(Body::from(event))?;
    let (status, answer) = send(&gateway, request).await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let event_id = answer["event_id"].as_str().context("event id")?;
    let stored = stored_event(&views, event_id).await?;
    assert_eq!(stored["analysis"]["summary"], summary, "the summary, whole");
    assert_eq!(stored["analysis"]["callback_phrase"], phrase);

    // The operator API: a pause with the longest reason shows in the control view.
    let api_config = OperatorApiConfig::new(
        views.db.url.clone(),
        views.kafka.clone(),
        views.topics.clone(),
    );
    let api = callstream_operator_api::app(callstream_operator_api::state(&api_config)?);
    let admin = create_token(&views.db.pool, TENANT, Role::Admin, "admin@acme")
        .await?
        .token;
    let pause = Request::post(format!("/v1/control/campaigns/{campaign}/pause"))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {admin}"))
        .body(Body::from(
            json!({"enabled": true, "reason": reason}).to_string(),
        ))?;
    let (status, answer) = send(&api, pause).await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let mut shown = Value::Null;
    for _ in 0..600 {
        let read = Request::get("/v1/control")
            .header("authorization", format!("Bearer {admin}"))
            .body(Body::empty())?;
        let (_, settings) = send(&api, read).await?;
        if let Some(found) = settings
            .as_array()
            .and_then(|s| s.iter().find(|s| s["campaign_id"] == campaign))
        {
            shown = found.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(shown["enabled"], true, "the pause shows: {shown}");
    assert_eq!(shown["reason"], reason, "with its reason, whole");
    Ok(())
}

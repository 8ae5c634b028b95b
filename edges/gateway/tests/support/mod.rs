//! Shared by the gateway's integration tests: a gateway on a real broker
//! with topics behind a per-test random prefix, signed requests, and a
//! `read_committed` reader of what landed.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use callstream_gateway::codec::AvroCodec;
use callstream_gateway::config::{IntegrationConfig, RateLimit, TenantConfig};
use callstream_gateway::event::ProviderKind;
use callstream_gateway::secret::Secret;
use callstream_gateway::testkit;
use callstream_gateway::verify::standard_webhooks::decode_secret;
use callstream_gateway::verify::ManualClock;
use callstream_gateway::{app, AppState, GatewayConfig};
use callstream_platform::topics::{TopicKind, CALL_EVENTS, CONTACT_COMMANDS};
use callstream_platform::{KafkaSettings, Topics};
use http_body_util::BodyExt;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::OwnedMessage;
use rdkafka::{Message, Offset, TopicPartitionList};
use tower::ServiceExt;

pub const BASE_URL: &str = "https://gw.example.com";
pub const TWILIO_ID: &str = "acme-voice";
pub const TWILIO_TOKEN: &str = "twilio-auth-token";
pub const JSON_ID: &str = "acme-ai";
pub const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub const TENANT: &str = "acme";
pub const LAUNCH_TOKEN: &str = "crm-launch-token";

pub fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A configuration with one Twilio and one JSON integration and a launch
/// tenant, on `kafka`, topics behind `prefix`.
pub fn config(kafka: KafkaSettings, prefix: &str) -> GatewayConfig {
    let mut config = GatewayConfig::new(kafka, Topics::with_prefix(prefix));
    config.public_base_url = BASE_URL.into();
    config.produce_timeout = Duration::from_secs(5);
    config.integrations = vec![
        IntegrationConfig {
            id: TWILIO_ID.into(),
            tenant_id: TENANT.into(),
            provider: ProviderKind::Twilio,
            secrets: vec![Secret::new(TWILIO_TOKEN.as_bytes().to_vec())],
            rate_limit: RateLimit::default(),
        },
        IntegrationConfig {
            id: JSON_ID.into(),
            tenant_id: TENANT.into(),
            provider: ProviderKind::Json,
            secrets: vec![decode_secret(WHSEC).unwrap()],
            rate_limit: RateLimit::default(),
        },
    ];
    config.tenants = vec![TenantConfig::with_tokens(TENANT, &[LAUNCH_TOKEN])];
    config
}

/// A gateway, its router and the clock its signature checks read.
pub struct Gateway {
    pub config: GatewayConfig,
    pub state: AppState,
    pub router: Router,
    /// The admin listener's routes (`/metrics`).
    pub admin: Router,
    pub clock: ManualClock,
}

impl Gateway {
    pub fn new(config: GatewayConfig) -> Self {
        let clock = ManualClock::new(now_unix() * 1_000);
        let state =
            AppState::with_parts(&config, Arc::new(AvroCodec), Arc::new(clock.clone())).unwrap();
        Self {
            router: app(state.clone()),
            admin: callstream_gateway::admin(state.clone()),
            config,
            state,
            clock,
        }
    }

    pub fn topic(&self, logical: &str) -> String {
        self.config.topics.name(logical)
    }

    /// Sends one request through the router, no socket.
    pub async fn send(&self, request: Request<Body>) -> Reply {
        Self::answer(self.router.clone(), request).await
    }

    /// Sends one request through the admin listener's router.
    pub async fn send_admin(&self, request: Request<Body>) -> Reply {
        Self::answer(self.admin.clone(), request).await
    }

    async fn answer(router: Router, request: Request<Body>) -> Reply {
        let response = router.oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        Reply {
            status,
            headers,
            json,
        }
    }
}

#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub json: serde_json::Value,
}

impl Reply {
    pub fn code(&self) -> &str {
        self.json["code"].as_str().unwrap_or("")
    }

    pub fn event_id(&self) -> &str {
        self.json["event_id"].as_str().unwrap_or("")
    }
}

/// The dev stack's broker, and unique topics for this test, created.
pub async fn kafka_gateway() -> Gateway {
    let kafka = KafkaSettings::from_env("gateway-tests");
    let prefix = format!("gw-{}-", uuid::Uuid::new_v4().simple());
    let config = config(kafka.clone(), &prefix);
    let specs = [
        config.topics.spec(CALL_EVENTS, TopicKind::Events),
        config.topics.spec(CONTACT_COMMANDS, TopicKind::Events),
    ];
    callstream_platform::admin::ensure_topics(&kafka, &specs)
        .await
        .expect("the dev stack's Kafka must be up: run `cargo xtask up` (or `cargo xtask test`)");
    Gateway::new(config)
}

/// A gateway whose broker does not exist, for paths that must never reach one.
pub fn offline_gateway() -> Gateway {
    let kafka = KafkaSettings::new("127.0.0.1:1", "gateway-offline-tests");
    let mut config = config(kafka, "offline-");
    config.produce_timeout = Duration::from_millis(300);
    config.readiness_timeout = Duration::from_millis(200);
    Gateway::new(config)
}

pub const CALLBACK_QUERY: &str = "contact_id=c-1042&launch_id=0b6e3f2a-5c4d-4e8f-9a1b-2c3d4e5f6a7b";

/// A Twilio status callback for `contact`, signed with `token`.
pub fn twilio_request(contact: &str, pairs: &[(&str, &str)], token: &str) -> Request<Body> {
    let path = format!("/v1/webhooks/twilio/{TWILIO_ID}?contact_id={contact}&launch_id=0b6e3f2a-5c4d-4e8f-9a1b-2c3d4e5f6a7b");
    signed_twilio(&path, &testkit::form(pairs), token)
}

pub fn signed_twilio(path: &str, body: &[u8], token: &str) -> Request<Body> {
    let signature = testkit::twilio_signature(token, &format!("{BASE_URL}{path}"), body);
    Request::post(path)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-twilio-signature", signature)
        .body(Body::from(body.to_vec()))
        .unwrap()
}

pub fn completed(call_sid: &str, sequence: &str) -> Vec<(&'static str, String)> {
    vec![
        ("CallSid", call_sid.to_string()),
        ("CallStatus", "completed".into()),
        ("CallDuration", "31".into()),
        ("SequenceNumber", sequence.to_string()),
        ("To", "+15551230000".into()),
        ("From", "+15559870000".into()),
    ]
}

pub fn pairs<'a>(owned: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    owned.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A Standard Webhooks JSON event, signed at `timestamp` with `secret`.
pub fn json_request(id: &str, timestamp: i64, body: &str, secret: &str) -> Request<Body> {
    let signature = testkit::standard_signature(secret, id, timestamp, body.as_bytes());
    Request::post(format!("/v1/webhooks/json/{JSON_ID}"))
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(Body::from(body.to_string()))
        .unwrap()
}

pub fn launch_request(token: Option<&str>, body: &str) -> Request<Body> {
    intake("/v1/launch-requests", token, body)
}

/// A CRM contact update with `body`, as the CRM would post it.
pub fn contact_update(token: Option<&str>, body: &str) -> Request<Body> {
    intake("/v1/contact-updates", token, body)
}

fn intake(path: &str, token: Option<&str>, body: &str) -> Request<Body> {
    let mut builder = Request::post(path).header("content-type", "application/json");
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    builder.body(Body::from(body.to_string())).unwrap()
}

/// Every record on `topic` (all partitions, from the start) as a
/// `read_committed` consumer sees it, waiting until `expected` arrived or
/// `timeout` passed, then a little longer to catch extras.
pub async fn read_topic(
    kafka: &KafkaSettings,
    topic: &str,
    expected: usize,
    timeout: Duration,
) -> Vec<OwnedMessage> {
    let kafka = kafka.clone();
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || {
        let group = format!("gw-reader-{}", uuid::Uuid::new_v4().simple());
        let consumer: BaseConsumer = kafka.consumer_config(&group).create().unwrap();
        let metadata = consumer
            .fetch_metadata(Some(&topic), Duration::from_secs(10))
            .unwrap();
        let mut assignment = TopicPartitionList::new();
        for p in metadata.topics()[0].partitions() {
            assignment
                .add_partition_offset(&topic, p.id(), Offset::Beginning)
                .unwrap();
        }
        consumer.assign(&assignment).unwrap();
        let mut out = Vec::new();
        let deadline = Instant::now() + timeout;
        let mut quiet_until = None;
        loop {
            let now = Instant::now();
            if now > deadline || quiet_until.is_some_and(|q| now > q) {
                break;
            }
            if let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) {
                out.push(message.detach());
            }
            if out.len() >= expected && quiet_until.is_none() {
                quiet_until = Some(Instant::now() + Duration::from_millis(700));
            }
        }
        out
    })
    .await
    .unwrap()
}

/// A header of a record, as text.
pub fn header(message: &OwnedMessage, name: &str) -> Option<String> {
    use rdkafka::message::Headers;
    let headers = message.headers()?;
    headers
        .iter()
        .find(|h| h.key == name)
        .and_then(|h| h.value)
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// Where the Kafka distribution's jars are (`CALLSTREAM_KAFKA_LIBS`).
pub fn kafka_libs() -> PathBuf {
    std::env::var_os("CALLSTREAM_KAFKA_LIBS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.stack/kafka/libs")
        })
}

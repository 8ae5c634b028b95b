//! The voice simulator on loopback, and a receiver for its status callbacks
//! that reads each one with the gateway's own Twilio code (signature and
//! event id), so tests compare recovery's ids with what the live path made.

#![allow(clippy::unwrap_used)] // helpers, not only #[test] fns, unwrap

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Router;
use callstream_gateway::config::{IntegrationConfig, RateLimit};
use callstream_gateway::event::{CallEventDraft, ProviderKind};
use callstream_gateway::provider::twilio::Twilio;
use callstream_gateway::provider::{Inbound, Provider};
use callstream_gateway::secret::Secret;
use callstream_recovery::{RecoveryConfig, TwilioAccess};
use callstream_sim_voice::{serve_state, Behaviour, SimState, SimVoiceConfig};
use serde_json::Value;
use tokio::net::TcpListener;
use uuid::Uuid;

pub const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
pub const TOKEN: &str = "recovery-test-token";
pub const TENANT: &str = "t1";

/// What the receiver made of the callbacks: the gateway's drafts.
#[derive(Clone)]
pub struct Receiver {
    pub base: String,
    pub drafts: Arc<Mutex<Vec<CallEventDraft>>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let receiver = Receiver {
            base,
            drafts: Arc::default(),
        };
        let app = Router::new().fallback(receive).with_state(receiver.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        receiver
    }

    pub fn callback_url(&self, contact: &str, launch: &Uuid) -> String {
        format!(
            "{}/v1/webhooks/twilio/int-tw?contact_id={contact}&launch_id={launch}&tenant={TENANT}",
            self.base
        )
    }

    pub fn drafts(&self) -> Vec<CallEventDraft> {
        self.drafts.lock().unwrap().clone()
    }
}

async fn receive(
    State(r): State<Receiver>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let integration = IntegrationConfig {
        id: "int-tw".into(),
        tenant_id: TENANT.into(),
        provider: ProviderKind::Twilio,
        secrets: vec![Secret::new(TOKEN.as_bytes().to_vec())],
        rate_limit: RateLimit::default(),
    };
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    let request = Inbound {
        integration: &integration,
        path_and_query: &path,
        headers: &headers,
        body: &body,
        received_at: chrono::Utc::now(),
    };
    let twilio = Twilio {
        public_base_url: r.base.clone(),
    };
    match twilio
        .verify(&request)
        .and_then(|v| twilio.parse(&request, v))
    {
        Ok(draft) => {
            r.drafts.lock().unwrap().push(draft);
            StatusCode::OK
        }
        Err(_) => StatusCode::FORBIDDEN,
    }
}

pub struct Sim {
    pub state: SimState,
    pub base: String,
    pub http: reqwest::Client,
}

/// A minute plays in 6 ms; `drop` of completions dropped, `lost` of those lost.
pub fn behaviour(drop: f64, lost: f64) -> Behaviour {
    Behaviour {
        time_scale: 1e-4,
        completion_drop_share: drop,
        lost_call_share: lost,
        ..Behaviour::default()
    }
}

impl Sim {
    pub async fn start(behaviour: Behaviour) -> Sim {
        let config = SimVoiceConfig {
            account_sid: ACCOUNT.into(),
            auth_token: TOKEN.into(),
            seed: 7,
            sid_salt: Some(11),
            behaviour,
            ..SimVoiceConfig::default()
        };
        let state = SimState::new(&config).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let served = state.clone();
        tokio::spawn(async move { serve_state(served, listener, std::future::pending()).await });
        Sim {
            state,
            base,
            http: reqwest::Client::new(),
        }
    }

    pub fn recovery_config(&self, topics: callstream_platform::Topics) -> RecoveryConfig {
        RecoveryConfig::new(
            topics,
            TwilioAccess {
                base_url: self.base.clone(),
                account_sid: ACCOUNT.into(),
                auth_token: TOKEN.into(),
            },
        )
    }

    /// Places a call with every callback event; returns its sid.
    pub async fn place(&self, to: &str, callback: &str) -> String {
        let form = [
            ("To", to),
            ("From", "+15005550006"),
            ("Twiml", "<Response/>"),
            ("StatusCallback", callback),
            (
                "StatusCallbackEvent",
                "initiated ringing answered completed",
            ),
            ("MachineDetection", "DetectMessageEnd"),
        ];
        let body = form_body(&form);
        let r = self
            .http
            .post(format!(
                "{}/2010-04-01/Accounts/{ACCOUNT}/Calls.json",
                self.base
            ))
            .basic_auth(ACCOUNT, Some(TOKEN))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        let call: Value = r.json().await.unwrap();
        call["sid"].as_str().unwrap().to_string()
    }

    /// The simulator's own account of every call (planned faults included).
    pub async fn calls(&self) -> Vec<Value> {
        let v: Value = self
            .http
            .get(format!("{}/_sim/calls", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        v["calls"].as_array().unwrap().clone()
    }

    /// Waits until every call has played out.
    pub async fn settle(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let stats: Value = self
                .http
                .get(format!("{}/_sim/stats", self.base))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if stats["calls_active"] == 0 {
                return;
            }
            assert!(Instant::now() < deadline, "calls still active: {stats}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn form_body(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

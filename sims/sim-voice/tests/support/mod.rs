//! Shared test kit: a simulator on 127.0.0.1 (port 0), a little receiver
//! that records every webhook it is sent, and a Twilio-style client. Also
//! included by the end-to-end tests (`tests/tests/support/mod.rs`, for
//! `sim_voice_signatures.rs`): keep it free of anything but the simulator.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Router;
use callstream_sim_voice::{serve_state, Behaviour, SimState, SimVoiceConfig};
use serde_json::Value;
use tokio::net::TcpListener;

pub const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
pub const TOKEN: &str = "test-auth-token";
pub const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub const FROM: &str = "+15005550006";

/// A behaviour that plays a minute in 6 ms and changes nothing else.
pub fn fast() -> Behaviour {
    Behaviour {
        time_scale: 1e-4,
        ..Behaviour::default()
    }
}

pub struct Sim {
    pub state: SimState,
    pub base: String,
    pub http: reqwest::Client,
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub path_and_query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: Instant,
}

#[derive(Clone)]
pub struct Receiver {
    pub base: String,
    pub got: Arc<Mutex<Vec<Received>>>,
    pub status: Arc<Mutex<StatusCode>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let receiver = Receiver {
            base,
            got: Arc::default(),
            status: Arc::new(Mutex::new(StatusCode::OK)),
        };
        let app = Router::new().fallback(record).with_state(receiver.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        receiver
    }

    pub fn all(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    pub fn twilio(&self) -> Vec<Received> {
        self.all()
            .into_iter()
            .filter(|r| r.path_and_query.starts_with("/v1/webhooks/twilio/"))
            .collect()
    }

    pub fn json(&self) -> Vec<Received> {
        self.all()
            .into_iter()
            .filter(|r| r.path_and_query.starts_with("/v1/webhooks/json/"))
            .collect()
    }

    /// A StatusCallback URL naming contact, launch and tenant.
    pub fn callback_url(&self, contact: &str, launch: &str) -> String {
        format!(
            "{}/v1/webhooks/twilio/int-tw?contact_id={contact}&launch_id={launch}&tenant=t1",
            self.base
        )
    }

    pub fn analysis_url(&self) -> String {
        format!("{}/v1/webhooks/json/int-js", self.base)
    }
}

async fn record(
    State(r): State<Receiver>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let path_and_query = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    r.got.lock().unwrap().push(Received {
        path_and_query,
        headers,
        body,
        at: Instant::now(),
    });
    *r.status.lock().unwrap()
}

/// The config the tests start from.
pub fn config(behaviour: Behaviour, analysis_url: Option<String>) -> SimVoiceConfig {
    SimVoiceConfig {
        account_sid: ACCOUNT.into(),
        auth_token: TOKEN.into(),
        analysis_secret: WHSEC.into(),
        analysis_url,
        seed: 42,
        sid_salt: Some(7),
        behaviour,
        ..SimVoiceConfig::default()
    }
}

impl Sim {
    pub async fn start(config: SimVoiceConfig) -> Sim {
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

    pub fn calls_url(&self) -> String {
        format!("{}/2010-04-01/Accounts/{ACCOUNT}/Calls.json", self.base)
    }

    /// Posts a create with `pairs` (To and From added unless given).
    pub async fn create(&self, pairs: &[(&str, &str)]) -> reqwest::Response {
        self.create_with(&self.http, pairs).await
    }

    pub async fn create_with(
        &self,
        client: &reqwest::Client,
        pairs: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut form = form_urlencoded::Serializer::new(String::new());
        if !pairs.iter().any(|(k, _)| *k == "From") {
            form.append_pair("From", FROM);
        }
        if !pairs.iter().any(|(k, _)| *k == "Url" || *k == "Twiml") {
            form.append_pair("Twiml", "<Response><Say>Hello</Say></Response>");
        }
        form.extend_pairs(pairs);
        client
            .post(self.calls_url())
            .basic_auth(ACCOUNT, Some(TOKEN))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.finish())
            .send()
            .await
            .unwrap()
    }

    /// A call placed with every callback event and machine detection.
    pub async fn place(&self, to: &str, callback: &str) -> Value {
        let r = self
            .create(&[
                ("To", to),
                ("StatusCallback", callback),
                (
                    "StatusCallbackEvent",
                    "initiated ringing answered completed",
                ),
                ("MachineDetection", "DetectMessageEnd"),
            ])
            .await;
        assert_eq!(r.status(), 201, "{:?}", r.text().await);
        r.json().await.unwrap()
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .basic_auth(ACCOUNT, Some(TOKEN))
            .send()
            .await
            .unwrap()
    }

    pub async fn stats(&self) -> Value {
        self.get("/_sim/stats").await.json().await.unwrap()
    }

    /// Waits until every call has played out and been delivered.
    pub async fn settle(&self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let stats = self.stats().await;
            if stats["calls_active"] == 0 {
                return stats;
            }
            assert!(Instant::now() < deadline, "calls still active: {stats}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A field of a form body.
pub fn form_field(body: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(body)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// `n` out of `total` as a share.
pub fn share(n: u64, total: u64) -> f64 {
    n as f64 / total.max(1) as f64
}

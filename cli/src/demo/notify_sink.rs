//! Where the demo's notifier sends: a local HTTP server standing for the tenant's chat
//! (a Slack-compatible incoming webhook) and its signed webhook receiver, checking every
//! Standard Webhooks signature as a receiver would. The summary says what arrived, and
//! checks that every message the notifier recorded as sent is here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use callstream_platform::standard_webhooks;
use serde::Serialize;

/// The signing secret of the demo's webhook channel (the demo's own, used nowhere else).
const SECRET: &str = "whsec_ZGVtby1ub3RpZmllci1zZWNyZXQta2V5LTAxMjM0NTY3";

/// One message the sink took.
#[derive(Debug, Clone)]
struct Taken {
    channel: String,
    id: String,
    /// Notifications it carries (a digest's count).
    count: u64,
    kind: String,
    /// A webhook whose signature checks (chat posts carry none).
    signed: Option<bool>,
}

#[derive(Clone)]
struct Sink {
    taken: Arc<Mutex<Vec<Taken>>>,
    key: Arc<Vec<u8>>,
}

async fn take(
    State(sink): State<Sink>,
    UrlPath(channel): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let (id, signed) = match header(standard_webhooks::ID) {
        Some(id) => {
            let ts = header(standard_webhooks::TIMESTAMP).and_then(|t| t.parse::<i64>().ok());
            let signed = ts.is_some_and(|ts| {
                Some(standard_webhooks::signature_header(&sink.key, id, ts, &body).as_str())
                    == header(standard_webhooks::SIGNATURE)
            });
            (id.to_owned(), Some(signed))
        }
        None => (
            header(callstream_notifier::ID_HEADER)
                .unwrap_or_default()
                .to_owned(),
            None,
        ),
    };
    let data = &json["data"];
    let taken = Taken {
        channel,
        id,
        count: data["count"].as_u64().unwrap_or(1),
        kind: data["kind"].as_str().unwrap_or("chat").to_owned(),
        signed,
    };
    if let Ok(mut all) = sink.taken.lock() {
        all.push(taken);
    }
    StatusCode::NO_CONTENT
}

/// The running sink.
pub struct NotifySink {
    pub url: String,
    sink: Sink,
}

impl NotifySink {
    /// Starts the sink on a free loopback port.
    pub async fn start() -> Result<Self> {
        let sink = Sink {
            taken: Arc::default(),
            key: Arc::new(standard_webhooks::decode_secret(SECRET)?),
        };
        let app = axum::Router::new()
            .route("/{channel}", axum::routing::post(take))
            .with_state(sink.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self { url, sink })
    }

    /// Writes the notifier's channels file for this sink into `dir`: `ops-chat` (every
    /// tenant's alerts) and `<tenant>-hook` for each tenant (its exceptions and dead
    /// letters), as `demo/control.toml` routes them.
    pub fn channels_file(&self, dir: &Path, tenants: &[String]) -> Result<PathBuf> {
        let mut text = format!(
            "# Written by `callstream demo`: the notifier's channels, all on the demo's local sink.\n\n\
             [channels.ops-chat]\nkind = \"chat\"\nurl = \"{}/ops-chat\"\ntenants = [\"*\"]\nper_minute = 600\n",
            self.url
        );
        for tenant in tenants {
            text.push_str(&format!(
                "\n[channels.{tenant}-hook]\nkind = \"webhook\"\nurl = \"{}/{tenant}-hook\"\n\
                 secret = \"{SECRET}\"\ntenants = [\"{tenant}\"]\nper_minute = 600\n",
                self.url
            ));
        }
        let path = dir.join("notifier-channels.toml");
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// What arrived, against the ids the notifier recorded as sent.
    pub fn summary(&self, sent: &std::collections::BTreeSet<String>) -> Notifications {
        let taken = self
            .sink
            .taken
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default();
        let mut by_channel: BTreeMap<String, u64> = BTreeMap::new();
        let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
        let mut ids: BTreeMap<&str, u64> = BTreeMap::new();
        let mut notifications = 0;
        for t in &taken {
            *by_channel.entry(t.channel.clone()).or_default() += 1;
            *by_kind.entry(t.kind.clone()).or_default() += t.count;
            *ids.entry(t.id.as_str()).or_default() += 1;
            notifications += t.count;
        }
        let lost: Vec<String> = sent
            .iter()
            .filter(|id| !ids.contains_key(id.as_str()))
            .cloned()
            .collect();
        Notifications {
            sink: self.url.clone(),
            messages: taken.len() as u64,
            notifications,
            by_channel,
            by_kind,
            sent_by_notifier: sent.len() as u64,
            lost: lost.len() as u64,
            lost_examples: lost.into_iter().take(3).collect(),
            repeated_ids: ids.values().map(|n| n - 1).sum(),
            unsigned_webhooks: taken.iter().filter(|t| t.signed == Some(false)).count() as u64,
        }
    }
}

/// The summary's notifications section.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Notifications {
    pub sink: String,
    /// Messages the sink took (a digest is one).
    pub messages: u64,
    /// Notifications in them.
    pub notifications: u64,
    pub by_channel: BTreeMap<String, u64>,
    /// Notifications by kind (webhooks say it; chat posts count as `chat`).
    pub by_kind: BTreeMap<String, u64>,
    /// Messages the notifier recorded as sent (`notification.sent` audits).
    pub sent_by_notifier: u64,
    /// Of those, messages the sink never took: must be 0.
    pub lost: u64,
    pub lost_examples: Vec<String>,
    /// Messages taken again under the same id (a crash between a send and its record).
    pub repeated_ids: u64,
    /// Webhooks whose signature did not check: must be 0.
    pub unsigned_webhooks: u64,
}

impl Notifications {
    /// Every message sent arrived, and every webhook was signed.
    pub fn ok(&self) -> bool {
        self.lost == 0 && self.unsigned_webhooks == 0
    }
}

//! Where the notifier's tests send: a real HTTP server recording chat posts and signed
//! webhooks (checking each signature as a Standard Webhooks receiver would), and a real
//! SMTP server, Python's aiosmtpd, writing each email it accepts to a Maildir.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use callstream_platform::standard_webhooks;
use serde_json::Value;

/// One request the HTTP sink took.
#[derive(Debug, Clone)]
pub struct Post {
    /// The path after `/` (the channel's name in the tests' URLs).
    pub path: String,
    /// `webhook-id`, else `x-callstream-notification-id`.
    pub id: Option<String>,
    pub body: Value,
    /// A webhook whose signature checks with the sink's key.
    pub signed: bool,
}

#[derive(Clone)]
struct SinkState {
    posts: Arc<Mutex<Vec<Post>>>,
    /// Answer 503 to this many requests first.
    failing: Arc<AtomicUsize>,
    key: Arc<Vec<u8>>,
}

/// An HTTP server on loopback that records every POST to `/<path>`.
pub struct HttpSink {
    pub url: String,
    state: SinkState,
}

/// The webhook secret the tests' channels and the sink share.
pub const WEBHOOK_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn take(
    State(state): State<SinkState>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    if state
        .failing
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let webhook_id = header(standard_webhooks::ID);
    let signed = match (
        webhook_id,
        header(standard_webhooks::TIMESTAMP),
        header(standard_webhooks::SIGNATURE),
    ) {
        (Some(id), Some(ts), Some(sig)) => ts
            .parse::<i64>()
            .is_ok_and(|ts| standard_webhooks::signature_header(&state.key, id, ts, &body) == sig),
        _ => false,
    };
    let post = Post {
        path,
        id: webhook_id
            .or_else(|| header(callstream_notifier::ID_HEADER))
            .map(str::to_owned),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        signed,
    };
    state.posts.lock().expect("sink lock").push(post);
    StatusCode::NO_CONTENT
}

impl HttpSink {
    pub async fn start() -> Result<Self> {
        let state = SinkState {
            posts: Arc::default(),
            failing: Arc::default(),
            key: Arc::new(standard_webhooks::decode_secret(WEBHOOK_SECRET)?),
        };
        let app = axum::Router::new()
            .route("/{path}", axum::routing::post(take))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self { url, state })
    }

    /// Every request taken so far.
    pub fn posts(&self) -> Vec<Post> {
        self.state.posts.lock().expect("sink lock").clone()
    }

    /// The requests to `path`.
    pub fn posts_to(&self, path: &str) -> Vec<Post> {
        self.posts()
            .into_iter()
            .filter(|p| p.path == path)
            .collect()
    }

    /// Answers 503 to the next `n` requests.
    pub fn fail_next(&self, n: usize) {
        self.state.failing.store(n, Ordering::SeqCst);
    }
}

/// One email as the Maildir holds it.
#[derive(Debug, Clone)]
pub struct Mail {
    pub message_id: String,
    pub subject: String,
    pub to: String,
    pub body: String,
}

/// aiosmtpd on a loopback port, writing to a Maildir; stops with the test.
pub struct SmtpSink {
    pub port: u16,
    maildir: PathBuf,
    child: Option<Child>,
}

/// The python of aiosmtpd's venv, which `cargo xtask test` installs.
fn python() -> Result<PathBuf> {
    let python = std::env::var_os("CALLSTREAM_SMTP_SINK_PYTHON")
        .map(PathBuf::from)
        .context("CALLSTREAM_SMTP_SINK_PYTHON is not set: run the tests with `cargo xtask test`, which installs aiosmtpd")?;
    if !python.is_file() {
        bail!(
            "{} is missing: `cargo xtask test` installs aiosmtpd into it",
            python.display()
        );
    }
    Ok(python)
}

impl SmtpSink {
    /// Starts the server on a free port.
    pub async fn start() -> Result<Self> {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            listener.local_addr()?.port()
        };
        let maildir = std::env::temp_dir().join(callstream_e2e::unique_name("maildir"));
        let mut sink = Self {
            port,
            maildir,
            child: None,
        };
        sink.resume().await?;
        Ok(sink)
    }

    /// Stops the server (an outage); `resume` starts it again on the same port.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server (again), and waits until it answers.
    pub async fn resume(&mut self) -> Result<()> {
        self.stop();
        let child = Command::new(python()?)
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(format!("127.0.0.1:{}", self.port))
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&self.maildir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting aiosmtpd")?;
        self.child = Some(child);
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("aiosmtpd did not answer on port {} within 10 s", self.port)
    }

    /// Every email accepted so far.
    pub fn mails(&self) -> Result<Vec<Mail>> {
        let mut mails = Vec::new();
        for folder in ["new", "cur"] {
            let Ok(entries) = std::fs::read_dir(self.maildir.join(folder)) else {
                continue;
            };
            for entry in entries {
                let text = std::fs::read_to_string(entry?.path())?;
                let (head, body) = text
                    .split_once("\n\n")
                    .or_else(|| text.split_once("\r\n\r\n"))
                    .unwrap_or((&text, ""));
                let headers: BTreeMap<String, String> = unfold(head)
                    .into_iter()
                    .filter_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        Some((k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                    })
                    .collect();
                let get = |k: &str| headers.get(k).cloned().unwrap_or_default();
                mails.push(Mail {
                    message_id: get("message-id"),
                    subject: get("subject"),
                    to: get("to"),
                    body: body.replace("\r\n", "\n"),
                });
            }
        }
        Ok(mails)
    }
}

/// Header lines with their continuations joined.
fn unfold(head: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for line in head.lines() {
        match lines.last_mut() {
            Some(last) if line.starts_with([' ', '\t']) => {
                last.push(' ');
                last.push_str(line.trim());
            }
            _ => lines.push(line.to_owned()),
        }
    }
    lines
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.maildir);
    }
}

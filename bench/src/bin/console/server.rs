//! The operator API (and so the console) on a loopback socket, and the
//! server-side timing: sequential `GET /console/f/<page>` with the admin's
//! token and the operator's zone, as htmx sends them, each timed client side
//! from send to the whole body read.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callstream_operator_api::{app, state, OperatorApiConfig};
use callstream_platform::{KafkaSettings, Topics};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The zone the console's requests (and the browser) are in.
pub const ZONE: &str = "America/Chicago";

/// A hung request fails the run instead of stalling it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The pages timed, and a piece of markup each answer must hold (so a page
/// that rendered "nothing matches" or an error is not timed as a page).
pub const PAGES: [(&str, &str); 3] = [
    ("today", "id=\"delivery-card\""),
    ("schedule", "<table"),
    ("exceptions", "<table"),
];

/// The API served until [`Server::stop`].
pub struct Server {
    pub base_url: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// Serves the operator API's router on `127.0.0.1:0`.
    pub async fn start(database_url: &str, kafka: KafkaSettings, topics: Topics) -> Result<Self> {
        let mut config = OperatorApiConfig::new(database_url, kafka, topics);
        // It measures the pages, not the brakes: one token, hundreds of requests.
        config.per_token.per_minute = 0;
        config.per_address.per_minute = 0;
        let router = app(state(&config).context("starting the operator API")?);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(
                listener,
                router.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
        });
        Ok(Self {
            base_url,
            stop,
            task,
        })
    }

    pub async fn stop(self) {
        let _ = self.stop.send(());
        // The browser's keep-alive connections are gone; don't wait long for them.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}

/// A client of the console's fragments.
pub struct Client {
    http: reqwest::Client,
    base_url: String,
    token: String,
}

impl Client {
    pub fn new(base_url: &str, token: &str) -> Result<Self> {
        Ok(Self {
            http: reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .build()
                .context("creating the HTTP client")?,
            base_url: base_url.to_owned(),
            token: token.to_owned(),
        })
    }

    /// One `GET /console/f/<page>`: its time in ms and its body's length. An
    /// answer that is not 200, is empty, or lacks `must_hold` is an error.
    pub async fn fragment(&self, page: &str, must_hold: &str) -> Result<(f64, usize)> {
        let url = format!("{}/console/f/{page}", self.base_url);
        let sent = Instant::now();
        let response = self
            .http
            .get(&url)
            .bearer_auth(&self.token)
            .header("X-Console-Zone", ZONE)
            .send()
            .await
            .with_context(|| format!("GET {url}"))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .with_context(|| format!("reading GET {url}"))?;
        let ms = sent.elapsed().as_secs_f64() * 1000.0;
        let text = String::from_utf8_lossy(&body);
        if status != reqwest::StatusCode::OK {
            bail!("GET {url} answered {status}: {}", excerpt(&text));
        }
        if body.is_empty() {
            bail!("GET {url} answered 200 with an empty body");
        }
        if !text.contains(must_hold) {
            bail!(
                "GET {url} answered 200 without {must_hold:?} (no rows rendered?): {}",
                excerpt(&text)
            );
        }
        Ok((ms, body.len()))
    }

    /// `warmup` untimed requests, then `requests` timed ones, one at a time;
    /// the times in ms and the last body's length.
    pub async fn time(
        &self,
        page: &str,
        must_hold: &str,
        warmup: usize,
        requests: usize,
    ) -> Result<(Vec<f64>, usize)> {
        for _ in 0..warmup {
            self.fragment(page, must_hold).await?;
        }
        let mut samples = Vec::with_capacity(requests);
        let mut bytes = 0;
        for _ in 0..requests {
            let (ms, len) = self.fragment(page, must_hold).await?;
            samples.push(ms);
            bytes = len;
        }
        Ok((samples, bytes))
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(300).collect()
}

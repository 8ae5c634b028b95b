//! `GET /v1/jobs` latency over a big jobs view.
//!
//! A tenant of its own gets `jobs` rows (1,000,000 by default) inserted in
//! bulk with `generate_series`: one job every 30 s over a year around now,
//! 5 jobs a contact, 50 campaigns, the 12 job states in turn. Then the
//! operator API is served on a loopback port and a viewer token of that
//! tenant pages through it over HTTP, as an operator's browser would:
//! sessions of a first page and up to `pages - 1` more by `next_cursor`,
//! each filtered one of five ways (state; campaign and a week; contact; a
//! day; state and campaign). Every request is timed, client side, from
//! send to the whole body read; a warm-up is left out.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callstream_bench::report::Summary;
use callstream_operator_api::{create_token, serve, state, OperatorApiConfig, Role};
use callstream_platform::{KafkaSettings, Topics};
use chrono::{DateTime, SecondsFormat, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::runtime::Runtime;
use tracing::info;

use callstream_bench::db::BenchDb;

/// The API run's shape.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub jobs: u64,
    pub requests: usize,
    pub warmup: usize,
    pub page_size: u32,
    pub pages: u32,
    pub concurrency: usize,
}

/// What the API run found.
#[derive(Debug, Clone)]
pub struct Found {
    pub summary: Summary,
    pub insert_seconds: f64,
    /// Requests that followed a cursor (not a first page).
    pub cursor_requests: usize,
}

const TENANT: &str = "bench-api";
const STATES: [&str; 12] = [
    "requested",
    "scheduled",
    "due",
    "dispatching",
    "launched",
    "ambiguous",
    "completed",
    "failed",
    "shadow",
    "refused",
    "cancelled",
    "replaced",
];
const CAMPAIGNS: i64 = 50;
const JOBS_PER_CONTACT: i64 = 5;
const SPACING_S: i64 = 30;
/// A hung request fails the run instead of stalling it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Rows per INSERT: progress to log, and no single huge statement.
const CHUNK: i64 = 250_000;

const INSERT: &str = "INSERT INTO jobs (tenant_id, job_id, contact_id, campaign_id, origin,
        attempt, state, state_rank, state_at, state_event_id, reason, plan_reason,
        earliest_at, slot, slot_at, time_zone, time_zone_source, created_at, updated_at)
    SELECT $1, md5($1 || '/job/' || i)::uuid, 'c' || (i / $2), 'camp' || (i % $3),
        'campaign_entry', 1,
        (ARRAY['requested','scheduled','due','dispatching','launched','ambiguous',
               'completed','failed','shadow','refused','cancelled','replaced'])[1 + (i / 7) % 12],
        (ARRAY[1,2,3,4,5,5,10,9,9,9,9,8])[1 + (i / 7) % 12]::smallint,
        $4 + i * interval '30 seconds', md5($1 || '/event/' || i)::uuid, 'bench', 'campaign_entry',
        $4 + i * interval '30 seconds', i, $4 + i * interval '30 seconds' + interval '5 minutes',
        'America/Chicago', 'contact', $4 + i * interval '30 seconds', now()
    FROM generate_series($5::bigint, $6::bigint) AS i";

pub fn measure(
    runtime: &Runtime,
    db: &BenchDb,
    settings: &KafkaSettings,
    topics: &Topics,
    load: Load,
) -> Result<Found> {
    runtime.block_on(async {
        let jobs = i64::try_from(load.jobs).context("--api-jobs is too large")?;
        let base = Utc::now() - chrono::Duration::seconds(jobs * SPACING_S / 2);
        let started = Instant::now();
        let mut from = 0;
        while from < jobs {
            let to = (from + CHUNK).min(jobs) - 1;
            sqlx::query(INSERT)
                .bind(TENANT)
                .bind(JOBS_PER_CONTACT)
                .bind(CAMPAIGNS)
                .bind(base)
                .bind(from)
                .bind(to)
                .execute(&db.pool)
                .await
                .context("inserting jobs")?;
            from = to + 1;
            info!(jobs = from, "jobs inserted");
        }
        sqlx::query("ANALYZE jobs").execute(&db.pool).await?;
        let insert_seconds = started.elapsed().as_secs_f64();

        let token = create_token(&db.pool, TENANT, Role::Viewer, "bench")
            .await
            .context("creating a viewer token")?;
        let mut config = OperatorApiConfig::new(db.url.clone(), settings.clone(), topics.clone());
        // It measures the API, not its brakes: one token at full concurrency.
        config.per_token.per_minute = 0;
        config.per_address.per_minute = 0;
        let api = state(&config).context("starting the operator API")?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}/v1/jobs", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, api, async {
            let _ = stopped.await;
        }));
        let client = Client {
            http: reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .build()
                .context("creating the HTTP client")?,
            url: base_url,
            token: token.token,
            span: (base, jobs),
            load,
        };
        // The warm-up fills the pools (HTTP, Postgres) and the caches.
        client.run(load.warmup, 0).await?;
        let count = load.requests.div_ceil(load.concurrency);
        let mut tasks = Vec::new();
        for task in 0..load.concurrency {
            let client = client.clone();
            tasks.push(tokio::spawn(async move {
                client.run(count, 1 + task as u64).await
            }));
        }
        let mut samples = Vec::new();
        let mut cursor_requests = 0;
        for task in tasks {
            let (lat, cursors) = task.await.context("a client task failed")??;
            samples.extend(lat);
            cursor_requests += cursors;
        }
        let _ = stop.send(());
        let _ = server.await;
        Ok(Found {
            summary: Summary::of(samples).context("no API samples")?,
            insert_seconds,
            cursor_requests,
        })
    })
}

#[derive(Clone)]
struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
    /// First job's time and how many jobs there are.
    span: (DateTime<Utc>, i64),
    load: Load,
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl Client {
    /// Runs sessions until `requests` requests are done; their latencies
    /// in ms and how many followed a cursor.
    async fn run(&self, requests: usize, seed: u64) -> Result<(Vec<f64>, usize)> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut lat = Vec::with_capacity(requests);
        let mut cursors = 0;
        while lat.len() < requests {
            let filter = self.filter(&mut rng);
            let mut cursor: Option<String> = None;
            for _ in 0..self.load.pages.max(1) {
                let mut query = filter.clone();
                query.push(("limit".into(), self.load.page_size.to_string()));
                if let Some(c) = cursor.take() {
                    query.push(("cursor".into(), c));
                    cursors += 1;
                }
                let sent = Instant::now();
                let response = self
                    .http
                    .get(&self.url)
                    .bearer_auth(&self.token)
                    .query(&query)
                    .send()
                    .await
                    .context("GET /v1/jobs")?;
                let status = response.status();
                let body = response.bytes().await.context("reading a jobs page")?;
                lat.push(sent.elapsed().as_secs_f64() * 1000.0);
                if !status.is_success() {
                    bail!(
                        "GET /v1/jobs {query:?} answered {status}: {}",
                        String::from_utf8_lossy(&body)
                    );
                }
                let page: serde_json::Value =
                    serde_json::from_slice(&body).context("a jobs page is not JSON")?;
                cursor = page["next_cursor"].as_str().map(str::to_owned);
                if cursor.is_none() || lat.len() >= requests {
                    break;
                }
            }
        }
        Ok((lat, cursors))
    }

    /// One of the five filters an operator uses, at random.
    fn filter(&self, rng: &mut StdRng) -> Vec<(String, String)> {
        let (base, jobs) = self.span;
        let at = base + chrono::Duration::seconds(rng.random_range(0..jobs.max(1)) * SPACING_S);
        let state = STATES[rng.random_range(0..STATES.len())].to_owned();
        let campaign = format!("camp{}", rng.random_range(0..CAMPAIGNS));
        let contact = format!("c{}", rng.random_range(0..(jobs / JOBS_PER_CONTACT).max(1)));
        let pair = |k: &str, v: String| (k.to_owned(), v);
        match rng.random_range(0..5) {
            0 => vec![pair("state", state)],
            1 => vec![
                pair("campaign_id", campaign),
                pair("from", rfc3339(at)),
                pair("to", rfc3339(at + chrono::Duration::days(7))),
            ],
            2 => vec![pair("contact_id", contact)],
            3 => vec![
                pair("from", rfc3339(at)),
                pair("to", rfc3339(at + chrono::Duration::days(1))),
            ],
            _ => vec![pair("state", state), pair("campaign_id", campaign)],
        }
    }
}

//! Sending the plan in bursts, as a CRM would: every request of a burst in
//! the same second, retrying 429 and 503 after `Retry-After`. A launch with a
//! send time waits for it on the process clock (business time), so a scaled
//! run's CRMs send through the simulated day.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures::stream::{self, StreamExt};
use serde::Serialize;

use crate::plan::{Launch, Plan};

#[derive(Debug, Clone)]
pub struct SendSettings {
    pub gateway: String,
    /// The launch-intake token of a tenant without one in `tenant_tokens`.
    pub token: String,
    /// Each tenant's own token: the gateway takes the tenant from it.
    pub tenant_tokens: BTreeMap<String, String>,
    pub burst: usize,
    pub pause: Duration,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct SendReport {
    pub requests: usize,
    pub accepted: usize,
    pub retries: usize,
    /// Refused for good (4xx other than 429), or still failing after the retry bound.
    pub failed: usize,
    pub bursts: usize,
    pub seconds: f64,
}

/// Most attempts per request before it counts as failed.
const MAX_ATTEMPTS: usize = 20;

enum Outcome {
    Accepted { retries: usize },
    Failed { retries: usize },
}

async fn send_one(client: &reqwest::Client, url: &str, token: &str, launch: &Launch) -> Outcome {
    let mut retries = 0;
    loop {
        let response = client
            .post(url)
            .bearer_auth(token)
            .json(launch)
            .send()
            .await;
        let wait = match response {
            Ok(r) if r.status().is_success() => return Outcome::Accepted { retries },
            Ok(r) if r.status().as_u16() == 429 || r.status().is_server_error() => r
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(Duration::from_millis(200), Duration::from_secs),
            Ok(r) => {
                tracing::warn!(status = %r.status(), request = %launch.request_id, "launch request refused");
                return Outcome::Failed { retries };
            }
            Err(error) => {
                tracing::debug!(%error, "launch request failed; retrying");
                Duration::from_millis(200)
            }
        };
        retries += 1;
        if retries >= MAX_ATTEMPTS {
            return Outcome::Failed { retries };
        }
        tokio::time::sleep(wait).await;
    }
}

impl SendSettings {
    fn token_for(&self, tenant: &str) -> &str {
        self.tenant_tokens.get(tenant).unwrap_or(&self.token)
    }
}

/// Waits until the process clock reads `at_ms` (business time).
async fn until(at_ms: i64) {
    use callstream_platform::clock;
    loop {
        let left = at_ms.saturating_sub(clock::now_ms());
        if left <= 0 {
            return;
        }
        let business = Duration::from_millis(u64::try_from(left).unwrap_or(0));
        let real = clock::process_clock().real_wait(business);
        // Checked again at least every second: the clock is the judge, not the sleep.
        tokio::time::sleep(real.min(Duration::from_secs(1))).await;
    }
}

/// Sends every launch of `plan` at its send time (in plan order for equal times),
/// `burst` at a time.
pub async fn send(plan: &Plan, settings: &SendSettings) -> Result<SendReport> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(settings.burst.max(1))
        .build()
        .context("building the HTTP client")?;
    let url = format!(
        "{}/v1/launch-requests",
        settings.gateway.trim_end_matches('/')
    );
    let started = Instant::now();
    let mut report = SendReport {
        requests: plan.launches.len(),
        ..SendReport::default()
    };
    let mut order: Vec<&Launch> = plan.launches.iter().collect();
    order.sort_by_key(|l| l.send_at_ms);
    let mut batches: Vec<Vec<&Launch>> = Vec::new();
    for launch in order {
        match batches.last_mut() {
            Some(b)
                if b.len() < settings.burst.max(1)
                    && b.first().map(|f| f.send_at_ms) == Some(launch.send_at_ms) =>
            {
                b.push(launch);
            }
            _ => batches.push(vec![launch]),
        }
    }
    for burst in batches {
        if let Some(first) = burst.first() {
            until(first.send_at_ms).await;
        }
        let outcomes: Vec<Outcome> = stream::iter(burst.iter().copied())
            .map(|launch| send_one(&client, &url, settings.token_for(&launch.tenant), launch))
            .buffer_unordered(burst.len())
            .collect()
            .await;
        for outcome in outcomes {
            match outcome {
                Outcome::Accepted { retries } => {
                    report.accepted += 1;
                    report.retries += retries;
                }
                Outcome::Failed { retries } => {
                    report.failed += 1;
                    report.retries += retries;
                }
            }
        }
        report.bursts += 1;
        tracing::info!(
            sent = report.accepted + report.failed,
            of = report.requests,
            "burst sent"
        );
        tokio::time::sleep(settings.pause).await;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

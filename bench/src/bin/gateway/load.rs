//! The load generator: `concurrency` tasks on a runtime of its own
//! (threads `gw-load`), each posting one signed Twilio status callback at a
//! time over its own kept-alive HTTP/1.1 connection (`http`) and sending the
//! next as soon as the answer is in (a closed loop: the offered rate is
//! whatever the gateway sustains at that concurrency).
//!
//! Every request is a distinct call (`CallSid` from the run id and a
//! counter shared by all tasks and levels), so every 202 names a distinct
//! event id and the loss check can match them one for one. Requests are
//! built and signed before the clock of each one starts: the latency is
//! the HTTP round trip to the 202 only.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use callstream_gateway::{testkit, AppState};
use callstream_platform::topics::CALL_EVENTS;
use serde::Deserialize;
use uuid::Uuid;

use crate::http::{Connection, Failure};
use crate::server::{AUTH_TOKEN, INTEGRATION};
use crate::threads::{Reading, Split};

/// Thread name prefix of the load generator's runtime.
pub const THREAD_NAME: &str = "gw-load";

/// What every request is made of.
pub struct Target {
    /// Where the gateway listens.
    pub addr: SocketAddr,
    /// The gateway's base URL (also what it signs against).
    pub base_url: String,
    /// Distinguishes this run's calls from any earlier run's.
    pub run: u64,
    /// Contacts the requests cycle through (the record keys).
    pub contacts: u64,
    /// How long a request may wait for its answer before it counts as failed.
    pub timeout: Duration,
}

impl Target {
    /// Request `n`: the final `completed` callback of call `n`, as Twilio
    /// sends it (the usual fields, phone numbers included; the gateway
    /// keeps them out of the event), as the bytes of an HTTP/1.1 request.
    pub fn request(&self, n: u64) -> Vec<u8> {
        let path = format!(
            "/v1/webhooks/twilio/{INTEGRATION}?contact_id=c-{}&launch_id={}",
            n % self.contacts,
            Uuid::from_u64_pair(self.run, n)
        );
        let call_sid = format!("CA{:016x}{n:016x}", self.run);
        let to = format!("+1555{:07}", n % 10_000_000);
        let timestamp = chrono::Utc::now().to_rfc2822();
        let body = testkit::form(&[
            ("AccountSid", "AC00000000000000000000000000000000"),
            ("ApiVersion", "2010-04-01"),
            ("CallSid", &call_sid),
            ("CallStatus", "completed"),
            ("CallDuration", "31"),
            ("CallbackSource", "call-progress-events"),
            ("Direction", "outbound-api"),
            ("From", "+15559870000"),
            ("To", &to),
            ("Called", &to),
            ("SequenceNumber", "3"),
            ("Timestamp", &timestamp),
        ]);
        let url = format!("{}{path}", self.base_url);
        let signature = testkit::twilio_signature(AUTH_TOKEN, &url, &body);
        let mut head = String::with_capacity(256);
        // Writing into a String cannot fail.
        let _ = write!(
            head,
            "POST {path} HTTP/1.1\r\nHost: {}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\n\
             X-Twilio-Signature: {signature}\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let mut request = head.into_bytes();
        request.extend_from_slice(&body);
        request
    }
}

/// The shape of one level.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub concurrency: usize,
    /// Run this long before measuring (connections open, caches warm).
    pub warmup: Duration,
    pub measure: Duration,
}

/// What one level measured. Counts and latencies are of requests answered
/// inside the measured window; ids and totals are of the whole level.
#[derive(Debug, Default)]
pub struct Level {
    pub concurrency: usize,
    pub seconds: f64,
    /// 202 latencies in the window, ms, ascending.
    pub latencies_ms: Vec<f64>,
    /// Requests in the window not answered 202 (any status, or no answer).
    pub errors: u64,
    /// Event ids of every 202 of the level, warm-up included.
    pub accepted_ids: Vec<u128>,
    /// Failures of the whole level, by kind.
    pub failures: BTreeMap<String, u64>,
    /// CPU in the window, by thread group and broker.
    pub cpu: Split,
    /// Mean time from produce to the delivery report in the window, ms.
    pub produce_mean_ms: Option<f64>,
}

impl Level {
    pub fn accepted(&self) -> u64 {
        self.latencies_ms.len() as u64
    }

    pub fn accepted_per_s(&self) -> f64 {
        self.accepted() as f64 / self.seconds
    }
}

#[derive(Default)]
struct TaskOut {
    /// (answered at, latency ms) of each 202.
    accepted: Vec<(Instant, f64)>,
    ids: Vec<u128>,
    failures: Vec<(Instant, String)>,
}

/// Runs one level to its end and gathers what it measured.
pub async fn level(
    target: &Arc<Target>,
    next: &Arc<AtomicU64>,
    gateway: &AppState,
    plan: Plan,
) -> Result<Level> {
    let started = Instant::now();
    let window_start = started + plan.warmup;
    let end = window_start + plan.measure;
    let tasks: Vec<_> = (0..plan.concurrency)
        .map(|_| {
            let (target, next) = (target.clone(), next.clone());
            tokio::spawn(worker(target, next, end))
        })
        .collect();

    tokio::time::sleep_until(window_start.into()).await;
    let (cpu_before, produce_before) = (Reading::now(), produce_totals(gateway));
    tokio::time::sleep_until(end.into()).await;
    let (cpu_after, produce_after) = (Reading::now(), produce_totals(gateway));

    let mut level = Level {
        concurrency: plan.concurrency,
        seconds: plan.measure.as_secs_f64(),
        cpu: cpu_after.since(&cpu_before),
        produce_mean_ms: produce_before
            .zip(produce_after)
            .and_then(|((s0, n0), (s1, n1))| (n1 > n0).then(|| (s1 - s0) / (n1 - n0) * 1000.0)),
        ..Level::default()
    };
    let in_window = |at: &Instant| *at >= window_start && *at < end;
    for task in tasks {
        let out = task.await.context("a load task panicked")?;
        level.latencies_ms.extend(
            out.accepted
                .iter()
                .filter(|(at, _)| in_window(at))
                .map(|(_, ms)| *ms),
        );
        level.accepted_ids.extend(out.ids);
        for (at, kind) in out.failures {
            level.errors += u64::from(in_window(&at));
            *level.failures.entry(kind).or_default() += 1;
        }
    }
    level.latencies_ms.sort_by(f64::total_cmp);
    Ok(level)
}

async fn worker(target: Arc<Target>, next: Arc<AtomicU64>, end: Instant) -> TaskOut {
    let mut out = TaskOut::default();
    let mut connection = Connection::new(target.addr);
    while Instant::now() < end {
        let request = target.request(next.fetch_add(1, Ordering::Relaxed));
        let sent = Instant::now();
        let result = send(&mut connection, &request, target.timeout).await;
        let answered = Instant::now();
        match result {
            Ok(id) => {
                let ms = answered.duration_since(sent).as_secs_f64() * 1000.0;
                out.accepted.push((answered, ms));
                out.ids.push(id);
            }
            Err(kind) => out.failures.push((answered, kind)),
        }
    }
    out
}

#[derive(Deserialize)]
struct Accepted {
    event_id: Uuid,
}

/// Posts one request; the event id of a 202, else what went wrong.
pub async fn send(
    connection: &mut Connection,
    request: &[u8],
    timeout: Duration,
) -> Result<u128, String> {
    let response = connection
        .send(request, timeout)
        .await
        .map_err(|f: Failure| f.kind().to_string())?;
    if response.status != 202 {
        return Err(format!("http {}", response.status));
    }
    let accepted: Accepted = serde_json::from_slice(&response.body)
        .map_err(|_| "202 without an event id".to_string())?;
    Ok(accepted.event_id.as_u128())
}

/// Sum (s) and count of the gateway's acknowledged call-event produces,
/// from its own Prometheus text (what `/metrics` serves).
fn produce_totals(gateway: &AppState) -> Option<(f64, f64)> {
    produce_totals_in(&gateway.metrics_text())
}

fn produce_totals_in(text: &str) -> Option<(f64, f64)> {
    let value = |suffix: &str| {
        let series = format!(
            "callstream_gateway_produce_latency_seconds_{suffix}{{topic=\"{CALL_EVENTS}\",result=\"acked\"}}"
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&series)?.trim().parse::<f64>().ok())
    };
    Some((value("sum")?, value("count")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_distinct_calls_and_verify() {
        let target = Target {
            addr: SocketAddr::from(([127, 0, 0, 1], 1)),
            base_url: "http://127.0.0.1:1".into(),
            run: 7,
            contacts: 10,
            timeout: Duration::from_secs(1),
        };
        let (a, b) = (parts(&target.request(1)), parts(&target.request(11)));
        assert_ne!(a.body, b.body);
        // Same contact (11 mod 10 = 1), different launch.
        assert!(a.path.contains("contact_id=c-1&") && b.path.contains("contact_id=c-1&"));
        assert_ne!(a.path, b.path);
        assert_eq!(a.content_length, a.body.len());
        let url = format!("{}{}", target.base_url, a.path);
        let again = testkit::twilio_signature(AUTH_TOKEN, &url, a.body.as_bytes());
        assert_eq!(again, a.signature);
    }

    /// The gateway exposes acknowledged series for both its topics from the
    /// start; only call-events' count.
    #[test]
    fn produce_totals_are_call_events_only() {
        let text = "\
callstream_gateway_produce_latency_seconds_sum{topic=\"contact-commands\",result=\"acked\"} 0.0
callstream_gateway_produce_latency_seconds_count{topic=\"contact-commands\",result=\"acked\"} 0
callstream_gateway_produce_latency_seconds_sum{topic=\"call-events\",result=\"acked\"} 1.5
callstream_gateway_produce_latency_seconds_count{topic=\"call-events\",result=\"acked\"} 300
callstream_gateway_produce_latency_seconds_count{topic=\"call-events\",result=\"failed\"} 2
";
        assert_eq!(produce_totals_in(text), Some((1.5, 300.0)));
        assert_eq!(produce_totals_in(""), None);
    }

    struct Parts {
        path: String,
        signature: String,
        content_length: usize,
        body: String,
    }

    /// The pieces of a request this module wrote.
    fn parts(request: &[u8]) -> Parts {
        let text = std::str::from_utf8(request).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let mut lines = head.split("\r\n");
        let path = lines.next().unwrap().split(' ').nth(1).unwrap().to_string();
        let header = |name: &str| {
            head.split("\r\n")
                .find_map(|l| l.strip_prefix(&format!("{name}: ")))
                .unwrap()
                .to_string()
        };
        Parts {
            path,
            signature: header("X-Twilio-Signature"),
            content_length: header("Content-Length").parse().unwrap(),
            body: body.to_string(),
        }
    }
}

//! The open-loop load generator: signed callbacks at a fixed arrival rate,
//! whatever the gateway answers, each timed from when it was due.
//!
//! A pacer task computes request `i`'s intended send time as `t0 + i/R`,
//! builds the request ahead of it, sleeps until it is due and hands it to a
//! task of its own: the pacer never waits for an answer, so a slow answer
//! never delays the next send (no coordinated omission). Each request task
//! takes a kept-alive connection from the level's pool (at most
//! `connections` open; a request waits for a free one, FIFO), posts, and
//! puts it back. Its latency runs from its *intended* time to its answer, so
//! time spent waiting for the pacer (a late wake-up), for a connection or in
//! the gateway's queue all counts, as it would for a real sender.
//!
//! What counts as an error, and with which latency:
//! - anything but a 202 with an event id, and no whole answer before the
//!   deadline (intended time + the target's timeout): an error, its latency
//!   the time from intended to when it failed (the timeout, for a timeout);
//! - a request due while `max_in_flight` are already in flight is not sent:
//!   an error, charged the whole timeout as its latency (it would not have
//!   been answered sooner). The schedule is kept, never silently thinned.
//!
//! Errors' latencies are in the percentiles with the 202s'. A level's
//! figures are of the requests *due* inside its measured window (after the
//! warm-up), whenever they were answered: the level waits for every one.
//! Each level has a pool of its own, so no connection sits idle past the
//! gateway's idle timeout between levels.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::{mpsc, Semaphore};

use crate::http::Connection;
use crate::load::{send, Target};

/// The shape of one open-loop level.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Requests per second.
    pub rate: u64,
    /// Run this long at `rate` before the measured window.
    pub warmup: Duration,
    pub measure: Duration,
    /// Most connections open at once.
    pub connections: usize,
    /// Most requests in flight at once; one due beyond it is an error.
    pub max_in_flight: usize,
}

/// What one level measured: figures of the requests due in the window;
/// ids of every 202 of the level.
#[derive(Debug, Default)]
pub struct Level {
    pub rate: u64,
    pub seconds: f64,
    /// Latency from intended send time of every request due in the window
    /// (202s and errors), ms, ascending.
    pub latencies_ms: Vec<f64>,
    /// 202s among the requests due in the window.
    pub accepted: u64,
    /// Requests due in the window not answered 202 in time, or not sent.
    pub errors: u64,
    /// Event ids of every 202 of the level, warm-up included.
    pub accepted_ids: Vec<u128>,
    /// Failures of the whole level, by kind.
    pub failures: BTreeMap<String, u64>,
    /// Connections the level opened (at most `Plan::connections`).
    pub connections: usize,
    /// Most that the pacer woke after a request's intended time, ms (how far
    /// the load generator itself fell behind).
    pub pacer_lag_max_ms: f64,
}

impl Level {
    pub fn accepted_per_s(&self) -> f64 {
        self.accepted as f64 / self.seconds
    }
}

/// What became of one request.
struct Outcome {
    /// Its place in the level's schedule.
    index: u64,
    /// From intended send time to answer or failure, ms.
    latency_ms: f64,
    result: Result<u128, String>,
}

/// The level's connections: a permit each, the idle ones kept for reuse.
struct Pool {
    target: Arc<Target>,
    slots: Semaphore,
    idle: Mutex<Vec<Connection>>,
    opened: AtomicUsize,
}

impl Pool {
    fn take(&self) -> Connection {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        idle.unwrap_or_else(|| {
            self.opened.fetch_add(1, Ordering::Relaxed);
            Connection::new(self.target.addr)
        })
    }

    fn put(&self, connection: Connection) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(connection);
    }
}

/// Failure kind of a request due while the in-flight cap was reached.
const OVER_CAP: &str = "not sent: in-flight cap";

/// Runs one level at `plan.rate` to its end (every request answered or
/// failed) and gathers what it measured.
pub async fn level(target: &Arc<Target>, next: &AtomicU64, plan: Plan) -> Result<Level> {
    let rate = plan.rate.max(1);
    let due_in = |seconds: f64| (rate as f64 * seconds).round() as u64;
    let warmup_n = due_in(plan.warmup.as_secs_f64());
    let total = warmup_n + due_in(plan.measure.as_secs_f64());
    let pool = Arc::new(Pool {
        target: target.clone(),
        slots: Semaphore::new(plan.connections.max(1)),
        idle: Mutex::new(Vec::new()),
        opened: AtomicUsize::new(0),
    });
    let in_flight = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel::<Outcome>();
    let capacity = usize::try_from(total).unwrap_or(0);
    // Gathers as answers come in; done when the pacer and every request task have dropped `tx`.
    let collector = tokio::spawn(async move {
        let mut outcomes = Vec::with_capacity(capacity);
        while let Some(outcome) = rx.recv().await {
            outcomes.push(outcome);
        }
        outcomes
    });

    let mut pacer_lag_max = Duration::ZERO;
    let t0 = Instant::now();
    for index in 0..total {
        // Built before it is due, so building is off its clock while the pacer keeps up.
        let request = target.request(next.fetch_add(1, Ordering::Relaxed));
        let intended = t0 + Duration::from_nanos(index.saturating_mul(1_000_000_000) / rate);
        let now = Instant::now();
        if intended > now {
            tokio::time::sleep_until(intended.into()).await;
        } else if index % 16 == 0 {
            // Behind schedule: let the request tasks on this runtime run too.
            tokio::task::yield_now().await;
        }
        pacer_lag_max = pacer_lag_max.max(Instant::now().saturating_duration_since(intended));
        if in_flight.load(Ordering::Relaxed) >= plan.max_in_flight {
            let _ = tx.send(Outcome {
                index,
                latency_ms: ms(target.timeout),
                result: Err(OVER_CAP.into()),
            });
            continue;
        }
        in_flight.fetch_add(1, Ordering::Relaxed);
        let deadline = intended + target.timeout;
        let (pool, tx, in_flight) = (pool.clone(), tx.clone(), in_flight.clone());
        tokio::spawn(async move {
            let result = post(&pool, &request, deadline).await;
            let latency_ms = ms(Instant::now().saturating_duration_since(intended));
            in_flight.fetch_sub(1, Ordering::Relaxed);
            let _ = tx.send(Outcome {
                index,
                latency_ms,
                result,
            });
        });
    }
    drop(tx);
    let outcomes = collector
        .await
        .context("the open-loop collector panicked")?;

    let mut level = Level {
        rate,
        seconds: plan.measure.as_secs_f64(),
        connections: pool.opened.load(Ordering::Relaxed),
        pacer_lag_max_ms: ms(pacer_lag_max),
        ..Level::default()
    };
    for outcome in outcomes {
        let measured = outcome.index >= warmup_n;
        if measured {
            level.latencies_ms.push(outcome.latency_ms);
        }
        match outcome.result {
            Ok(id) => {
                level.accepted_ids.push(id);
                level.accepted += u64::from(measured);
            }
            Err(kind) => {
                level.errors += u64::from(measured);
                *level.failures.entry(kind).or_default() += 1;
            }
        }
    }
    level.latencies_ms.sort_by(f64::total_cmp);
    Ok(level)
}

/// Waits for a connection, then posts, all before `deadline`.
async fn post(pool: &Pool, request: &[u8], deadline: Instant) -> Result<u128, String> {
    let permit = match tokio::time::timeout_at(deadline.into(), pool.slots.acquire()).await {
        Err(_) => return Err("transport timeout waiting for a connection".into()),
        Ok(Err(_)) => return Err("connection pool closed".into()),
        Ok(Ok(permit)) => permit,
    };
    let mut connection = pool.take();
    let left = deadline.saturating_duration_since(Instant::now());
    let result = send(&mut connection, request, left).await;
    pool.put(connection);
    drop(permit);
    result
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A target at `addr`, ten contacts, run `run`, answers awaited for `timeout`.
    fn target(addr: std::net::SocketAddr, run: u64, timeout: Duration) -> Arc<Target> {
        Arc::new(Target {
            addr,
            base_url: format!("http://{addr}"),
            run,
            contacts: 10,
            timeout,
        })
    }

    /// Against a server that answers every request after 50 ms, four
    /// connections and 200 requests/s: a closed loop of four would send
    /// 80/s; the open loop keeps the schedule, and the requests queue for
    /// connections, their latency growing from the intended time.
    #[tokio::test]
    async fn keeps_the_schedule_and_times_from_intended() {
        use axum::routing::post;
        let app = axum::Router::new().route(
            "/v1/webhooks/twilio/{integration}",
            post(|| async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                (
                    axum::http::StatusCode::ACCEPTED,
                    format!("{{\"event_id\":\"{}\"}}", uuid::Uuid::new_v4()),
                )
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let target = target(addr, 1, Duration::from_secs(5));
        let plan = Plan {
            rate: 200,
            warmup: Duration::ZERO,
            measure: Duration::from_millis(500),
            connections: 4,
            max_in_flight: 1_000,
        };
        let started = Instant::now();
        let level = level(&target, &AtomicU64::new(0), plan).await.unwrap();
        assert_eq!(level.latencies_ms.len(), 100, "{level:?}");
        assert_eq!((level.accepted, level.errors), (100, 0));
        assert_eq!(level.accepted_ids.len(), 100);
        assert!(level.connections <= 4);
        // 100 requests over 4 connections at 50 ms each take at least 1.25 s;
        // the last was due at 0.495 s, so it waited most of that from its intended time.
        assert!(started.elapsed() >= Duration::from_millis(1_250));
        let worst = *level.latencies_ms.last().unwrap();
        assert!(worst >= 700.0, "worst {worst} ms");
        assert!(level.latencies_ms[0] >= 50.0);
    }

    /// Over the in-flight cap a due request is an error charged the timeout, not dropped.
    #[tokio::test]
    async fn over_the_cap_is_an_error_with_the_timeout() {
        // Nothing listens here: connects fail fast, but one in flight at a time.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let target = target(addr, 2, Duration::from_millis(300));
        let plan = Plan {
            rate: 1_000,
            warmup: Duration::ZERO,
            measure: Duration::from_millis(50),
            connections: 1,
            max_in_flight: 0,
        };
        let level = level(&target, &AtomicU64::new(0), plan).await.unwrap();
        assert_eq!(level.latencies_ms.len(), 50);
        assert_eq!((level.accepted, level.errors), (0, 50));
        assert_eq!(level.failures.get(OVER_CAP), Some(&50));
        assert!(level.latencies_ms.iter().all(|ms| *ms == 300.0));
    }
}

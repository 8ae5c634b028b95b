//! The run's figures as the operator sees them: read from the Postgres views
//! the projections built, and checked against the same figures counted on
//! the topics.
//!
//! The views are the figures of record in the summary (jobs by state, open
//! exceptions, launches with and without a completion, delivery per
//! 10-minute bucket); the topics are the independent count. A figure on
//! which the two disagree is named, and the invariant "views agree with the
//! topics" fails: the projections promise exactly-once, and this is where a
//! whole run can tell.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use anyhow::{Context, Result};
use callstream_schemas::{ExceptionStatus, LaunchStatus};
use serde::Serialize;
use sqlx::PgPool;
use tokio::time::Instant;

use super::tally::Tally;

/// The views' delivery buckets are ten minutes wide (the production width).
pub const BUCKET_MS: i64 = 600_000;

/// One delivery bucket of the `delivery_buckets` view.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ViewBucket {
    pub start: String,
    pub accepted: u64,
    pub delivered: u64,
    pub recovered: u64,
    pub missing: u64,
}

/// What the views say.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ViewFigures {
    pub jobs_by_state: BTreeMap<String, u64>,
    pub exceptions_by_status: BTreeMap<String, u64>,
    pub launches_by_status: BTreeMap<String, u64>,
    /// Accepted launches with a completion (delivered or recovered).
    pub with_completion: u64,
    /// Accepted launches with none.
    pub without_completion: u64,
    pub missing: u64,
    /// Missing cases by their resolution (`unresolved` for none yet).
    pub resolutions: BTreeMap<String, u64>,
    pub delivery: Vec<ViewBucket>,
}

/// A figure both sides count, and what each said.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Comparison {
    pub figure: String,
    pub views: u64,
    pub topics: u64,
}

/// The views' section of the summary.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Views {
    /// Whether the views could be read at all.
    pub read: bool,
    pub database: String,
    pub error: Option<String>,
    pub figures: ViewFigures,
    /// How many figures were compared, and the ones that differ.
    pub compared: usize,
    pub disagreements: Vec<Comparison>,
    /// How long the summary waited for the projections to catch up.
    pub waited_s: f64,
}

impl Views {
    /// Read and compared, with no difference.
    pub fn agree(&self) -> bool {
        self.read && self.compared > 0 && self.disagreements.is_empty()
    }
}

impl Views {
    /// The section as text: where the views were read, and any difference.
    pub fn write_text(&self, o: &mut String) {
        let v = self;
        if !v.read {
            let _ = writeln!(
                o,
                "\nviews      NOT READ from {}: {}",
                v.database,
                v.error
                    .as_deref()
                    .unwrap_or("no projections in this binary")
            );
            return;
        }
        let _ = writeln!(
            o,
            "\nviews      database {}: {} figures compared with the topics (after {:.1} s), {}",
            v.database,
            v.compared,
            v.waited_s,
            if v.disagreements.is_empty() {
                "all agree".to_string()
            } else {
                format!("{} DISAGREE", v.disagreements.len())
            }
        );
        for c in &v.disagreements {
            let _ = writeln!(
                o,
                "             {}: views {}, topics {}",
                c.figure, c.views, c.topics
            );
        }
    }
}

fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

async fn by_key(pool: &PgPool, sql: &str) -> Result<BTreeMap<String, u64>> {
    let rows: Vec<(Option<String>, i64)> = sqlx::query_as(sql)
        .fetch_all(pool)
        .await
        .with_context(|| format!("reading the views: {sql}"))?;
    Ok(rows
        .into_iter()
        .map(|(k, n)| (k.unwrap_or_else(|| "none".into()), n.max(0) as u64))
        .collect())
}

/// Reads the figures (every tenant of the run's database).
pub async fn read(pool: &PgPool) -> Result<ViewFigures> {
    let jobs_by_state = by_key(pool, "SELECT state, count(*) FROM jobs GROUP BY 1").await?;
    let exceptions_by_status =
        by_key(pool, "SELECT status, count(*) FROM exceptions GROUP BY 1").await?;
    let launches_by_status = by_key(
        pool,
        "SELECT status, count(*) FROM launches WHERE status IS NOT NULL GROUP BY 1",
    )
    .await?;
    let completion = by_key(
        pool,
        "SELECT CASE WHEN completed_at IS NULL THEN 'without' ELSE 'with' END, count(*)
         FROM launches WHERE status = 'accepted' GROUP BY 1",
    )
    .await?;
    let resolutions = by_key(
        pool,
        "SELECT coalesce(resolution, 'unresolved'), count(*)
         FROM launches WHERE missing_at IS NOT NULL GROUP BY 1",
    )
    .await?;
    let rows: Vec<(chrono::DateTime<chrono::Utc>, i64, i64, i64, i64)> = sqlx::query_as(
        "SELECT bucket_start, sum(accepted)::bigint, sum(delivered)::bigint,
                sum(recovered)::bigint, sum(missing)::bigint
         FROM delivery_buckets GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .context("reading the delivery buckets")?;
    let u = |n: i64| n.max(0) as u64;
    Ok(ViewFigures {
        jobs_by_state,
        exceptions_by_status,
        launches_by_status,
        with_completion: completion.get("with").copied().unwrap_or(0),
        without_completion: completion.get("without").copied().unwrap_or(0),
        missing: resolutions.values().sum(),
        resolutions,
        delivery: rows
            .into_iter()
            .map(|(start, a, d, r, m)| ViewBucket {
                start: rfc3339(start.timestamp_millis()),
                accepted: u(a),
                delivered: u(d),
                recovered: u(r),
                missing: u(m),
            })
            .collect(),
    })
}

/// Compares the figures both sides count; returns how many were compared
/// and the ones that differ.
pub fn compare(v: &ViewFigures, t: &Tally) -> (usize, Vec<Comparison>) {
    let get = |m: &BTreeMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    let accepted: Vec<_> = t
        .launches
        .iter()
        .filter(|(_, l)| l.status == LaunchStatus::Accepted)
        .collect();
    let completed = accepted
        .iter()
        .filter(|(id, _)| t.delivered.contains_key(*id) || t.recovered_events.contains_key(*id))
        .count() as u64;
    let mut resolutions: BTreeMap<String, u64> = BTreeMap::new();
    for id in t.missing.keys() {
        let r = t.resolved.get(id).map_or("unresolved", |(r, _)| r.as_str());
        *resolutions.entry(r.to_owned()).or_default() += 1;
    }
    let open = t
        .exceptions
        .values()
        .filter(|(_, s)| *s == ExceptionStatus::Open)
        .count() as u64;
    let mut pairs: Vec<(String, u64, u64)> = vec![
        (
            "jobs".into(),
            v.jobs_by_state.values().sum(),
            t.plans.len() as u64,
        ),
        (
            "jobs waiting for their slot".into(),
            get(&v.jobs_by_state, "scheduled"),
            t.live_allocations().count() as u64,
        ),
        (
            "exceptions open".into(),
            get(&v.exceptions_by_status, "open"),
            open,
        ),
        (
            "launches accepted".into(),
            get(&v.launches_by_status, "accepted"),
            accepted.len() as u64,
        ),
        (
            "accepted launches with a completion".into(),
            v.with_completion,
            completed,
        ),
        (
            "accepted launches without a completion".into(),
            v.without_completion,
            accepted.len() as u64 - completed,
        ),
        (
            "completions missing".into(),
            v.missing,
            t.missing.len() as u64,
        ),
    ];
    let names: std::collections::BTreeSet<&String> =
        v.resolutions.keys().chain(resolutions.keys()).collect();
    for name in names {
        pairs.push((
            format!("missing, {name}"),
            get(&v.resolutions, name),
            get(&resolutions, name),
        ));
    }
    let mut buckets: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (id, l) in &accepted {
        let Some(at) = l.accepted_at_ms else { continue };
        let b = buckets
            .entry(rfc3339(at.div_euclid(BUCKET_MS) * BUCKET_MS))
            .or_default();
        b.0 += 1;
        b.1 += u64::from(t.delivered.contains_key(*id));
    }
    let view_buckets: BTreeMap<&str, &ViewBucket> =
        v.delivery.iter().map(|b| (b.start.as_str(), b)).collect();
    let starts: std::collections::BTreeSet<&str> = buckets
        .keys()
        .map(String::as_str)
        .chain(view_buckets.keys().copied())
        .collect();
    for start in starts {
        let view = view_buckets.get(start);
        let topics = buckets.get(start).copied().unwrap_or_default();
        pairs.push((
            format!("bucket {start} accepted"),
            view.map_or(0, |b| b.accepted),
            topics.0,
        ));
        pairs.push((
            format!("bucket {start} delivered"),
            view.map_or(0, |b| b.delivered),
            topics.1,
        ));
    }
    let compared = pairs.len();
    let differ = pairs
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(figure, views, topics)| Comparison {
            figure,
            views,
            topics,
        })
        .collect();
    (compared, differ)
}

/// Reads the views until they agree with the topics, or until the
/// projections have stopped moving for `quiet` (then the difference is
/// real, not lag), at most `limit`.
pub async fn settle(
    pool: &PgPool,
    database: &str,
    tally: &Tally,
    quiet: Duration,
    limit: Duration,
) -> Views {
    let start = Instant::now();
    let mut last_progress: (i64, Instant) = (-1, Instant::now());
    loop {
        let result = read(pool).await;
        let progress: i64 =
            sqlx::query_scalar("SELECT coalesce(sum(records), 0)::bigint FROM projection_offsets")
                .fetch_one(pool)
                .await
                .unwrap_or(-1);
        if progress != last_progress.0 {
            last_progress = (progress, Instant::now());
        }
        let done = |views: Views| Views {
            waited_s: start.elapsed().as_secs_f64(),
            database: database.to_owned(),
            ..views
        };
        match result {
            Ok(figures) => {
                let (compared, disagreements) = compare(&figures, tally);
                let stopped = last_progress.1.elapsed() >= quiet;
                if disagreements.is_empty() || stopped || start.elapsed() >= limit {
                    return done(Views {
                        read: true,
                        figures,
                        compared,
                        disagreements,
                        ..Views::default()
                    });
                }
            }
            Err(e) if start.elapsed() >= limit => {
                return done(Views {
                    error: Some(format!("{e:#}")),
                    ..Views::default()
                });
            }
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;

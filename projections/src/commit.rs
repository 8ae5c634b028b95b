//! Committing batches: each batch's rows and offsets in one transaction, retried while
//! Postgres is away, and a [`Pipeline`] that commits one batch while the caller reads and
//! decodes the next.
//!
//! Guarantees:
//! - Batches commit one at a time, in the order they were submitted (the next starts when
//!   the previous has committed), so a view's offsets only move forward.
//! - A batch is kept and retried whole while Postgres is away (one log line when the
//!   outage starts, one when it ends); a batch Postgres refuses for another reason is
//!   re-run record by record so only the refused records are skipped.
//! - A pipeline owns at most one batch in flight: a crash loses at most that batch and
//!   the one being read, neither of which stored its offsets, so both are read again.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::postgres::PgPool;
use tokio::task::JoinHandle;

use crate::config::ProjectionsConfig;
use crate::error::{is_transient, ProjectionError};
use crate::store::{self, Decoded, Mode, Stats};
use crate::view::{Tables, View};

/// Applies and commits a batch, waiting out Postgres outages; a non-transient failure
/// re-runs the batch record by record so only the refused records are skipped.
pub(crate) async fn commit_batch(
    pool: &PgPool,
    views: &[View],
    tables: Tables,
    batch: &[Decoded],
    stats: &Stats,
    pauser: &mut Pauser,
) -> Result<(), ProjectionError> {
    let mut mode = Mode::Fast;
    loop {
        let attempt = async {
            let mut tx = pool.begin().await?;
            store::apply_batch(&mut tx, views, tables, batch, mode, stats).await?;
            tx.commit().await
        };
        match attempt.await {
            Ok(()) => {
                pauser.succeeded();
                stats
                    .records
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                stats.batches.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            Err(e) if is_transient(&e) => pauser.failed(&e).await,
            Err(e) if mode == Mode::Fast => {
                tracing::warn!(error = %e, "batch refused; applying it record by record");
                mode = Mode::Careful;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Commits batches in a task of its own, one at a time, while the caller prepares the
/// next: reading from Kafka and decoding overlap with Postgres applying the last batch.
pub(crate) struct Pipeline {
    state: State,
}

enum State {
    Idle(Committer),
    Busy(JoinHandle<(Committer, Result<(), ProjectionError>)>),
    /// Only while a task is being awaited; never observed.
    Empty,
}

/// What a commit needs, moved into the task and back.
struct Committer {
    pool: PgPool,
    views: Arc<[View]>,
    tables: Tables,
    stats: Arc<Stats>,
    pauser: Pauser,
}

impl Pipeline {
    pub(crate) fn new(
        pool: PgPool,
        views: &[View],
        tables: Tables,
        stats: Arc<Stats>,
        pauser: Pauser,
    ) -> Self {
        Self {
            state: State::Idle(Committer {
                pool,
                views: views.into(),
                tables,
                stats,
                pauser,
            }),
        }
    }

    /// Waits for the batch in flight, if any, then starts committing `batch`. The error of
    /// the batch in flight, if it failed for good, is returned here.
    pub(crate) async fn submit(&mut self, batch: Vec<Decoded>) -> Result<(), ProjectionError> {
        let committer = self.idle().await?;
        self.state = State::Busy(tokio::spawn(async move {
            let mut committer = committer;
            let result = commit_batch(
                &committer.pool,
                &committer.views,
                committer.tables,
                &batch,
                &committer.stats,
                &mut committer.pauser,
            )
            .await;
            (committer, result)
        }));
        Ok(())
    }

    /// Waits until every submitted batch has committed.
    pub(crate) async fn flush(&mut self) -> Result<(), ProjectionError> {
        let committer = self.idle().await?;
        self.state = State::Idle(committer);
        Ok(())
    }

    /// Whether the batch in flight (if any) has finished, so [`Self::flush`] returns at once.
    pub(crate) fn is_idle(&self) -> bool {
        match &self.state {
            State::Busy(task) => task.is_finished(),
            State::Idle(_) | State::Empty => true,
        }
    }

    async fn idle(&mut self) -> Result<Committer, ProjectionError> {
        match std::mem::replace(&mut self.state, State::Empty) {
            State::Idle(committer) => Ok(committer),
            State::Busy(task) => match task.await {
                Ok((committer, Ok(()))) => Ok(committer),
                Ok((committer, Err(e))) => {
                    self.state = State::Idle(committer);
                    Err(e)
                }
                // The task never aborts; a panic in it is passed on as it was.
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            },
            State::Empty => unreachable!("a pipeline is idle or busy between calls"),
        }
    }
}

/// Tells the story of a Postgres outage once: one line when it starts, one when it ends,
/// with doubling waits in between.
pub(crate) struct Pauser {
    initial: Duration,
    max: Duration,
    wait: Duration,
    since: Option<Instant>,
}

impl Pauser {
    pub(crate) fn new(config: &ProjectionsConfig) -> Self {
        Self {
            initial: config.retry_initial,
            max: config.retry_max,
            wait: config.retry_initial,
            since: None,
        }
    }

    pub(crate) async fn failed(&mut self, error: &sqlx::Error) {
        if self.since.is_none() {
            self.since = Some(Instant::now());
            tracing::error!(%error, "postgres unavailable: projections paused, the batch is kept and retried");
        } else {
            tracing::debug!(%error, "postgres still unavailable");
        }
        tokio::time::sleep(self.wait).await;
        self.wait = (self.wait * 2).min(self.max);
    }

    pub(crate) fn succeeded(&mut self) {
        if let Some(since) = self.since.take() {
            tracing::info!(
                paused_ms = since.elapsed().as_millis() as u64,
                "postgres is back: projections resumed"
            );
        }
        self.wait = self.initial;
    }
}

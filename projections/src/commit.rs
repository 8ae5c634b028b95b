//! Committing batches: each view's rows of a batch and its offsets in one transaction,
//! retried while Postgres is away, and a [`Pipeline`] that commits one batch while the
//! caller reads and decodes the next.
//!
//! Guarantees:
//! - Exactly once per view: a view's rows and its offsets always commit in the same
//!   transaction (offsets are kept per view, see [`store`]). The views are split into
//!   lanes (see [`lanes`]), each lane committing its views' share of a batch in a
//!   transaction of its own, on a connection of its own, at the same time as the other
//!   lanes: Postgres applies a batch with as many backends as there are lanes. Lanes
//!   write disjoint tables and disjoint offset rows, so they never wait for each other.
//! - Batches commit one at a time, in the order they were submitted (the next starts when
//!   every lane has committed the previous), so a view's offsets only move forward.
//! - A batch is kept and retried whole while Postgres is away (one log line when the
//!   outage starts, one when it ends); a batch Postgres refuses for another reason is
//!   re-run record by record so only the refused records are skipped.
//! - A pipeline owns at most one batch in flight: a crash loses at most that batch and
//!   the one being read, neither of which stored its offsets (or only in some lanes,
//!   whose views then skip what they have), so both are read again.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::postgres::PgPool;
use tokio::task::JoinHandle;

use crate::config::ProjectionsConfig;
use crate::error::{is_transient, ProjectionError};
use crate::report::{Reporter, Skipped};
use crate::store::{self, Decoded, Mode, Stats};
use crate::view::{Tables, View};

/// Applies and commits a batch, waiting out Postgres outages; a non-transient failure
/// re-runs the batch record by record so only the refused records are skipped, each
/// opening its exception through `reporter` before the batch commits.
///
/// `mode` is the first try: `Fast` (then `Careful` if Postgres refuses the batch), or
/// `Load` for empty tables, whose refusal is returned (rolled back, the tables are still
/// empty).
#[allow(clippy::too_many_arguments)] // one per thing a commit needs; a struct would only rename them
pub(crate) async fn commit_batch(
    pool: &PgPool,
    views: &[View],
    tables: Tables,
    batch: &[Decoded],
    stats: &Stats,
    pauser: &mut Pauser,
    reporter: Option<&Reporter>,
    mut mode: Mode,
) -> Result<(), ProjectionError> {
    let started = Instant::now();
    loop {
        let attempt = async {
            let mut tx = pool.begin().await?;
            let skipped = store::apply_batch(&mut tx, views, tables, batch, mode, stats).await?;
            Ok::<_, sqlx::Error>((tx, skipped))
        };
        let attempt = match attempt.await {
            Ok((tx, skipped)) => {
                if let Some(reporter) = reporter.filter(|_| !skipped.is_empty()) {
                    if let Err(error) = reporter.report(&skipped).await {
                        // Nothing is lost: the batch did not commit, and is applied again.
                        tracing::warn!(%error, "cannot open the exceptions of skipped records; retrying the batch");
                        drop(tx);
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                }
                tx.commit().await
            }
            Err(e) => Err(e),
        };
        match attempt {
            Ok(()) => {
                pauser.succeeded();
                stats
                    .commit_seconds
                    .observe(started.elapsed().as_secs_f64());
                return Ok(());
            }
            Err(e) if is_transient(&e) => pauser.failed(&e).await,
            // The tables of a load may have no keys yet to upsert into: the caller
            // decides (see `rebuild`).
            Err(e) if mode == Mode::Load => return Err(e.into()),
            Err(e) if mode == Mode::Fast => {
                tracing::warn!(error = %e, "batch refused; applying it record by record");
                mode = Mode::Careful;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The views split into `n` lanes (fewer if there are fewer views) of about equal work,
/// each keeping the order of `views`. Pure, so the split is the same on every start.
pub(crate) fn lanes(views: &[View], n: usize) -> Vec<Vec<View>> {
    let n = n.clamp(1, views.len().max(1));
    let mut by_weight: Vec<View> = views.to_vec();
    // Heaviest first, then greedily onto the lightest lane.
    by_weight.sort_by_key(|v| (std::cmp::Reverse(weight(*v)), *v));
    let mut load = vec![0u32; n];
    let mut lane_of = std::collections::HashMap::new();
    for view in by_weight {
        let lightest = (0..n).min_by_key(|&i| (load[i], i)).unwrap_or(0);
        load[lightest] += weight(view);
        lane_of.insert(view, lightest);
    }
    // The operator's views commit together: an operator who sees a command `applied` or
    // `rejected` must find the control setting and the audit row it stands for.
    if let Some(&lane) = lane_of.get(&View::Commands) {
        for v in [View::Control, View::Audit, View::DeadLetters] {
            if let Some(l) = lane_of.get_mut(&v) {
                *l = lane;
            }
        }
    }
    let mut out = vec![Vec::new(); n];
    for view in views {
        out[lane_of[view]].push(*view);
    }
    out.retain(|lane: &Vec<View>| !lane.is_empty());
    out
}

/// Rough Postgres time a view takes of a batch, relative (`cargo xtask bench projections`,
/// debug log "batch applied": timeline and jobs ~50 ms per 2,000 records, launches ~30,
/// exceptions and slots ~10-15, the others a few).
fn weight(view: View) -> u32 {
    match view {
        View::Timeline | View::Jobs => 10,
        View::Launches => 6,
        View::Exceptions | View::Slots => 3,
        View::Audit | View::Commands | View::Control | View::DeadLetters => 1,
    }
}

/// Commits batches in tasks of their own, one task per lane, one batch at a time, while
/// the caller prepares the next: reading from Kafka and decoding overlap with Postgres
/// applying the last batch, and the lanes overlap with each other.
pub(crate) struct Pipeline {
    state: State,
    stats: Arc<Stats>,
    /// Opens the exceptions of skipped records (live runs only; a rebuild reads again
    /// what the live run reported).
    reporter: Option<Reporter>,
}

type Task = JoinHandle<(Committer, Result<(), ProjectionError>)>;

enum State {
    Idle(Vec<Committer>),
    /// The lanes' tasks and the batch's record count.
    Busy(Vec<Task>, usize),
    /// Only while tasks are being awaited; never observed.
    Empty,
}

/// What one lane's commit needs, moved into its task and back.
struct Committer {
    pool: PgPool,
    views: Arc<[View]>,
    tables: Tables,
    stats: Arc<Stats>,
    pauser: Pauser,
    reporter: Option<Reporter>,
}

impl Pipeline {
    /// A pipeline committing `views` in `lanes` lanes (see [`lanes`]).
    pub(crate) fn new(
        pool: PgPool,
        views: &[View],
        lanes: usize,
        tables: Tables,
        stats: Arc<Stats>,
        pauser: &Pauser,
        reporter: Option<Reporter>,
    ) -> Self {
        let committers = self::lanes(views, lanes)
            .into_iter()
            .map(|views| Committer {
                pool: pool.clone(),
                views: views.into(),
                tables,
                stats: stats.clone(),
                pauser: pauser.clone(),
                reporter: reporter.clone(),
            })
            .collect();
        Self {
            state: State::Idle(committers),
            stats,
            reporter,
        }
    }

    /// Waits for the batch in flight, if any, then starts committing `batch`. The error of
    /// the batch in flight, if it failed for good, is returned here.
    pub(crate) async fn submit(&mut self, batch: Vec<Decoded>) -> Result<(), ProjectionError> {
        self.submit_in(batch.into(), Mode::Fast).await
    }

    /// [`Self::submit`], first tried in `mode` (see [`commit_batch`]); the caller may keep
    /// the batch.
    pub(crate) async fn submit_in(
        &mut self,
        batch: Arc<[Decoded]>,
        mode: Mode,
    ) -> Result<(), ProjectionError> {
        let committers = self.idle().await?;
        self.report_undecodable(&batch).await;
        let records = batch.len();
        let tasks = committers
            .into_iter()
            .map(|mut committer| {
                let batch = batch.clone();
                tokio::spawn(async move {
                    let result = commit_batch(
                        &committer.pool,
                        &committer.views,
                        committer.tables,
                        &batch,
                        &committer.stats,
                        &mut committer.pauser,
                        committer.reporter.as_ref(),
                        mode,
                    )
                    .await;
                    (committer, result)
                })
            })
            .collect();
        self.state = State::Busy(tasks, records);
        Ok(())
    }

    /// Opens the exceptions of the batch's records that are not events, before any lane
    /// can commit their offsets; retried until the broker takes them (a crash repeats
    /// them under the same ids).
    async fn report_undecodable(&self, batch: &[Decoded]) {
        let Some(reporter) = &self.reporter else {
            return;
        };
        let skipped: Vec<Skipped> = batch
            .iter()
            .filter_map(|d| {
                let error = d.undecodable.clone()?;
                Some(Skipped::undecodable(
                    &d.raw.topic,
                    d.raw.partition,
                    d.raw.offset,
                    error,
                ))
            })
            .collect();
        if skipped.is_empty() {
            return;
        }
        while let Err(error) = reporter.report(&skipped).await {
            tracing::warn!(%error, "cannot open the exceptions of undecodable records; retrying");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Waits until every submitted batch has committed.
    pub(crate) async fn flush(&mut self) -> Result<(), ProjectionError> {
        let committers = self.idle().await?;
        self.state = State::Idle(committers);
        Ok(())
    }

    /// Whether the batch in flight (if any) has finished, so [`Self::flush`] returns at once.
    pub(crate) fn is_idle(&self) -> bool {
        match &self.state {
            State::Busy(tasks, _) => tasks.iter().all(JoinHandle::is_finished),
            State::Idle(_) | State::Empty => true,
        }
    }

    /// Waits for every lane; the batch counts as committed once all of them have.
    async fn idle(&mut self) -> Result<Vec<Committer>, ProjectionError> {
        match std::mem::replace(&mut self.state, State::Empty) {
            State::Idle(committers) => Ok(committers),
            State::Busy(tasks, records) => {
                let mut committers = Vec::with_capacity(tasks.len());
                let mut failed = None;
                for task in tasks {
                    match task.await {
                        Ok((committer, result)) => {
                            committers.push(committer);
                            if let Err(e) = result {
                                failed.get_or_insert(e);
                            }
                        }
                        // The tasks never abort; a panic in one is passed on as it was.
                        Err(e) => std::panic::resume_unwind(e.into_panic()),
                    }
                }
                match failed {
                    None => {
                        self.stats
                            .records
                            .fetch_add(records as u64, Ordering::Relaxed);
                        self.stats.batches.fetch_add(1, Ordering::Relaxed);
                        Ok(committers)
                    }
                    Some(e) => {
                        self.state = State::Idle(committers);
                        Err(e)
                    }
                }
            }
            State::Empty => unreachable!("a pipeline is idle or busy between calls"),
        }
    }
}

/// Tells the story of a Postgres outage once: one line when it starts, one when it ends,
/// with doubling waits in between.
#[derive(Debug, Clone)]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Views, lanes asked for, the lanes expected.
    type Case = (&'static [View], usize, &'static [&'static [View]]);

    #[test]
    fn lanes_cover_every_view_once_in_order_and_balance() {
        let cases: &[Case] = &[
            (View::ALL, 1, &[View::ALL]),
            (
                View::ALL,
                2,
                &[
                    &[
                        View::Jobs,
                        View::Launches,
                        View::Audit,
                        View::Control,
                        View::Commands,
                        View::DeadLetters,
                    ],
                    &[View::Exceptions, View::Slots, View::Timeline],
                ],
            ),
            (&[View::Jobs], 4, &[&[View::Jobs]]),
            (
                View::ALL,
                8,
                &[
                    &[View::Jobs],
                    &[View::Timeline],
                    &[View::Launches],
                    &[View::Exceptions],
                    &[View::Slots],
                    &[
                        View::Audit,
                        View::Control,
                        View::Commands,
                        View::DeadLetters,
                    ],
                ],
            ),
            (&[View::Jobs, View::Slots], 0, &[&[View::Jobs, View::Slots]]),
            (&[], 2, &[]),
        ];
        for (views, n, expected) in cases {
            let got = lanes(views, *n);
            let expected: Vec<Vec<View>> = expected.iter().map(|l| l.to_vec()).collect();
            assert_eq!(got, expected, "{views:?} in {n} lanes");
        }
    }
}

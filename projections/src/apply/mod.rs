//! Turning one decoded event into row changes of one view.
//!
//! Guarantees, which make exactly-once bookkeeping and rebuilds work:
//! - Idempotent: applying the same event twice leaves the same rows as applying it once.
//! - Order-independent across topics: every column is either set by one kind of event,
//!   chosen as the greatest `(rank, time, event id)`, or merged as "first non-null" where
//!   every event that carries it carries the same value (a job's campaign, origin and times
//!   are copied from its plan by every processor), so any interleaving of the topics (live
//!   and rebuild read them differently) gives equal rows.
//! - Events a view does not care about change nothing.
//!
//! Table names come from [`Tables`], so the same code writes the live tables and a rebuild's.

mod jobs;
mod launches;
mod ops;
mod simple;

use std::collections::BTreeSet;

use callstream_schemas::{AnyEvent, Timestamp};
use sqlx::PgConnection;

use crate::view::{Tables, View};

/// One record as the projection saw it.
#[derive(Debug, Clone, Copy)]
pub struct Located<'a> {
    /// Physical topic name.
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub event: &'a AnyEvent,
}

/// What a batch touched that is finished once at its end (per view).
#[derive(Debug, Default)]
pub struct Touched {
    /// `(tenant, bucket start)` of delivery buckets to recompute.
    pub buckets: BTreeSet<(String, Timestamp)>,
}

/// Applies one event to one view.
pub async fn apply(
    conn: &mut PgConnection,
    view: View,
    tables: Tables,
    record: Located<'_>,
    touched: &mut Touched,
) -> Result<(), sqlx::Error> {
    match view {
        View::Jobs => jobs::apply(conn, tables, record.event).await,
        View::Exceptions => simple::exceptions(conn, tables, record.event).await,
        View::Slots => simple::slots(conn, tables, record.event).await,
        View::Launches => launches::apply(conn, tables, record.event, touched).await,
        View::Audit => ops::audit(conn, tables, record.event).await,
        View::Timeline => ops::timeline(conn, tables, record).await,
        View::Control => simple::control(conn, tables, record.event).await,
        View::Commands => ops::commands(conn, tables, record.event).await,
    }
}

/// Finishes a batch for one view: recomputes what depends on many rows.
pub async fn finish(
    conn: &mut PgConnection,
    view: View,
    tables: Tables,
    touched: &Touched,
) -> Result<(), sqlx::Error> {
    match view {
        View::Launches => launches::recompute_buckets(conn, tables, touched).await,
        _ => Ok(()),
    }
}

/// The `CASE` condition "the incoming `(rank, at, event id)` is greater than the stored
/// one", for a table alias `t` and columns `{prefix}_rank`, `{prefix}_at`, `{prefix}_event_id`.
pub(crate) fn newer(prefix: &str) -> String {
    format!(
        "(EXCLUDED.{prefix}_rank, EXCLUDED.{prefix}_at, EXCLUDED.{prefix}_event_id) \
         > (t.{prefix}_rank, t.{prefix}_at, t.{prefix}_event_id)"
    )
}

/// `col = CASE WHEN <newer> THEN EXCLUDED.col ELSE t.col END` for each column.
pub(crate) fn take_if_newer(prefix: &str, columns: &[&str]) -> String {
    let cond = newer(prefix);
    columns
        .iter()
        .map(|c| format!("{c} = CASE WHEN {cond} THEN EXCLUDED.{c} ELSE t.{c} END"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `col = COALESCE(t.col, EXCLUDED.col)` for each column: the first value seen stays.
pub(crate) fn first_non_null(columns: &[&str]) -> String {
    columns
        .iter()
        .map(|c| format!("{c} = COALESCE(t.{c}, EXCLUDED.{c})"))
        .collect::<Vec<_>>()
        .join(", ")
}

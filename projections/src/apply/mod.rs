//! Turning a batch of decoded events into row changes of one view, with a few statements
//! per view per batch.
//!
//! Guarantees, which make exactly-once bookkeeping and rebuilds work:
//! - Idempotent: applying the same event twice leaves the same rows as applying it once.
//! - Order-independent across topics: every column is either set by one kind of event,
//!   chosen as the greatest `(rank, time, event id)`, or merged as "first non-null" where
//!   every event that carries it carries the same value (a job's campaign, origin and times
//!   are copied from its plan by every processor), so any interleaving of the topics (live
//!   and rebuild read them differently) gives equal rows.
//! - Batching changes nothing: a batch gives the rows its events give applied one after
//!   another in batch order (a batch of one is the per-event path). Each view folds the
//!   batch's changes per row in memory with the merge its SQL applies (see [`fold`]) and
//!   writes every row it changes with one multi-row upsert (`INSERT ... SELECT FROM
//!   UNNEST(...)`), so a batch costs one to three statements per view however big it is.
//! - Events a view does not care about change nothing.
//!
//! Table names come from [`Tables`], so the same code writes the live tables and a rebuild's.

mod commands;
mod copy;
mod dead_letters;
mod exceptions;
mod fold;
mod jobs;
mod launches;
mod ops;
mod simple;

use callstream_schemas::AnyEvent;
use sqlx::PgConnection;

use crate::store::Decoded;
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

/// How a view writes the rows it folded from a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    /// Multi-row upserts merged into whatever the tables hold (the live path).
    Upsert,
    /// Binary `COPY` (see [`copy`]): only for tables that hold none of the batch's rows
    /// (a rebuild's first load into its empty tables), where it writes what the upserts
    /// would. Views with little to write upsert all the same.
    Copy,
}

/// The tables [`load`] writes with `COPY`, which need no key to be written (the others are
/// upserted all the same, so their keys must exist before a load).
pub(crate) const COPIED: &[&str] = &[
    "jobs",
    "job_launches",
    "exceptions",
    "slots",
    "launches",
    "delivery_buckets",
    "audit",
    "contact_timeline",
];

/// Applies a batch of records (in the order they were read) to one view: its events, and
/// for the dead-letters view the letters themselves (whatever their bytes).
pub async fn apply(
    conn: &mut PgConnection,
    view: View,
    tables: Tables,
    records: &[Located<'_>],
    letters: &[&Decoded],
) -> Result<(), sqlx::Error> {
    write(conn, view, tables, records, letters, Write::Upsert).await
}

/// [`apply`] into tables that hold none of the batch's rows yet (a rebuild's first load):
/// the same rows, written with `COPY`.
pub async fn load(
    conn: &mut PgConnection,
    view: View,
    tables: Tables,
    records: &[Located<'_>],
    letters: &[&Decoded],
) -> Result<(), sqlx::Error> {
    write(conn, view, tables, records, letters, Write::Copy).await
}

async fn write(
    conn: &mut PgConnection,
    view: View,
    tables: Tables,
    records: &[Located<'_>],
    letters: &[&Decoded],
    how: Write,
) -> Result<(), sqlx::Error> {
    if records.is_empty() && letters.is_empty() {
        return Ok(());
    }
    match view {
        View::Jobs => jobs::apply(conn, tables, records, how).await,
        View::Exceptions => exceptions::apply(conn, tables, records, how).await,
        View::Slots => simple::slots(conn, tables, records, how).await,
        View::Launches => launches::apply(conn, tables, records, how).await,
        View::Audit => ops::audit(conn, tables, records, how).await,
        View::Timeline => ops::timeline(conn, tables, records, how).await,
        View::Control => simple::control(conn, tables, records).await,
        View::Commands => commands::apply(conn, tables, records).await,
        View::DeadLetters => dead_letters::apply(conn, tables, letters, records).await,
    }
}

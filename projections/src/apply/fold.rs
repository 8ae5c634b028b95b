//! Folding a batch's changes of one row into one change, and the SQL that merges it into
//! the stored row.
//!
//! Every view column is merged one of a few ways (the greatest `(rank, time, event id)`
//! takes a group of columns, first non-null, least, greatest, or). Each of those merges is
//! associative, so folding a batch's changes of a row in batch order and merging the fold
//! into the stored row once gives the row that applying them one after another gives.
//! [`Merge`] is the in-memory half, written to match the SQL half column by column; a
//! multi-row upsert must never name a row twice (Postgres refuses to update a row twice in
//! one statement), which [`Fold`] guarantees by keeping one change per key.

use std::collections::HashMap;
use std::hash::Hash;

/// A change of one row that a later change of the same row can be folded into.
pub(crate) trait Merge {
    /// Folds `later` (the next change of the same row, in batch order) into `self`, as the
    /// view's `ON CONFLICT` clause would merge it into a stored row.
    fn merge(&mut self, later: Self);
}

/// One change per key, in the order the keys were first seen.
#[derive(Debug)]
pub(crate) struct Fold<K, R> {
    index: HashMap<K, usize>,
    rows: Vec<R>,
}

impl<K, R> Default for Fold<K, R> {
    fn default() -> Self {
        Self {
            index: HashMap::new(),
            rows: Vec::new(),
        }
    }
}

impl<K: Hash + Eq, R: Merge> Fold<K, R> {
    /// Adds a change: the first of its key is kept as is, later ones are merged into it.
    pub(crate) fn add(&mut self, key: K, row: R) {
        match self.index.get(&key) {
            Some(&i) => self.rows[i].merge(row),
            None => {
                self.index.insert(key, self.rows.len());
                self.rows.push(row);
            }
        }
    }
}

impl<K: Hash + Eq, R> Fold<K, R> {
    /// Adds a change that must not be merged: the first of its key wins (`DO NOTHING`).
    pub(crate) fn add_first(&mut self, key: K, row: R) {
        if !self.index.contains_key(&key) {
            self.index.insert(key, self.rows.len());
            self.rows.push(row);
        }
    }

    pub(crate) fn get(&self, key: &K) -> Option<&R> {
        self.index.get(key).map(|&i| &self.rows[i])
    }

    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut R> {
        self.index.get(key).map(|&i| &mut self.rows[i])
    }

    pub(crate) fn rows(&self) -> &[R] {
        &self.rows
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// `COALESCE(slot, value)`: the first value seen stays.
pub(crate) fn first<T>(slot: &mut Option<T>, value: Option<T>) {
    if slot.is_none() {
        *slot = value;
    }
}

/// Postgres `LEAST`, which skips NULLs.
pub(crate) fn least<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One column per row, to bind as a Postgres array.
pub(crate) fn col<'r, R, T>(rows: &'r [R], f: impl Fn(&'r R) -> T) -> Vec<T> {
    rows.iter().map(f).collect()
}

/// `INSERT INTO {table} AS t (c1, ...) SELECT * FROM UNNEST($1::type1[], ...) AS u(c1, ...)`:
/// one row per element of the bound arrays, which are bound in the order of `columns`.
pub(crate) fn insert_unnest(table: &str, columns: &[(&str, &str)]) -> String {
    insert_unnest_with(table, columns, &[])
}

/// [`insert_unnest`] with more columns computed from the others: `(column, expression)`,
/// the expression reading the bound columns as `u.c1`, ...
pub(crate) fn insert_unnest_with(
    table: &str,
    columns: &[(&str, &str)],
    computed: &[(&str, &str)],
) -> String {
    let bound = columns.iter().map(|(name, _)| *name).collect::<Vec<_>>();
    let names = bound
        .iter()
        .chain(computed.iter().map(|(name, _)| name))
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    let select = std::iter::once("u.*")
        .chain(computed.iter().map(|(_, expr)| *expr))
        .collect::<Vec<_>>()
        .join(", ");
    let arrays = columns
        .iter()
        .enumerate()
        .map(|(i, (_, ty))| format!("${}::{ty}[]", i + 1))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "INSERT INTO {table} AS t ({names}) SELECT {select} FROM UNNEST({arrays}) AS u({})",
        bound.join(", ")
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Max(i32, &'static str);

    impl Merge for Max {
        fn merge(&mut self, later: Self) {
            if later.0 > self.0 {
                *self = later;
            }
        }
    }

    #[test]
    fn one_row_per_key_in_first_seen_order() {
        let mut fold = Fold::default();
        fold.add("b", Max(1, "b1"));
        fold.add("a", Max(5, "a5"));
        fold.add("b", Max(3, "b3"));
        fold.add("b", Max(3, "b3 again, a tie keeps the first"));
        assert_eq!(fold.rows(), &[Max(3, "b3"), Max(5, "a5")]);
        let mut first_wins = Fold::default();
        first_wins.add_first(1, "x");
        first_wins.add_first(1, "y");
        assert_eq!(first_wins.rows(), &["x"]);
    }

    #[test]
    fn least_skips_nulls_like_postgres() {
        assert_eq!(least(Some(2), Some(1)), Some(1));
        assert_eq!(least(None, Some(1)), Some(1));
        assert_eq!(least(Some(2), None), Some(2));
        assert_eq!(least::<i32>(None, None), None);
    }

    #[test]
    fn insert_unnest_numbers_the_arrays_in_column_order() {
        assert_eq!(
            insert_unnest("jobs", &[("tenant_id", "text"), ("job_id", "uuid")]),
            "INSERT INTO jobs AS t (tenant_id, job_id) SELECT u.* \
             FROM UNNEST($1::text[], $2::uuid[]) AS u(tenant_id, job_id)"
        );
        assert_eq!(
            insert_unnest_with("l", &[("at", "timestamptz")], &[("day", "date(u.at)")]),
            "INSERT INTO l AS t (at, day) SELECT u.*, date(u.at) FROM UNNEST($1::timestamptz[]) AS u(at)"
        );
    }
}

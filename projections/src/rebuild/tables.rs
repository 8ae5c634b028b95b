//! The tables a rebuild writes: created empty with only their unique indexes, given the
//! live tables' other indexes once the bulk of the log is in, and renamed into place with
//! the live names of their indexes and primary key.
//!
//! Why: a secondary index maintained row by row is most of what an upsert costs (the jobs
//! table has four); built once from the filled table it costs a sort. The unique indexes
//! stay from the start because the upserts' `ON CONFLICT` needs them.

use sqlx::{PgConnection, PgPool};

use crate::error::ProjectionError;
use crate::view::{Tables, View};

/// Drops what an earlier, unfinished rebuild left and creates empty copies of the tables
/// with only their unique indexes (the primary key).
pub(super) async fn prepare(pool: &PgPool, views: &[View]) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    for view in views {
        for table in view.tables() {
            let copy = Tables::Rebuild.name(table);
            sqlx::query(&format!("DROP TABLE IF EXISTS {copy}"))
                .execute(&mut *tx)
                .await?;
            sqlx::query(&format!("CREATE TABLE {copy} (LIKE {table} INCLUDING ALL)"))
                .execute(&mut *tx)
                .await?;
            for index in secondary_indexes(&mut tx, &copy).await? {
                sqlx::query(&format!("DROP INDEX {}", index.name))
                    .execute(&mut *tx)
                    .await?;
            }
        }
        sqlx::query("DELETE FROM projection_offsets WHERE projection = $1")
            .bind(view.offsets_key(Tables::Rebuild))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await
}

/// Gives the rebuilt tables the live tables' secondary indexes, under temporary names
/// ([`swap_names`] gives them the live ones). Safe to repeat.
pub(super) async fn build_indexes(pool: &PgPool, views: &[View]) -> Result<(), ProjectionError> {
    let mut conn = pool.acquire().await?;
    for view in views {
        for table in view.tables() {
            let copy = Tables::Rebuild.name(table);
            for (n, index) in secondary_indexes(&mut conn, table)
                .await?
                .iter()
                .enumerate()
            {
                let sql = index.definition_on(table, &copy, &temporary_name(&copy, n))?;
                sqlx::query(&sql).execute(&mut *conn).await?;
            }
        }
    }
    Ok(())
}

/// Inside the swap, once `table` is the rebuilt table and the old one is dropped: its
/// indexes and primary key take the names the live ones had (`live`, read before the swap).
pub(super) async fn swap_names(
    conn: &mut PgConnection,
    table: &str,
    live: &LiveNames,
) -> Result<(), sqlx::Error> {
    let copy = Tables::Rebuild.name(table);
    for (n, name) in live.indexes.iter().enumerate() {
        let temporary = temporary_name(&copy, n);
        sqlx::query(&format!(
            "ALTER INDEX IF EXISTS {temporary} RENAME TO {name}"
        ))
        .execute(&mut *conn)
        .await?;
    }
    if let (Some(live), Some(now)) = (&live.primary_key, primary_key(conn, table).await?) {
        if *live != now {
            sqlx::query(&format!(
                "ALTER TABLE {table} RENAME CONSTRAINT {now} TO {live}"
            ))
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(())
}

/// The names of a live table's secondary indexes (in the order [`build_indexes`] numbers
/// them) and of its primary key.
#[derive(Debug)]
pub(super) struct LiveNames {
    indexes: Vec<String>,
    primary_key: Option<String>,
}

pub(super) async fn live_names(
    conn: &mut PgConnection,
    table: &str,
) -> Result<LiveNames, sqlx::Error> {
    Ok(LiveNames {
        indexes: secondary_indexes(conn, table)
            .await?
            .into_iter()
            .map(|i| i.name)
            .collect(),
        primary_key: primary_key(conn, table).await?,
    })
}

fn temporary_name(copy: &str, n: usize) -> String {
    format!("{copy}_ix{n}")
}

/// A non-unique index of a table.
struct Index {
    name: String,
    /// `CREATE INDEX name ON schema.table USING ...`, as Postgres prints it.
    definition: String,
}

impl Index {
    /// The definition for another table of the same schema, under another name.
    fn definition_on(
        &self,
        table: &str,
        copy: &str,
        name: &str,
    ) -> Result<String, ProjectionError> {
        let head = format!("CREATE INDEX {} ON ", self.name);
        let rest = self
            .definition
            .strip_prefix(&head)
            .ok_or_else(|| unexpected(&self.definition))?;
        // `schema.table USING ...`: the table name is the one before ` USING `.
        let (target, tail) = rest
            .split_once(" USING ")
            .ok_or_else(|| unexpected(&self.definition))?;
        let schema = target
            .strip_suffix(table)
            .ok_or_else(|| unexpected(&self.definition))?;
        Ok(format!(
            "CREATE INDEX IF NOT EXISTS {name} ON {schema}{copy} USING {tail}"
        ))
    }
}

fn unexpected(definition: &str) -> ProjectionError {
    ProjectionError::Rebuild(format!("unexpected index definition: {definition}"))
}

/// The non-unique indexes of a table, by name.
async fn secondary_indexes(
    conn: &mut PgConnection,
    table: &str,
) -> Result<Vec<Index>, sqlx::Error> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, pg_get_indexdef(i.indexrelid)
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = $1::regclass AND NOT i.indisunique
         ORDER BY c.relname",
    )
    .bind(table)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(name, definition)| Index { name, definition })
        .collect())
}

async fn primary_key(conn: &mut PgConnection, table: &str) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT conname::text FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'",
    )
    .bind(table)
    .fetch_optional(&mut *conn)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_definition_moves_to_the_copy_under_a_new_name() {
        let index = Index {
            name: "launches_missing".into(),
            definition: "CREATE INDEX launches_missing ON public.launches USING btree \
                         (tenant_id, missing_at, launch_id) WHERE ((missing_at IS NOT NULL) \
                         AND (resolution IS NULL))"
                .into(),
        };
        assert_eq!(
            index
                .definition_on("launches", "launches__rebuild", "launches__rebuild_ix0")
                .ok(),
            Some(
                "CREATE INDEX IF NOT EXISTS launches__rebuild_ix0 ON public.launches__rebuild \
                 USING btree (tenant_id, missing_at, launch_id) WHERE ((missing_at IS NOT NULL) \
                 AND (resolution IS NULL))"
                    .into()
            )
        );
        let odd = Index {
            name: "x".into(),
            definition: "CREATE INDEX y ON public.t USING btree (a)".into(),
        };
        assert!(odd.definition_on("t", "t__rebuild", "n").is_err());
    }
}

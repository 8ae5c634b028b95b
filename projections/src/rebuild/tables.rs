//! The tables a rebuild writes: created empty without any index (those a load upserts
//! into keep their primary key), given the live tables'
//! primary keys once the first chunk is copied in ([`build_keys`]: later chunks and the
//! swap upsert, and `ON CONFLICT` needs them) and their other indexes once the whole log
//! is in ([`build_indexes`]), and renamed into place with the live names of their indexes
//! and primary key.
//!
//! Why: an index maintained row by row is most of what a load costs (the jobs table has
//! seven, and a key of random UUIDs touches a random leaf per row); built once from the
//! filled table it costs a sort. Each table is indexed on a connection of its own, so
//! Postgres builds them on every core.

use sqlx::{PgConnection, PgPool};

use crate::error::ProjectionError;
use crate::view::{Tables, View};

/// Drops what an earlier, unfinished rebuild left and creates empty copies of the tables
/// without indexes (nor the primary key, which is one).
pub(super) async fn prepare(pool: &PgPool, views: &[View]) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    for view in views {
        for table in view.tables() {
            let copy = Tables::Rebuild.name(table);
            sqlx::query(&format!("DROP TABLE IF EXISTS {copy}"))
                .execute(&mut *tx)
                .await?;
            if crate::apply::COPIED.contains(table) {
                sqlx::query(&format!(
                    "CREATE TABLE {copy} (LIKE {table} INCLUDING ALL EXCLUDING INDEXES)"
                ))
                .execute(&mut *tx)
                .await?;
            } else {
                // Upserted from the start: its key stays, its other indexes come later.
                sqlx::query(&format!("CREATE TABLE {copy} (LIKE {table} INCLUDING ALL)"))
                    .execute(&mut *tx)
                    .await?;
                for index in secondary_indexes(&mut tx, &copy).await? {
                    sqlx::query(&format!("DROP INDEX {}", index.name))
                        .execute(&mut *tx)
                        .await?;
                }
            }
        }
        sqlx::query("DELETE FROM projection_offsets WHERE projection = $1")
            .bind(view.offsets_key(Tables::Rebuild))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await
}

/// Gives the rebuilt tables the live tables' primary keys. Safe to repeat.
pub(super) async fn build_keys(pool: &PgPool, views: &[View]) -> Result<(), ProjectionError> {
    for_each_table(pool, views, Step::Key).await
}

/// Gives the rebuilt tables the live tables' secondary indexes, under temporary names
/// ([`swap_names`] gives them the live ones). Safe to repeat.
pub(super) async fn build_indexes(pool: &PgPool, views: &[View]) -> Result<(), ProjectionError> {
    for_each_table(pool, views, Step::Indexes).await
}

#[derive(Clone, Copy)]
enum Step {
    Key,
    Indexes,
}

/// Tables indexed at once: enough to keep two cores busy, few enough that their sorts'
/// memory (`maintenance_work_mem` each) stays small.
const AT_ONCE: usize = 3;

/// Runs `step` for every table of `views`, [`AT_ONCE`] tables at a time, each on a
/// connection of its own; the first error is returned once all have finished.
async fn for_each_table(pool: &PgPool, views: &[View], step: Step) -> Result<(), ProjectionError> {
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(AT_ONCE));
    let mut tasks = tokio::task::JoinSet::new();
    for view in views {
        for &table in view.tables() {
            let pool = pool.clone();
            let permits = permits.clone();
            tasks.spawn(async move {
                let _permit = permits.acquire_owned().await;
                let mut conn = pool.acquire().await?;
                match step {
                    Step::Key => add_key(&mut conn, table).await,
                    Step::Indexes => add_indexes(&mut conn, table).await,
                }
            });
        }
    }
    let mut first = Ok(());
    while let Some(done) = tasks.join_next().await {
        let result = match done {
            Ok(result) => result,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        if let Err(e) = result {
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}

/// The live table's primary key on its copy, unless it has one.
async fn add_key(conn: &mut PgConnection, table: &'static str) -> Result<(), ProjectionError> {
    let copy = Tables::Rebuild.name(table);
    if primary_key(conn, &copy).await?.is_some() {
        return Ok(());
    }
    let definition: Option<String> = sqlx::query_scalar(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint
         WHERE conrelid = $1::regclass AND contype = 'p'",
    )
    .bind(table)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(definition) = definition {
        // `PRIMARY KEY (a, b)`: columns of the same names on the copy.
        sqlx::query(&format!("ALTER TABLE {copy} ADD {definition}"))
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

async fn add_indexes(conn: &mut PgConnection, table: &'static str) -> Result<(), ProjectionError> {
    let copy = Tables::Rebuild.name(table);
    for (n, index) in secondary_indexes(conn, table).await?.iter().enumerate() {
        let sql = index.definition_on(table, &copy, &temporary_name(&copy, n))?;
        sqlx::query(&sql).execute(&mut *conn).await?;
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

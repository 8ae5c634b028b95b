//! A benchmark's own database, `callstream_bench_<bench>_<id>`, created
//! through the server's `postgres` database (as the projections tests'
//! `TestDb` does) with the workspace's migrations applied, and dropped
//! afterwards (unless the bench is told to keep it), so a run never reads or
//! disturbs another's rows.

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, Result};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::ConnectOptions;

/// A database of this run.
pub struct BenchDb {
    pub name: String,
    pub url: String,
    pub pool: PgPool,
    server: String,
}

/// `url` with its database name replaced by `database` (query kept).
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let base = match base.rfind('/') {
        // Past "postgres://": a path follows the authority.
        Some(i) if i > base.find("//").map_or(0, |j| j + 1) => &base[..i],
        _ => base,
    };
    match query {
        Some(query) => format!("{base}/{database}?{query}"),
        None => format!("{base}/{database}"),
    }
}

/// `url` without its credentials, for messages.
pub fn shown(url: &str) -> &str {
    url.rsplit_once('@').map_or(url, |(_, host)| host)
}

async fn connect(url: &str, connections: u32) -> Result<PgPool> {
    let options = PgConnectOptions::from_str(url)
        .with_context(|| format!("{} is not a Postgres URL", shown(url)))?
        // The bulk inserts are slow on purpose; sqlx would warn of each.
        .disable_statement_logging();
    PgPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await
        .with_context(|| {
            format!(
                "cannot connect to Postgres at {} (is the stack up? `cargo xtask up`)",
                shown(url)
            )
        })
}

impl BenchDb {
    /// Creates the database of bench `bench` next to the one `database_url` names and
    /// migrates it.
    pub async fn create(database_url: &str, bench: &str) -> Result<Self> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("callstream_bench_{bench}_{}", &id[..12]);
        let server = with_database(database_url, "postgres");
        let maintenance = connect(&server, 1).await?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&maintenance)
            .await
            .with_context(|| format!("creating the database {name}"))?;
        maintenance.close().await;
        let url = with_database(database_url, &name);
        let pool = connect(&url, 4).await?;
        callstream_projections::migrate(&pool)
            .await
            .context("applying the migrations")?;
        Ok(Self {
            name,
            url,
            pool,
            server,
        })
    }

    /// Drops the database (its connections forced closed).
    pub async fn drop_database(self) {
        self.pool.close().await;
        let dropped = async {
            let maintenance = connect(&self.server, 1).await?;
            sqlx::query(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .execute(&maintenance)
            .await?;
            maintenance.close().await;
            anyhow::Ok(())
        };
        if let Err(error) = dropped.await {
            tracing::warn!(%error, database = %self.name, "dropping the benchmark database failed");
        }
    }
}

/// `(physical topic, partition)` -> the next offset every live view reading
/// it has applied: a record there is visible in every view once its offset
/// is below this.
pub type Visible = HashMap<(String, i32), i64>;

/// Reads [`Visible`] for the live views named `keys`.
pub async fn visible(pool: &PgPool, keys: &[String]) -> Result<Visible, sqlx::Error> {
    let rows: Vec<(String, i32, i64)> = sqlx::query_as(
        "SELECT topic, partition, min(next_offset) FROM projection_offsets
         WHERE projection = ANY($1) GROUP BY topic, partition",
    )
    .bind(keys)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(t, p, o)| ((t, p), o)).collect())
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_name_is_replaced() {
        let cases = [
            (
                "postgres://postgres@127.0.0.1:5432/callstream",
                "postgres://postgres@127.0.0.1:5432/x",
            ),
            (
                "postgres://u:p@h/callstream?sslmode=disable",
                "postgres://u:p@h/x?sslmode=disable",
            ),
            ("postgres://h:5432", "postgres://h:5432/x"),
        ];
        for (url, want) in cases {
            assert_eq!(with_database(url, "x"), want, "{url}");
        }
    }
}

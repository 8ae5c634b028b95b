//! The run's own Postgres database: `callstream_demo_<run id>` on the server
//! of `DATABASE_URL`, created (and migrated) before any role starts.
//!
//! Why a database per run: the views are keyed by tenant, not by topic
//! prefix, so two runs (or a run and a test) sharing one database would mix
//! their rows and their stored offsets. With its own database a run's views
//! hold exactly what its topics hold, and `--clean-up` drops it whole.

use anyhow::{Context, Result};
use sqlx::postgres::{PgPool, PgPoolOptions};
use std::time::Duration;

/// A `DATABASE_URL` the demo cannot derive a database URL from.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not a postgres:// URL")]
pub struct NotAPostgresUrl(pub String);

/// The database name of a run: lower case, `_` for anything else, so it
/// needs no quoting rules beyond the double quotes it always gets.
pub fn database_name(run_id: &str) -> String {
    let id: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("callstream_demo_{id}")
}

/// `base` with its database replaced by `database` (user, host, port and
/// query parameters kept).
pub fn with_database(base: &str, database: &str) -> Result<String, NotAPostgresUrl> {
    let bad = || NotAPostgresUrl(base.to_owned());
    let (scheme, rest) = base.split_once("://").ok_or_else(bad)?;
    if scheme != "postgres" && scheme != "postgresql" {
        return Err(bad());
    }
    let (location, query) = match rest.split_once('?') {
        Some((l, q)) => (l, Some(q)),
        None => (rest, None),
    };
    let authority = location.split_once('/').map_or(location, |(a, _)| a);
    if authority.is_empty() {
        return Err(bad());
    }
    let mut url = format!("{scheme}://{authority}/{database}");
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    Ok(url)
}

async fn connect(url: &str) -> Result<PgPool> {
    PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .with_context(|| format!("connecting to Postgres at {}", redact(url)))
}

/// `url` without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, rest)), Some(_)) => {
            let (userinfo, host) = rest.rsplit_once('@').unwrap_or(("", rest));
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}@{host}")
        }
        _ => url.to_owned(),
    }
}

/// Creates the run's database on the server of `base_url`, applies the
/// migrations, and returns a pool on it.
pub async fn create(base_url: &str, name: &str) -> Result<PgPool> {
    let admin = connect(base_url).await?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(name)
            .fetch_one(&admin)
            .await
            .context("looking for the run's database")?;
    if !exists {
        sqlx::query(&format!("CREATE DATABASE \"{name}\""))
            .execute(&admin)
            .await
            .with_context(|| format!("creating database {name}"))?;
    }
    admin.close().await;
    let pool = connect(&with_database(base_url, name)?).await?;
    callstream_projections::migrate(&pool)
        .await
        .with_context(|| format!("applying the migrations to {name}"))?;
    Ok(pool)
}

/// Drops the run's database (its connections are closed first).
pub async fn drop(base_url: &str, name: &str) -> Result<()> {
    let admin = connect(base_url).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(&admin)
        .await
        .with_context(|| format!("dropping database {name}"))?;
    admin.close().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_databases_have_plain_names() {
        assert_eq!(
            database_name("1203-083001-Ab9f"),
            "callstream_demo_1203_083001_ab9f"
        );
    }

    #[test]
    fn the_database_is_swapped_and_the_rest_kept() {
        let cases = [
            (
                "postgres://postgres@127.0.0.1:5432/callstream",
                Some("postgres://postgres@127.0.0.1:5432/d"),
            ),
            (
                "postgresql://u:p@h/x?sslmode=disable",
                Some("postgresql://u:p@h/d?sslmode=disable"),
            ),
            ("postgres://h:5432", Some("postgres://h:5432/d")),
            (
                "postgres://h?application_name=a",
                Some("postgres://h/d?application_name=a"),
            ),
            ("mysql://h/x", None),
            ("postgres:///x", None),
            ("nonsense", None),
        ];
        for (base, expected) in cases {
            assert_eq!(with_database(base, "d").ok().as_deref(), expected, "{base}");
        }
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(redact("postgres://u:secret@h:1/d"), "postgres://u@h:1/d");
        assert_eq!(redact("postgres://h/d"), "postgres://h/d");
    }
}

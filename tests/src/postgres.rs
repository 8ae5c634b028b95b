//! A Postgres database of a test's own on the dev stack's server, so tests that write views
//! run in parallel without seeing each other's rows.

use anyhow::{Context, Result};
use sqlx::postgres::{PgPool, PgPoolOptions};

/// A fresh database, dropped (with `FORCE`) when this is dropped. Empty: the caller applies
/// the migrations it needs.
pub struct TestDatabase {
    pub name: String,
    pub url: String,
    pub pool: PgPool,
}

/// The URL of `database` on the server of [`crate::database_url`].
pub fn server_url(database: &str) -> String {
    let url = crate::database_url();
    match url.rfind('/') {
        Some(i) => format!("{}/{database}", &url[..i]),
        None => url,
    }
}

impl TestDatabase {
    /// Creates `<prefix>_<random>` (a valid unquoted identifier when `prefix` is one) and a
    /// pool of four connections to it.
    pub async fn create(prefix: &str) -> Result<Self> {
        let name = crate::unique_name(prefix).replace('-', "_");
        let maintenance = PgPoolOptions::new()
            .max_connections(1)
            .connect(&server_url("postgres"))
            .await
            .context("connecting to the postgres maintenance database")?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&maintenance)
            .await
            .with_context(|| format!("creating database {name}"))?;
        maintenance.close().await;
        let url = server_url(&name);
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(&url)
            .await
            .with_context(|| format!("connecting to {name}"))?;
        Ok(Self { name, url, pool })
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let name = self.name.clone();
        let pool = self.pool.clone();
        // Drop runs outside async (and often as the test's runtime ends): a thread with a
        // runtime of its own does the async work.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                pool.close().await;
                if let Ok(m) = PgPoolOptions::new()
                    .max_connections(1)
                    .connect(&server_url("postgres"))
                    .await
                {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&m)
                        .await;
                }
            });
        })
        .join();
    }
}

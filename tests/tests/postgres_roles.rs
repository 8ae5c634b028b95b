//! Postgres without a superuser (`callstream db roles`): on a database of its own, with roles
//! of its own, the owner migrates, the operator API reads every view through its real HTTP
//! routes and writes its tokens but cannot write a view, and the projections write and rebuild
//! their views (the rebuilt table still readable by the API) but cannot read the token table.

use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_e2e::cluster;
use callstream_e2e::postgres::{server_url, TestDatabase};
use callstream_operator_api::{auth, OperatorApiConfig, Role};
use callstream_platform::{admin, KafkaSettings, Topics};
use callstream_projections::roles::{self, table_kind, RoleNames, TableKind};
use callstream_projections::{ProjectionsConfig, View};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

/// A pool on the test database as `role`. The dev server trusts loopback, so no password is
/// checked here; the cluster's Postgres (`xtask up --cluster`) checks them.
async fn pool_as(db: &TestDatabase, role: &str) -> Result<PgPool> {
    let options = PgConnectOptions::from_str(&db.url)?.username(role);
    Ok(PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await?)
}

fn url_as(db: &TestDatabase, role: &str) -> String {
    db.url.replacen("postgres@", &format!("{role}@"), 1)
}

/// The SQLSTATE of a failed statement, or what succeeded.
async fn sqlstate(pool: &PgPool, sql: &str) -> Result<String> {
    match sqlx::query(sql).execute(pool).await {
        Ok(_) => Ok("ok".to_string()),
        Err(sqlx::Error::Database(e)) => Ok(e.code().unwrap_or_default().to_string()),
        Err(e) => Err(e).context(sql.to_string()),
    }
}

const DENIED: &str = "42501";

async fn drop_roles(names: &RoleNames) -> Result<()> {
    let maintenance = PgPool::connect(&server_url("postgres")).await?;
    for role in names.all() {
        sqlx::query(&format!("DROP ROLE IF EXISTS {role}"))
            .execute(&maintenance)
            .await
            .with_context(|| format!("dropping {role}"))?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_role_reaches_only_its_own_tables() -> Result<()> {
    let db = TestDatabase::create("callstream_roles").await?;
    let prefix = callstream_e2e::unique_name("r").replace('-', "_");
    let names = RoleNames::with_prefix(&prefix)?;
    let outcome = check_roles(&db, &names).await;
    db.pool.close().await;
    drop(db);
    drop_roles(&names).await?;
    outcome
}

async fn check_roles(db: &TestDatabase, names: &RoleNames) -> Result<()> {
    // The administrator makes the roles on an empty database; the owner migrates.
    let granted = roles::apply(&db.pool, names, |_| Some("not-checked-here".into())).await?;
    assert_eq!(granted, 0, "an empty database has no tables to grant");
    let owner = pool_as(db, &names.owner).await?;
    let migrated = roles::migrate_and_grant(&owner, names).await?;
    let tables = roles::migration_tables();
    assert_eq!(migrated.tables_granted, Some(tables.len()), "{tables:?}");
    let privileged: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_roles WHERE rolname = ANY($1) \
         AND (rolsuper OR rolcreaterole OR rolcreatedb OR NOT rolcanlogin)",
    )
    .bind(names.all().map(str::to_string).to_vec())
    .fetch_one(&owner)
    .await?;
    assert_eq!(privileged, 0, "a role is privileged or cannot log in");

    let operator = pool_as(db, &names.operator).await?;
    let projections = pool_as(db, &names.projections).await?;
    // Both start on the migrated schema without being allowed to migrate.
    callstream_projections::migrate_if_behind(&operator).await?;
    callstream_projections::migrate_if_behind(&projections).await?;

    for table in &tables {
        let kind = table_kind(table);
        let write = format!("DELETE FROM {table}");
        let read = format!("SELECT * FROM {table} LIMIT 1");
        match kind {
            TableKind::View => {
                assert_eq!(
                    sqlstate(&operator, &write).await?,
                    DENIED,
                    "operator: {write}"
                );
                assert_eq!(sqlstate(&operator, &read).await?, "ok", "operator: {read}");
                assert_eq!(
                    sqlstate(&projections, &write).await?,
                    "ok",
                    "projections: {write}"
                );
            }
            TableKind::Operator => {
                assert_eq!(
                    sqlstate(&projections, &read).await?,
                    DENIED,
                    "projections: {read}"
                );
                assert_eq!(
                    sqlstate(&projections, &write).await?,
                    DENIED,
                    "projections: {write}"
                );
                assert_eq!(sqlstate(&operator, &read).await?, "ok", "operator: {read}");
            }
            TableKind::Owner => {
                assert_eq!(
                    sqlstate(&operator, &write).await?,
                    DENIED,
                    "operator: {write}"
                );
                assert_eq!(
                    sqlstate(&projections, &write).await?,
                    DENIED,
                    "projections: {write}"
                );
            }
        }
    }
    for sql in [
        "INSERT INTO jobs (tenant_id, job_id) SELECT tenant_id, job_id FROM jobs",
        "UPDATE jobs SET tenant_id = tenant_id",
        "TRUNCATE jobs",
        "DROP TABLE jobs",
        "CREATE TABLE operator_scratch (x int)",
    ] {
        let state = sqlstate(&operator, sql).await?;
        assert_eq!(state, DENIED, "operator ran {sql}");
    }

    // The token commands work as the operator (create, then revoke).
    let token = auth::create_token(&operator, "acme", Role::Operator, "roles-test").await?;
    assert!(auth::revoke_token(&operator, token.token_id).await?);
    let live = auth::create_token(&operator, "acme", Role::Operator, "roles-test").await?;

    // The projections rebuild a view as their own role: the copy and the swap need its
    // ownership, and the API can still read the table that replaced the old one.
    let topics = Topics::with_prefix(format!("{}-", callstream_e2e::unique_name("roles")));
    let kafka = KafkaSettings::new(callstream_e2e::bootstrap_servers(), "roles-test");
    let mut small = topics.clone();
    small.partitions = 1;
    admin::ensure_topics(&kafka, &small.specs()).await?;
    let config = ProjectionsConfig::new(url_as(db, &names.projections), kafka.clone(), small);
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        callstream_projections::rebuild(config, &[View::Jobs], false),
    )
    .await
    .context("the rebuild as the projections role did not finish in 60 s")??;
    assert_eq!(report.views, vec![View::Jobs]);
    let owner_of_jobs: String =
        sqlx::query_scalar("SELECT tableowner::text FROM pg_tables WHERE tablename = 'jobs'")
            .fetch_one(&owner)
            .await?;
    assert_eq!(owner_of_jobs, names.projections);
    assert_eq!(
        sqlstate(&operator, "SELECT * FROM jobs LIMIT 1").await?,
        "ok"
    );
    assert_eq!(sqlstate(&operator, "DELETE FROM jobs").await?, DENIED);

    // The operator API itself, as the operator role: every read of a view answers 200.
    let mut api = OperatorApiConfig::new(url_as(db, &names.operator), kafka, topics);
    api.listen = "127.0.0.1:0".parse()?;
    let state = callstream_operator_api::state(&api)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(callstream_operator_api::serve(listener, state, async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    for path in [
        "/v1/jobs",
        "/v1/exceptions",
        "/v1/slots?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z",
        "/v1/launches/missing",
        "/v1/delivery?from=2026-01-01T00:00:00Z&to=2026-01-01T12:00:00Z",
        "/v1/control",
        "/v1/audit",
        "/v1/summary",
        "/v1/dead-letters",
    ] {
        let answer = client
            .get(format!("http://{addr}{path}"))
            .bearer_auth(&live.token)
            .send()
            .await?;
        let status = answer.status();
        println!("GET {path} as {}: {status}", names.operator);
        if !status.is_success() {
            bail!(
                "{path} answered {status} as the operator role: {}",
                answer.text().await?
            );
        }
    }
    let _ = stop.send(());
    server.await??;
    Ok(())
}

/// `callstream operator-api` with `url`: it must stop at start (within 60 s), and say why on
/// stderr.
fn operator_api_refuses(url: &str) -> Result<String> {
    let stderr_path = std::env::temp_dir().join(callstream_e2e::unique_name("operator-api-err"));
    let mut child = std::process::Command::new(callstream_e2e::callstream_bin()?)
        .arg("operator-api")
        .env("DATABASE_URL", url)
        .env_remove("DATABASE_URL_FILE")
        .env("RUST_BACKTRACE", "0")
        .env("CALLSTREAM_OPERATOR_API_LISTEN", "127.0.0.1:0")
        .env("CALLSTREAM_OPERATOR_API_ADMIN_LISTEN", "127.0.0.1:0")
        .env(
            "KAFKA_BOOTSTRAP_SERVERS",
            callstream_e2e::bootstrap_servers(),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path)?)
        .spawn()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let _ = std::fs::remove_file(&stderr_path);
    match status {
        Some(status) if !status.success() => Ok(stderr),
        _ => bail!("the operator API started with {url}: {stderr}"),
    }
}

/// On the cluster's Postgres (TLS and SCRAM only): each role's URL connects over TLS with the
/// server verified by name, and the roles keep to their tables there too; no TLS, a wrong
/// password and an unknown CA are each refused, and the operator API stops at start naming
/// which. Run in the cluster phase of `cargo xtask test`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs `cargo xtask up --cluster`"]
async fn on_the_cluster_postgres_takes_only_tls_with_the_right_password() -> Result<()> {
    let url_of = |role: &str| cluster::secret(&format!("{role}.database-url"));
    let operator_url = url_of("callstream_operator")?;
    let operator = PgPool::connect(&operator_url).await?;
    let tls: bool = sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .fetch_one(&operator)
        .await?;
    assert!(tls, "the operator's connection is not TLS");
    assert_eq!(sqlstate(&operator, "DELETE FROM jobs").await?, DENIED);
    assert_eq!(
        sqlstate(&operator, "SELECT * FROM jobs LIMIT 1").await?,
        "ok"
    );
    let projections = PgPool::connect(&url_of("callstream_projections")?).await?;
    assert_eq!(
        sqlstate(&projections, "SELECT * FROM api_tokens").await?,
        DENIED
    );
    let superusers: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'callstream\\_%' AND rolsuper",
    )
    .fetch_one(&operator)
    .await?;
    assert_eq!(superusers, 0);

    let without_tls = operator_url.replace("sslmode=verify-full", "sslmode=disable");
    let why = operator_api_refuses(&without_tls)?;
    assert!(
        why.contains("does not let user") && why.contains("no encryption"),
        "{why}"
    );
    let password = cluster::secret("callstream_operator.password")?;
    let wrong_password = operator_url.replacen(password.trim(), "not-the-password", 1);
    let why = operator_api_refuses(&wrong_password)?;
    assert!(why.contains("refused the password"), "{why}");
    let unknown_ca = operator_url
        .split("&sslrootcert=")
        .next()
        .unwrap_or_default()
        .to_string();
    let why = operator_api_refuses(&unknown_ca)?;
    assert!(why.contains("TLS handshake"), "{why}");
    Ok(())
}

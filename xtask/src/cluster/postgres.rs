//! The cluster's Postgres: a second server beside the dev one, on 127.0.0.1:5433, that takes
//! only TLS connections with SCRAM passwords (no `trust`, no Unix socket), holding
//! callstream's database with the roles of `callstream db roles`, so no service is a
//! superuser there.
//!
//! It presents the cluster's host certificate (`tls/broker.pem`, for IP:127.0.0.1 and
//! DNS:localhost), so clients verify it with the same `tls/ca.pem` as the brokers. The
//! superuser `postgres` and each role get a random password in `secrets/<role>.password`;
//! `secrets/<role>.database-url` holds the whole URL for `DATABASE_URL_FILE`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::tls::TlsFiles;
use super::{password_file, private_dir, read_password, write_private};
use crate::layout::{Layout, POSTGRES_DB, POSTGRES_HOST, POSTGRES_USER};
use crate::postgres::{
    as_server_user, bin_or_install, ensure_database_with, find_bin, give_to_server_user,
    pg_ctl_start, pg_ctl_stop, server_pid,
};
use crate::procs;

pub const PORT: u16 = 5433;
/// The administrator's secret file is `postgres-admin.password` (not `postgres`, which
/// would read as a Kafka user's).
const ADMIN_SECRET: &str = "postgres-admin";
/// The roles `callstream db roles` makes, with its default prefix.
pub const ROLES: [&str; 3] = [
    "callstream_owner",
    "callstream_projections",
    "callstream_operator",
];

fn dir(layout: &Layout) -> PathBuf {
    layout.cluster_postgres_dir()
}

fn data(layout: &Layout) -> PathBuf {
    dir(layout).join("data")
}

pub fn log(layout: &Layout) -> PathBuf {
    dir(layout).join("postgres.log")
}

/// `secrets/<role>.database-url`: what `DATABASE_URL_FILE` names for a service.
pub fn url_file(layout: &Layout, role: &str) -> PathBuf {
    layout
        .cluster_secrets()
        .join(format!("{role}.database-url"))
}

/// The URL of callstream's database as `role` (`postgres` for the administrator), TLS with
/// the certificate verified against the cluster's CA.
pub fn database_url(layout: &Layout, role: &str, password: &str) -> String {
    let ca = TlsFiles::in_dir(&layout.cluster_tls()).ca;
    format!(
        "postgres://{role}:{password}@{POSTGRES_HOST}:{PORT}/{POSTGRES_DB}\
         ?sslmode=verify-full&sslrootcert={}",
        ca.display()
    )
}

fn our_pid(layout: &Layout) -> Option<u32> {
    server_pid(&data(layout))
}

fn secret(layout: &Layout, name: &str) -> Result<String> {
    let file = password_file(layout, name);
    match read_password(&file) {
        Some(password) => Ok(password),
        None => super::make_password(&file),
    }
}

/// Settings appended to postgresql.conf at creation.
fn settings() -> String {
    format!(
        "\n# callstream cluster (written by `cargo xtask up --cluster`)\n\
         listen_addresses = '{POSTGRES_HOST}'\n\
         port = {PORT}\n\
         unix_socket_directories = ''\n\
         max_connections = 100\n\
         ssl = on\n\
         ssl_cert_file = 'server.crt'\n\
         ssl_key_file = 'server.key'\n\
         ssl_min_protocol_version = 'TLSv1.2'\n\
         password_encryption = 'scram-sha-256'\n"
    )
}

/// Only TLS with a SCRAM password; anything else is refused by name.
const HBA: &str = "# callstream cluster: TLS and SCRAM only\n\
                   hostssl all all 127.0.0.1/32 scram-sha-256\n\
                   hostnossl all all 127.0.0.1/32 reject\n";

fn init(layout: &Layout, admin_password: &str) -> Result<()> {
    let data = data(layout);
    if data.join("PG_VERSION").exists() {
        return Ok(());
    }
    if data.exists() {
        fs::remove_dir_all(&data)?;
    }
    let bin = bin_or_install()?;
    fs::create_dir_all(dir(layout))?;
    // initdb reads the superuser's password from a file the server's user can read; it is
    // deleted as soon as initdb is done.
    let pwfile = dir(layout).join("initdb.pw");
    write_private(&pwfile, admin_password)?;
    give_to_server_user(&dir(layout))?;
    println!(
        "cluster: creating a Postgres cluster in {} (TLS and SCRAM only)",
        layout.show(&data)
    );
    let mut initdb = as_server_user(&bin.tool("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-U", POSTGRES_USER, "--auth=scram-sha-256", "--pwfile"])
        .arg(&pwfile)
        .args(["--encoding=UTF8", "--locale=C"]);
    let result = procs::run_captured(&mut initdb, "initdb");
    let _ = fs::remove_file(&pwfile);
    result?;

    let tls = TlsFiles::in_dir(&layout.cluster_tls());
    fs::copy(&tls.broker_chain, data.join("server.crt"))?;
    write_private(
        &data.join("server.key"),
        &fs::read_to_string(&tls.broker_key)?,
    )?;
    let conf = data.join("postgresql.conf");
    let mut text = fs::read_to_string(&conf)?;
    text.push_str(&settings());
    fs::write(&conf, text)?;
    fs::write(data.join("pg_hba.conf"), HBA)?;
    give_to_server_user(&data)?;
    Ok(())
}

/// psql as the administrator over TLS (verify-ca: libpq's host check is the services'
/// concern, and they verify the name).
fn psql(layout: &Layout, admin_password: &str, db: &str, sql: &str) -> Result<String> {
    let psql = find_bin()
        .map(|b| b.tool("psql"))
        .unwrap_or_else(|| PathBuf::from("psql"));
    let ca = TlsFiles::in_dir(&layout.cluster_tls()).ca;
    let conninfo = format!(
        "host={POSTGRES_HOST} port={PORT} user={POSTGRES_USER} dbname={db} sslmode=verify-ca \
         sslrootcert={} connect_timeout=3",
        ca.display()
    );
    let mut cmd = Command::new(psql);
    cmd.args([
        "-w",
        "-X",
        "-At",
        "-v",
        "ON_ERROR_STOP=1",
        "-d",
        &conninfo,
        "-c",
        sql,
    ])
    .env("PGPASSWORD", admin_password);
    let out = procs::run_captured(&mut cmd, "psql")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Starts the server (created at first start), then makes the database, the roles with
/// their passwords, and applies the migrations as the owner, with `callstream` (built).
pub fn up(layout: &Layout, callstream: &Path) -> Result<()> {
    let started = Instant::now();
    private_dir(&layout.cluster_secrets())?;
    let admin = secret(layout, ADMIN_SECRET)?;
    let mut passwords = Vec::new();
    for role in ROLES {
        passwords.push((role, secret(layout, role)?));
    }
    init(layout, &admin)?;
    match our_pid(layout) {
        Some(pid) => println!("cluster: Postgres already runs (pid {pid})"),
        None => pg_ctl_start(&bin_or_install()?, &data(layout), &log(layout))?,
    }
    procs::wait_for(Duration::from_secs(60), || {
        psql(layout, &admin, "postgres", "select 1")
    })
    .context("the cluster's Postgres did not answer `select 1` over TLS in time")?;
    ensure_database_with(|sql| psql(layout, &admin, "postgres", sql))?;

    let run = |args: &[&str], url: String, what: &str| -> Result<()> {
        let out = Command::new(callstream)
            .args(args)
            .env("DATABASE_URL", url)
            .env("RUST_LOG", "warn")
            .output()
            .with_context(|| format!("running {}", callstream.display()))?;
        if !out.status.success() {
            bail!(
                "{what} failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        print!("cluster: {}", String::from_utf8_lossy(&out.stdout));
        Ok(())
    };
    let secrets = layout.cluster_secrets().display().to_string();
    run(
        &["db", "roles", "--apply", "--password-dir", &secrets],
        database_url(layout, POSTGRES_USER, &admin),
        "`callstream db roles --apply` as the administrator",
    )?;
    let owner = &passwords[0];
    run(
        &["db", "migrate"],
        database_url(layout, owner.0, &owner.1),
        "`callstream db migrate` as the owner",
    )?;
    for (role, password) in &passwords {
        write_private(
            &url_file(layout, role),
            &format!("{}\n", database_url(layout, role, password)),
        )?;
    }
    println!(
        "cluster: Postgres ready at {POSTGRES_HOST}:{PORT} (TLS, SCRAM; roles {}) in {:.1?}",
        ROLES.join(", "),
        started.elapsed()
    );
    Ok(())
}

pub fn down(layout: &Layout) -> Result<()> {
    let Some(pid) = our_pid(layout) else {
        return Ok(());
    };
    pg_ctl_stop(&data(layout), "the cluster's Postgres")?;
    println!("cluster: Postgres (pid {pid}) stopped");
    Ok(())
}

pub fn describe(layout: &Layout) -> String {
    let state = match our_pid(layout) {
        Some(pid) => format!("running (pid {pid})"),
        None => "stopped".into(),
    };
    format!(
        "cluster: Postgres {state} at {POSTGRES_HOST}:{PORT} (TLS and SCRAM only), roles {}, \
         URLs in {}/<role>.database-url; log {}",
        ROLES.join(", "),
        layout.show(&layout.cluster_secrets()),
        layout.show(&log(layout))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tls_with_a_password_is_let_in() {
        let rules: Vec<&str> = HBA.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            rules,
            [
                "hostssl all all 127.0.0.1/32 scram-sha-256",
                "hostnossl all all 127.0.0.1/32 reject"
            ]
        );
        assert!(settings().contains("unix_socket_directories = ''"));
        assert!(settings().contains("ssl = on"));
    }

    #[test]
    fn urls_verify_the_server_by_name() {
        let layout = Layout::at(PathBuf::from("/repo"));
        let url = database_url(&layout, "callstream_operator", "pw");
        assert!(url.starts_with("postgres://callstream_operator:pw@127.0.0.1:5433/callstream?"));
        assert!(url.contains("sslmode=verify-full&sslrootcert=/repo/.stack/cluster/tls/ca.pem"));
    }
}

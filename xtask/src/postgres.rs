//! The dev Postgres: a cluster under `.stack/postgres` on 127.0.0.1:5432, or a server that
//! already answers there.
//!
//! PostgreSQL comes from Debian's packages when it is missing. Our cluster trusts loopback
//! connections (a dev stack, never a deployment), so every tool connects as `postgres` without
//! a password. `down` stops only the cluster in our data directory, through pg_ctl, which
//! signals the pid in that directory's postmaster.pid; a reused server is never touched.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::layout::{self, Layout, POSTGRES_DB, POSTGRES_HOST, POSTGRES_PORT, POSTGRES_USER};
use crate::procs;

const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Unix sockets paths are limited to 107 bytes; deeper checkouts go without one.
const MAX_SOCKET_PATH: usize = 100;

/// What answers on the Postgres port.
#[derive(Debug, PartialEq, Eq)]
pub enum State {
    Ours {
        pid: u32,
    },
    /// A server xtask did not start; `usable` when it lets `postgres` in without a password.
    Foreign {
        usable: bool,
    },
    Stopped,
}

/// The PostgreSQL binaries (initdb, pg_ctl, psql) of one installed major version.
pub(crate) struct Bin(PathBuf);

impl Bin {
    pub(crate) fn tool(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

/// The newest /usr/lib/postgresql/<major>/bin, else the directory of `initdb` on PATH.
pub(crate) fn find_bin() -> Option<Bin> {
    let mut majors: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((major, bin))
        })
        .collect();
    majors.sort();
    if let Some((_, bin)) = majors.pop() {
        return Some(Bin(bin));
    }
    let initdb = procs::which("initdb")?;
    Some(Bin(initdb.parent()?.to_path_buf()))
}

/// Gives `path` (recursively) to the `postgres` OS user when we are root, who runs the
/// server; otherwise we run it and own it already.
pub(crate) fn give_to_server_user(path: &Path) -> Result<()> {
    if crate::debian::running_as_root() {
        let mut chown = Command::new("chown");
        chown.arg("-R").arg(format!("{POSTGRES_USER}:")).arg(path);
        procs::run_captured(&mut chown, "chown of a Postgres state dir")?;
    }
    Ok(())
}

/// The binaries, installed from Debian's packages first when missing.
pub(crate) fn bin_or_install() -> Result<Bin> {
    match find_bin() {
        Some(bin) => Ok(bin),
        None => {
            install()?;
            find_bin().context("PostgreSQL was installed but initdb is still not found")
        }
    }
}

/// A command that runs as the `postgres` OS user when we are root (initdb and the server
/// refuse to run as root), else as ourselves.
pub(crate) fn as_server_user(program: &Path) -> Command {
    if crate::debian::running_as_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", POSTGRES_USER, "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

/// psql over TCP as `postgres`, never prompting for a password (-w), with a short connect
/// timeout, so probing a foreign server cannot hang.
fn psql(psql_bin: &Path, db: &str, sql: &str) -> Result<String> {
    let mut cmd = Command::new(psql_bin);
    cmd.args(["-w", "-X", "-At", "-v", "ON_ERROR_STOP=1"])
        .args(["-h", POSTGRES_HOST, "-p", &POSTGRES_PORT.to_string()])
        .args(["-U", POSTGRES_USER, "-d", db, "-c", sql])
        .env("PGCONNECT_TIMEOUT", "3");
    let out = procs::run_captured(&mut cmd, "psql")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn psql_bin() -> PathBuf {
    find_bin()
        .map(|b| b.tool("psql"))
        .filter(|p| p.is_file())
        .or_else(|| procs::which("psql"))
        .unwrap_or_else(|| PathBuf::from("psql"))
}

fn answers_select_1() -> bool {
    psql(&psql_bin(), "postgres", "select 1").is_ok_and(|v| v == "1")
}

/// The pid of our postmaster: first line of our data dir's postmaster.pid, still a postgres
/// process serving that directory.
fn our_pid(layout: &Layout) -> Option<u32> {
    server_pid(&layout.postgres_data())
}

/// The pid of the postmaster serving `data`: the first line of its postmaster.pid, still a
/// postgres process for that directory (the dev server's, or the cluster's).
pub(crate) fn server_pid(data: &Path) -> Option<u32> {
    let pid = procs::read_pid(&data.join("postmaster.pid"))?;
    let cmd = procs::cmdline(pid)?;
    (cmd.contains("postgres") && cmd.contains(&data.display().to_string())).then_some(pid)
}

/// `pg_ctl start` on `data`, logging to `log`, waiting up to 60 s; a failure quotes the log.
pub(crate) fn pg_ctl_start(bin: &Bin, data: &Path, log: &Path) -> Result<()> {
    let mut cmd = as_server_user(&bin.tool("pg_ctl"));
    cmd.arg("-D")
        .arg(data)
        .arg("-l")
        .arg(log)
        .args(["-w", "-t", "60", "start"]);
    if let Err(e) = procs::run_captured(&mut cmd, "pg_ctl start") {
        bail!(
            "{e:#}\n--- last lines of {} ---\n{}",
            log.display(),
            procs::tail(log, 20)
        );
    }
    Ok(())
}

/// `pg_ctl stop -m fast` on `data` (`what` names the server in the error).
pub(crate) fn pg_ctl_stop(data: &Path, what: &str) -> Result<()> {
    let bin = find_bin().with_context(|| format!("pg_ctl not found, so {what} cannot stop"))?;
    let mut cmd = as_server_user(&bin.tool("pg_ctl"));
    cmd.arg("-D")
        .arg(data)
        .args(["-m", "fast", "-w", "-t", "60", "stop"]);
    procs::run_captured(&mut cmd, "pg_ctl stop")?;
    Ok(())
}

/// Creates callstream's database unless it exists, through `psql` (one statement, its
/// output); whether it was created.
pub(crate) fn ensure_database_with(psql: impl Fn(&str) -> Result<String>) -> Result<bool> {
    ensure_named_with(POSTGRES_DB, psql)
}

/// Creates database `name` unless it exists; whether it was created.
fn ensure_named_with(name: &str, psql: impl Fn(&str) -> Result<String>) -> Result<bool> {
    let exists = psql(&format!(
        "select 1 from pg_database where datname = '{name}'"
    ))?;
    if exists == "1" {
        return Ok(false);
    }
    psql(&format!("create database {name}"))?;
    Ok(true)
}

/// Creates database `name` on the stack's Postgres unless it exists (the schema registry's).
pub fn ensure_database_named(name: &str) -> Result<()> {
    let bin = psql_bin();
    if ensure_named_with(name, |sql| psql(&bin, "postgres", sql))? {
        println!("postgres: created database {name}");
    }
    Ok(())
}

pub fn state(layout: &Layout) -> State {
    if let Some(pid) = our_pid(layout) {
        return State::Ours { pid };
    }
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], POSTGRES_PORT));
    if procs::port_taken(addr) {
        return State::Foreign {
            usable: answers_select_1(),
        };
    }
    State::Stopped
}

pub fn describe(layout: &Layout) -> String {
    let log = layout.show(&layout.postgres_log());
    match state(layout) {
        State::Ours { pid } => format!(
            "postgres: running (pid {pid}) at {}, data {}, log {log}",
            layout::database_url(),
            layout.show(&layout.postgres_data())
        ),
        State::Foreign { usable: true } => format!(
            "postgres: a server not started by xtask answers at {} (reused, never stopped)",
            layout::database_url()
        ),
        State::Foreign { usable: false } => format!(
            "postgres: port {POSTGRES_PORT} is taken by something that does not let user \
             `{POSTGRES_USER}` in without a password"
        ),
        State::Stopped => "postgres: stopped".to_string(),
    }
}

pub fn up(layout: &Layout) -> Result<()> {
    match state(layout) {
        State::Ours { pid } => {
            println!("postgres: already running (pid {pid}); nothing to do");
            wait_ready()?;
        }
        State::Foreign { usable: true } => println!(
            "postgres: reusing the server already answering on {POSTGRES_HOST}:{POSTGRES_PORT} \
             (not started by xtask; `down` leaves it alone)"
        ),
        State::Foreign { usable: false } => bail!(
            "port {POSTGRES_PORT} on {POSTGRES_HOST} is taken by something that is not a \
             Postgres letting user `{POSTGRES_USER}` in without a password (see `ss -ltnp \
             'sport = :{POSTGRES_PORT}'`); stop it (a Debian cluster: `pg_ctlcluster <ver> main \
             stop`) or allow trust auth for 127.0.0.1, then rerun"
        ),
        State::Stopped => start(layout)?,
    }
    ensure_database()
}

fn start(layout: &Layout) -> Result<()> {
    let started = Instant::now();
    let bin = bin_or_install()?;
    init_cluster(layout, &bin)?;
    pg_ctl_start(&bin, &layout.postgres_data(), &layout.postgres_log())?;
    wait_ready()?;
    let pid = our_pid(layout).map_or("?".to_string(), |p| p.to_string());
    println!(
        "postgres: ready at {POSTGRES_HOST}:{POSTGRES_PORT} (pid {pid}) in {:.1?}; log {}",
        started.elapsed(),
        layout.show(&layout.postgres_log())
    );
    Ok(())
}

/// Creates our cluster once (a complete one has PG_VERSION) and writes its settings.
fn init_cluster(layout: &Layout, bin: &Bin) -> Result<()> {
    let dir = layout.postgres_dir();
    let data = layout.postgres_data();
    if data.join("PG_VERSION").exists() {
        return Ok(());
    }
    // A data dir without PG_VERSION is an interrupted initdb of ours; initdb wants it empty.
    if data.exists() {
        fs::remove_dir_all(&data)?;
    }
    let socket_dir = layout.postgres_socket_dir();
    fs::create_dir_all(&socket_dir)?;
    give_to_server_user(&dir)?;
    if layout.server_state != layout.stack {
        println!(
            "postgres: the `{POSTGRES_USER}` user who runs the server cannot enter this \
             checkout's folder, so its files live outside it"
        );
    }
    println!("postgres: creating a cluster in {}", layout.show(&data));
    let mut initdb = as_server_user(&bin.tool("initdb"));
    initdb.arg("-D").arg(&data).args([
        "-U",
        POSTGRES_USER,
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
    ]);
    procs::run_captured(&mut initdb, "initdb")?;

    let socket = socket_dir.display().to_string();
    let socket = if socket.len() < MAX_SOCKET_PATH {
        socket
    } else {
        String::new()
    };
    let settings = format!(
        "\n# callstream dev stack (written by `cargo xtask up`)\n\
         listen_addresses = '{POSTGRES_HOST}'\n\
         port = {POSTGRES_PORT}\n\
         unix_socket_directories = '{socket}'\n\
         max_connections = 200\n"
    );
    let conf = data.join("postgresql.conf");
    let mut text = fs::read_to_string(&conf)?;
    text.push_str(&settings);
    fs::write(&conf, text)?;
    Ok(())
}

/// Installs PostgreSQL from Debian's packages.
fn install() -> Result<()> {
    println!("postgres: not installed");
    crate::debian::install(&["postgresql"])
}

fn wait_ready() -> Result<()> {
    let bin = psql_bin();
    procs::wait_for(READY_TIMEOUT, || psql(&bin, "postgres", "select 1"))
        .map(|_| ())
        .context("Postgres did not accept `select 1` in time")
}

fn ensure_database() -> Result<()> {
    let bin = psql_bin();
    if ensure_database_with(|sql| psql(&bin, "postgres", sql))? {
        println!("postgres: created database {POSTGRES_DB}");
    }
    Ok(())
}

pub fn down(layout: &Layout) -> Result<()> {
    let Some(pid) = our_pid(layout) else {
        if procs::port_taken(std::net::SocketAddr::from(([127, 0, 0, 1], POSTGRES_PORT))) {
            println!("postgres: not started by xtask; leaving what runs on {POSTGRES_PORT} alone");
        } else {
            println!("postgres: not running");
        }
        return Ok(());
    };
    println!("postgres: stopping pid {pid} ...");
    pg_ctl_stop(&layout.postgres_data(), "our Postgres")?;
    println!("postgres: stopped");
    Ok(())
}

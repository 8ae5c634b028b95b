//! The schema registry of the dev stack: Apicurio Registry, whose Confluent-compatible API
//! (`/apis/ccompat/v7`) is what Confluent's and Apicurio's serializers, Kafka Connect
//! converters and ksqlDB speak.
//!
//! Maven Central serves it as a ready-to-run Quarkus distribution
//! (`io.apicurio:apicurio-registry-app:<version>:tar.gz:all`), fetched once into
//! `.stack/registry/app` (all or nothing: unpacked in a scratch directory, renamed into place,
//! stamped with the version). It needs Java 21 or newer; the first JDK that is (the
//! `CALLSTREAM_REGISTRY_JAVA_HOME`, `JAVA_HOME`, `java` on PATH, then `/usr/lib/jvm/*`) runs
//! it. Its storage is the stack's Postgres (database `apicurio`), so schema ids outlive a
//! restart as they must: records on the topics name them. It listens on 127.0.0.1 only (both
//! its HTTP and its management interface, which otherwise bind every address), and `up` sets
//! its global compatibility to BACKWARD (Apicurio's default is NONE).

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::layout::{Layout, POSTGRES_HOST, POSTGRES_PORT, POSTGRES_USER};
use crate::{kafka, postgres, procs};

/// The Apicurio Registry release the stack runs (and docker-compose.yml's image).
pub const VERSION: &str = "3.3.3";
/// Its HTTP port: the registry's APIs, the Confluent-compatible one among them.
pub const PORT: u16 = 8085;
/// Its management port: `/health/ready`, `/metrics`.
pub const MANAGEMENT_PORT: u16 = 8086;
/// The stack Postgres database that holds its schemas.
pub const DATABASE: &str = "apicurio";

const MIN_JAVA: u32 = 21;
const READY_TIMEOUT: Duration = Duration::from_secs(180);
const STOP_GRACE: Duration = Duration::from_secs(30);
/// A small heap: the dev stack holds a few dozen schemas.
const JVM_OPTS: &[&str] = &["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC"];

/// The Confluent-compatible API's base URL, as serializers and `CALLSTREAM_SCHEMA_REGISTRY_URL`
/// take it (tests get it as `CALLSTREAM_STACK_REGISTRY_URL` and hand it on where they want a
/// registry: setting the first for every test would switch every process they start to the
/// Confluent framing).
pub fn url() -> String {
    format!("http://127.0.0.1:{PORT}/apis/ccompat/v7")
}

fn dir(layout: &Layout) -> PathBuf {
    layout.stack.join("registry")
}
fn app_dir(layout: &Layout) -> PathBuf {
    dir(layout).join("app")
}
fn stamp(layout: &Layout) -> PathBuf {
    app_dir(layout).join(".fetched-version")
}
pub fn log(layout: &Layout) -> PathBuf {
    dir(layout).join("registry.log")
}
fn pid_file(layout: &Layout) -> PathBuf {
    dir(layout).join("registry.pid")
}

/// The pid of our registry, if the pid file names a live `quarkus-run.jar` of our app dir.
/// Whether the registry running is the one this checkout started.
pub fn is_ours(layout: &Layout) -> bool {
    our_pid(layout).is_some()
}

fn our_pid(layout: &Layout) -> Option<u32> {
    let pid = procs::read_pid(&pid_file(layout))?;
    let cmd = procs::cmdline(pid)?;
    (cmd.contains("quarkus-run.jar") && procs::cwd(pid).as_deref() == Some(&app_dir(layout)))
        .then_some(pid)
}

fn http_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], PORT))
}

fn management_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], MANAGEMENT_PORT))
}

/// Whether the registry says it is ready (its storage answers).
fn ready() -> bool {
    http(management_addr(), "GET", "/health/ready", None).is_ok_and(|(status, _)| status == 200)
}

pub fn describe(layout: &Layout) -> String {
    let log = layout.show(&log(layout));
    match our_pid(layout) {
        Some(pid) if ready() => format!(
            "schema registry: Apicurio {VERSION} running (pid {pid}), Confluent-compatible API \
             at {} (storage: Postgres database {DATABASE}); log {log}",
            url()
        ),
        Some(pid) => format!("schema registry: pid {pid} is ours but not ready yet; log {log}"),
        None if procs::port_taken(http_addr()) => format!(
            "schema registry: port {PORT} is taken by a process xtask did not start (reused if \
             it answers {})",
            url()
        ),
        None => "schema registry: stopped".to_string(),
    }
}

pub fn up(layout: &Layout) -> Result<()> {
    if let Some(pid) = our_pid(layout) {
        if ready() {
            println!("schema registry: already running (pid {pid}); nothing to do");
        } else {
            println!("schema registry: pid {pid} is starting; waiting until it is ready ...");
            wait_ready(layout, pid, None, 0)?;
        }
        return set_compatibility();
    }
    if procs::port_taken(http_addr()) || procs::port_taken(management_addr()) {
        if http(http_addr(), "GET", "/apis/ccompat/v7/config", None).is_ok() {
            println!(
                "schema registry: reusing the registry already answering at {} (not started by \
                 xtask; `down` leaves it alone)",
                url()
            );
            return set_compatibility();
        }
        bail!(
            "port {PORT} or {MANAGEMENT_PORT} is taken by something that is not a schema \
             registry (see `ss -ltnp 'sport = :{PORT}'`); stop it and rerun `cargo xtask up`"
        );
    }
    let started = Instant::now();
    let java = java()?;
    ensure_app(layout)?;
    postgres::ensure_database_named(DATABASE)?;

    let log_file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log(layout))
        .with_context(|| format!("opening {}", log(layout).display()))?;
    let log_start = log_file.metadata()?.len();
    let mut cmd = kafka::detached(&java);
    cmd.args(JVM_OPTS)
        .args(["-jar", "quarkus-run.jar"])
        .current_dir(app_dir(layout))
        .envs(environment())
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
    let mut child = cmd.spawn().context("starting the schema registry")?;
    let pid = child.id();
    fs::write(pid_file(layout), format!("{pid}\n"))?;
    println!("schema registry: started pid {pid}; waiting until it is ready ...");
    wait_ready(layout, pid, Some(&mut child), log_start)?;
    set_compatibility()?;
    println!(
        "schema registry: ready at {} in {:.1?}; log {}",
        url(),
        started.elapsed(),
        layout.show(&log(layout))
    );
    Ok(())
}

/// Its settings: 127.0.0.1 only, our ports, SQL storage in the stack's Postgres.
fn environment() -> Vec<(&'static str, String)> {
    vec![
        ("QUARKUS_HTTP_HOST", "127.0.0.1".into()),
        ("QUARKUS_HTTP_PORT", PORT.to_string()),
        ("QUARKUS_MANAGEMENT_HOST", "127.0.0.1".into()),
        ("QUARKUS_MANAGEMENT_PORT", MANAGEMENT_PORT.to_string()),
        ("APICURIO_STORAGE_KIND", "sql".into()),
        ("APICURIO_STORAGE_SQL_KIND", "postgresql".into()),
        (
            "APICURIO_DATASOURCE_URL",
            format!("jdbc:postgresql://{POSTGRES_HOST}:{POSTGRES_PORT}/{DATABASE}"),
        ),
        ("APICURIO_DATASOURCE_USERNAME", POSTGRES_USER.into()),
        // The stack's Postgres trusts local connections; the driver wants a password all the same.
        ("APICURIO_DATASOURCE_PASSWORD", "unused".into()),
        // Its default pool holds 20 idle connections; the stack's Postgres serves tests too.
        ("APICURIO_DATASOURCE_JDBC_INITIAL_SIZE", "2".into()),
        ("APICURIO_DATASOURCE_JDBC_MIN_SIZE", "2".into()),
        ("APICURIO_DATASOURCE_JDBC_MAX_SIZE", "10".into()),
    ]
}

/// BACKWARD for every subject: a new schema must read what the previous one wrote.
fn set_compatibility() -> Result<()> {
    let (status, body) = http(
        http_addr(),
        "PUT",
        "/apis/ccompat/v7/config",
        Some(r#"{"compatibility":"BACKWARD"}"#),
    )?;
    if status != 200 || !body.contains("BACKWARD") {
        bail!("the schema registry refused global compatibility BACKWARD ({status}): {body}");
    }
    Ok(())
}

fn wait_ready(
    layout: &Layout,
    pid: u32,
    mut child: Option<&mut Child>,
    log_start: u64,
) -> Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let mut told = Instant::now();
    loop {
        if ready() {
            return Ok(());
        }
        let exited = match child.as_deref_mut() {
            Some(child) => child.try_wait()?.map(|s| s.to_string()),
            None => (!procs::is_alive(pid)).then(|| "gone".to_string()),
        };
        if let Some(status) = exited {
            let _ = fs::remove_file(pid_file(layout));
            bail!(
                "the schema registry exited ({status}) before it was ready; from {}:\n{}",
                layout.show(&log(layout)),
                procs::log_excerpt(&log(layout), log_start)
            );
        }
        if Instant::now() > deadline {
            bail!(
                "the schema registry (pid {pid}) was not ready within {READY_TIMEOUT:?}; from {}:\n{}",
                layout.show(&log(layout)),
                procs::log_excerpt(&log(layout), log_start)
            );
        }
        if told.elapsed() > Duration::from_secs(30) {
            println!("schema registry: still starting ...");
            told = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

pub fn down(layout: &Layout) -> Result<()> {
    let Some(pid) = our_pid(layout) else {
        let _ = fs::remove_file(pid_file(layout));
        println!("schema registry: not running");
        return Ok(());
    };
    println!("schema registry: stopping pid {pid} ...");
    if !procs::signal_and_wait(pid, "TERM", STOP_GRACE)?
        && !procs::signal_and_wait(pid, "KILL", Duration::from_secs(10))?
    {
        bail!("schema registry: pid {pid} survived KILL");
    }
    fs::remove_file(pid_file(layout)).ok();
    println!("schema registry: stopped");
    Ok(())
}

/// Makes sure `.stack/registry/app` holds the unpacked distribution of [`VERSION`].
fn ensure_app(layout: &Layout) -> Result<()> {
    if fs::read_to_string(stamp(layout)).is_ok_and(|v| v.trim() == VERSION) {
        return Ok(());
    }
    let mvn = procs::which("mvn").context(
        "no `mvn` found on PATH: xtask fetches the schema registry with Maven; \
         install it, e.g. `apt-get install maven`",
    )?;
    let scratch = dir(layout).join("fetching");
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(scratch.join("app"))?;
    println!("schema registry: fetching Apicurio Registry {VERSION} from Maven Central (about 150 MB) ...");
    let artifact = format!("io.apicurio:apicurio-registry-app:{VERSION}:tar.gz:all");
    procs::run_captured(
        Command::new(mvn).args([
            "-B",
            "-q",
            "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy",
            &format!("-Dartifact={artifact}"),
            &format!("-DoutputDirectory={}", scratch.display()),
        ]),
        "mvn (fetching the schema registry)",
    )?;
    let tarball = scratch.join(format!("apicurio-registry-app-{VERSION}-all.tar.gz"));
    // The tarball has no top directory of its own.
    procs::run_captured(
        Command::new("tar")
            .arg("xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(scratch.join("app")),
        "tar (unpacking the schema registry)",
    )?;
    if !scratch.join("app/quarkus-run.jar").is_file() {
        bail!("{} holds no quarkus-run.jar", tarball.display());
    }
    fs::write(scratch.join("app/.fetched-version"), VERSION)?;
    let _ = fs::remove_dir_all(app_dir(layout));
    fs::rename(scratch.join("app"), app_dir(layout))?;
    fs::remove_dir_all(&scratch)?;
    Ok(())
}

/// A Java 21+ runtime: `CALLSTREAM_REGISTRY_JAVA_HOME`, `JAVA_HOME`, `java` on PATH, then the
/// newest JDK under `/usr/lib/jvm` (Debian's Java is 17; a Temurin 21+ often sits beside it).
pub fn java() -> Result<PathBuf> {
    let mut candidates: Vec<PathBuf> = ["CALLSTREAM_REGISTRY_JAVA_HOME", "JAVA_HOME"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|home| PathBuf::from(home).join("bin/java"))
        .collect();
    candidates.extend(procs::which("java"));
    let mut jvms: Vec<PathBuf> = fs::read_dir("/usr/lib/jvm")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin/java"))
                .collect()
        })
        .unwrap_or_default();
    jvms.sort();
    candidates.extend(jvms.into_iter().rev());
    let mut seen = Vec::new();
    for java in candidates.into_iter().filter(|j| j.is_file()) {
        match java_version(&java) {
            Some(v) if v >= MIN_JAVA => return Ok(java),
            Some(v) => seen.push(format!("{} is Java {v}", java.display())),
            None => seen.push(format!("{}: version unknown", java.display())),
        }
    }
    bail!(
        "the schema registry (Apicurio {VERSION}) needs Java {MIN_JAVA}+ and none was found \
         ({}); install one (e.g. Temurin 21) and set CALLSTREAM_REGISTRY_JAVA_HOME",
        if seen.is_empty() {
            "no java at all".to_string()
        } else {
            seen.join("; ")
        }
    )
}

fn java_version(java: &Path) -> Option<u32> {
    let out = Command::new(java).arg("-version").output().ok()?;
    kafka::dist::java_major(&String::from_utf8_lossy(&out.stderr))
}

/// One HTTP/1.1 request with `Connection: close`: status and body. Enough for the registry's
/// JSON answers; xtask needs no HTTP client crate for three calls.
fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Accept: application/json\r\n\
         Content-Type: application/vnd.schemaregistry.v1+json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    parse_response(&answer)
}

/// Status and body of a whole HTTP/1.1 response (chunked bodies de-chunked).
fn parse_response(answer: &str) -> Result<(u16, String)> {
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .context("an HTTP answer without a blank line after its headers")?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no status in {head:?}"))?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    if !chunked {
        return Ok((status, body.to_string()));
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).context("a bad chunk size")?;
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    Ok((status, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docker-compose.yml runs the registry this stack runs.
    #[test]
    fn compose_runs_the_same_registry() {
        let compose = include_str!("../../docker-compose.yml");
        assert!(
            compose.contains(&format!(
                "image: quay.io/apicurio/apicurio-registry:{VERSION}\n"
            )),
            "docker-compose.yml's registry image is not Apicurio {VERSION}"
        );
    }

    #[test]
    fn responses_are_read_plain_and_chunked() {
        let plain = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain).unwrap(), (200, "{}".to_string()));
        let chunked = "HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n\
                       5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n";
        assert_eq!(
            parse_response(chunked).unwrap(),
            (409, "{\"a\":1}".to_string())
        );
        assert!(parse_response("garbage").is_err());
    }

    #[test]
    fn it_listens_on_loopback_and_stores_in_postgres() {
        let env: std::collections::HashMap<_, _> = environment().into_iter().collect();
        assert_eq!(env["QUARKUS_HTTP_HOST"], "127.0.0.1");
        assert_eq!(env["QUARKUS_MANAGEMENT_HOST"], "127.0.0.1");
        assert_eq!(env["APICURIO_STORAGE_SQL_KIND"], "postgresql");
        assert!(env["APICURIO_DATASOURCE_URL"].ends_with("/apicurio"));
    }
}

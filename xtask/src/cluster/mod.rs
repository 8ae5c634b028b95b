//! `cargo xtask up --cluster`: three Kafka brokers (KRaft, each also a controller) from the
//! same jars as the single dev broker, on their own ports and under `.stack/cluster/`, with
//! what a real deployment has: TLS on every listener, SCRAM-SHA-512 users (one per service),
//! ACLs (acls.rs) and replication that survives a broker's loss.
//!
//! It never touches the single-broker stack (9092/9093, `.stack/kafka/data`): the two run side
//! by side. At first start it makes the certificates (tls.rs), a random password per user
//! (`secrets/<user>.password`) and each user's client settings (`clients/<user>.properties`),
//! formats the three nodes' storage with the SCRAM users, starts the brokers, waits until all
//! three are registered and applies the ACLs. Later starts reuse all that, start whichever
//! broker does not run (a killed one comes back) and apply the ACLs again (the table is the
//! truth: a row removed from it is removed from the cluster).

pub mod acls;
#[cfg(test)]
mod check_tests;
pub mod config;
pub mod postgres;
pub mod tls;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rand::distr::{Alphanumeric, SampleString};
use rand::RngCore;

use crate::kafka::{self, dist};
use crate::layout::Layout;
use crate::procs;
use crate::stack::StackLock;
use config::{client_port, controller_port, internal_port, HOST, NODES};
use tls::TlsFiles;

/// A modest heap per broker: three of them and the single dev broker (1 GiB max) share the
/// machine with builds and tests. 256 MiB was too little: a broker died of
/// `OutOfMemoryError` in the broker-death test (TLS, three replicas of every partition, a
/// catch-up after a restart).
const JVM_OPTS: &[&str] = &[
    "-Xms256m",
    "-Xmx768m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
];
const READY_TIMEOUT: Duration = Duration::from_secs(300);
const STOP_GRACE: Duration = Duration::from_secs(60);
const PASSWORD_LEN: usize = 32;

fn addr(port: u16) -> SocketAddr {
    format!("{HOST}:{port}").parse().expect("a literal address")
}

/// Where one node keeps its things.
struct Node {
    id: u16,
    dir: PathBuf,
}

impl Node {
    fn all(layout: &Layout) -> Vec<Node> {
        NODES
            .iter()
            .map(|&id| Node {
                id,
                dir: layout.cluster_node(id),
            })
            .collect()
    }
    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }
    fn properties(&self) -> PathBuf {
        self.dir.join("server.properties")
    }
    fn log(&self) -> PathBuf {
        self.dir.join("kafka.log")
    }
    fn pid_file(&self) -> PathBuf {
        self.dir.join("kafka.pid")
    }
    fn formatted(&self) -> bool {
        self.data().join("meta.properties").exists()
    }
    /// The pid of this node's broker, if the pid file names a live `kafka.Kafka` run with
    /// this node's config.
    fn pid(&self) -> Option<u32> {
        let pid = procs::read_pid(&self.pid_file())?;
        let cmd = procs::cmdline(pid)?;
        let props = self.properties().display().to_string();
        (cmd.contains("kafka.Kafka") && cmd.contains(&props)).then_some(pid)
    }
    fn ports(&self) -> [u16; 3] {
        [
            client_port(self.id),
            internal_port(self.id),
            controller_port(self.id),
        ]
    }
}

/// Writes a file only its owner can read (a password, a key, settings holding either).
pub fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    // An existing file keeps its mode through open(2): set it.
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

/// Makes a directory only its owner can enter (secrets, client settings, the broker key).
pub fn private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    Ok(())
}

pub fn password_file(layout: &Layout, user: &str) -> PathBuf {
    layout.cluster_secrets().join(format!("{user}.password"))
}

fn client_file(layout: &Layout, user: &str) -> PathBuf {
    layout.cluster_clients().join(format!("{user}.properties"))
}

/// The admin's client settings (`--command-config` of Kafka's tools).
pub fn admin_client_file(layout: &Layout) -> PathBuf {
    client_file(layout, acls::ADMIN)
}

fn acl_file(layout: &Layout) -> PathBuf {
    layout.cluster_dir().join("acls.tsv")
}

fn admin_log(layout: &Layout) -> PathBuf {
    layout.cluster_dir().join("admin.log")
}

/// A Kafka cluster id: 16 random bytes in URL-safe base64 without padding (Kafka's `Uuid`),
/// never starting with `-` (it would read as a flag).
pub fn random_cluster_id() -> String {
    loop {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        let id = base64url(&bytes);
        if !id.starts_with('-') {
            return id;
        }
    }
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
        }
    }
    out
}

/// Reads every user's password, making the missing ones. A formatted cluster already has its
/// SCRAM users, so a password missing then cannot be made up: that asks for a reset.
fn ensure_passwords(layout: &Layout, formatted: bool) -> Result<Vec<(&'static str, String)>> {
    private_dir(&layout.cluster_secrets())?;
    let mut out = Vec::new();
    let mut made = 0;
    for user in acls::users() {
        let file = password_file(layout, user);
        let password = match read_password(&file) {
            Some(password) => password,
            None if formatted => bail!(
                "{} is missing but the cluster's storage is formatted with its SCRAM user; \
                 `cargo xtask reset --cluster` starts over with new users",
                layout.show(&file)
            ),
            None => {
                made += 1;
                make_password(&file)?
            }
        };
        out.push((user, password));
    }
    if made > 0 {
        println!(
            "cluster: made {made} random passwords in {} (mode 0600)",
            layout.show(&layout.cluster_secrets())
        );
    }
    Ok(out)
}

/// The password in `file`, unless it is missing or blank.
pub fn read_password(file: &Path) -> Option<String> {
    let text = fs::read_to_string(file).ok()?;
    let password = text.trim();
    (!password.is_empty()).then(|| password.to_string())
}

/// A random password, written to `file` (mode 0600).
pub fn make_password(file: &Path) -> Result<String> {
    let password = Alphanumeric.sample_string(&mut rand::rng(), PASSWORD_LEN);
    write_private(file, &format!("{password}\n"))?;
    Ok(password)
}

/// The JDK's source launcher runs ClusterAdmin.java; a bare JRE has no compiler.
fn check_jdk(java: &Path) -> Result<()> {
    let out = Command::new(java)
        .arg("--list-modules")
        .output()
        .context("running java --list-modules")?;
    if !String::from_utf8_lossy(&out.stdout).contains("jdk.compiler") {
        bail!(
            "{} is a Java runtime without a compiler; the cluster's admin step runs \
             xtask/kafka/ClusterAdmin.java from source, which needs a JDK \
             (e.g. `apt-get install openjdk-17-jdk-headless`)",
            java.display()
        );
    }
    Ok(())
}

/// Formats the nodes that are not formatted yet, at once, with every SCRAM user.
fn format_storage(
    layout: &Layout,
    java: &Path,
    nodes: &[&Node],
    users: &[(&str, String)],
) -> Result<()> {
    if nodes.is_empty() {
        return Ok(());
    }
    let id_file = layout.cluster_dir().join("cluster.id");
    let cluster_id = match fs::read_to_string(&id_file) {
        Ok(id) if !id.trim().is_empty() => id.trim().to_string(),
        _ => {
            let id = random_cluster_id();
            fs::write(&id_file, format!("{id}\n"))?;
            id
        }
    };
    let ids: Vec<String> = nodes.iter().map(|n| n.id.to_string()).collect();
    println!(
        "cluster: formatting the storage of node {} (cluster {cluster_id}) with {} SCRAM-SHA-512 \
         users ...",
        ids.join(", "),
        users.len()
    );
    let mut running = Vec::new();
    let mut arg_files = Vec::new();
    for node in nodes {
        let mut args = vec![
            "kafka.tools.StorageTool".to_string(),
            "format".into(),
            "--ignore-formatted".into(),
            "-t".into(),
            cluster_id.clone(),
            "-c".into(),
            node.properties().display().to_string(),
        ];
        for (user, password) in users {
            args.push("--add-scram".into());
            args.push(format!(
                "{}=[name={user},password={password}]",
                config::SCRAM_MECHANISM
            ));
        }
        // The passwords go in a java argument file (mode 0600, beside the password files,
        // deleted after), not on the command line, where any user's `ps` would show them.
        let arg_file = layout
            .cluster_secrets()
            .join(format!("format-node-{}.args", node.id));
        write_private(&arg_file, &java_arg_file(&args))?;
        let mut cmd = kafka::tool_command(layout, java);
        cmd.arg(format!("@{}", arg_file.display()));
        arg_files.push(arg_file);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        running.push((
            node.id,
            cmd.spawn().context("starting kafka-storage format")?,
        ));
    }
    let mut failures = Vec::new();
    for (id, child) in running {
        let out = child.wait_with_output()?;
        if !out.status.success() {
            failures.push(format!(
                "node {id}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    for file in arg_files {
        let _ = fs::remove_file(file);
    }
    if !failures.is_empty() {
        bail!("kafka-storage format failed:\n{}", failures.join("\n"));
    }
    Ok(())
}

/// A java launcher argument file (`java @file`): one argument a line, each quoted, with `\`
/// and `"` escaped, so spaces in paths survive.
fn java_arg_file(args: &[String]) -> String {
    args.iter()
        .map(|a| format!("\"{}\"\n", a.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect()
}

fn start_broker(layout: &Layout, java: &Path, node: &Node) -> Result<u32> {
    for port in node.ports() {
        if procs::port_taken(addr(port)) {
            bail!(
                "port {port} (broker {}) is taken by another process (see `ss -ltnp 'sport = \
                 :{port}'`); stop it and rerun `cargo xtask up --cluster`",
                node.id
            );
        }
    }
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(node.log())
        .with_context(|| format!("opening {}", node.log().display()))?;
    let mut cmd = kafka::detached(java);
    cmd.args(JVM_OPTS)
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            layout.kafka_log4j().display()
        ))
        .arg("-cp")
        .arg(kafka::classpath(layout))
        .arg("kafka.Kafka")
        .arg(node.properties())
        .current_dir(&node.dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let child = cmd
        .spawn()
        .with_context(|| format!("starting broker {}", node.id))?;
    let pid = child.id();
    // The broker outlives xtask (its own session); nobody waits for this handle.
    drop(child);
    fs::write(node.pid_file(), format!("{pid}\n"))?;
    Ok(pid)
}

/// Runs ClusterAdmin.java: waits for three brokers, then applies the ACL file. Fails early
/// when a broker dies meanwhile, quoting its log.
fn wait_and_apply_acls(
    layout: &Layout,
    java: &Path,
    nodes: &[Node],
    pids: &[u32],
    log_starts: &[u64],
) -> Result<()> {
    let stderr = fs::File::create(admin_log(layout))?;
    let mut cmd = kafka::tool_command(layout, java);
    cmd.arg(layout.kafka_assets().join("ClusterAdmin.java"))
        .arg(client_file(layout, acls::ADMIN))
        .arg(
            NODES
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(","),
        )
        .arg(READY_TIMEOUT.as_secs().to_string())
        .arg(acl_file(layout))
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(stderr);
    let mut child: Child = cmd.spawn().context("running ClusterAdmin.java")?;
    loop {
        if let Some(status) = child.try_wait()? {
            if status.success() {
                return Ok(());
            }
            bail!(
                "ClusterAdmin.java failed ({status})\n{}",
                procs::log_excerpt(&admin_log(layout), 0)
            );
        }
        for ((node, &pid), &from) in nodes.iter().zip(pids).zip(log_starts) {
            if !procs::is_running(pid) {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "broker {} exited before the cluster was ready\n{}",
                    node.id,
                    procs::log_excerpt(&node.log(), from)
                );
            }
        }
        sleep(Duration::from_millis(300));
    }
}

pub fn up(layout: &Layout) -> Result<()> {
    let started = Instant::now();
    let _lock = StackLock::acquire_in(&layout.cluster_dir())?;
    println!(
        "cluster: three KRaft brokers at {} (SASL_SSL, SCRAM-SHA-512), state in {}",
        config::bootstrap(),
        layout.show(&layout.cluster_dir())
    );
    let java = dist::java()?;
    check_jdk(&java)?;
    fs::create_dir_all(layout.kafka_dir())?;
    dist::ensure_libs(layout)?;

    let nodes = Node::all(layout);
    let tls_files = TlsFiles::in_dir(&layout.cluster_tls());
    // ca.pem is public, but the directory holds the broker key too.
    private_dir(&layout.cluster_tls())?;
    if !tls_files.exist() {
        println!(
            "cluster: generating certificates (a CA, and a broker certificate for IP:127.0.0.1 \
             and DNS:localhost) in {} ...",
            layout.show(&layout.cluster_tls())
        );
        tls::ensure(&tls_files)?;
    }
    let keys = config::BrokerKeys {
        chain_pem: fs::read_to_string(&tls_files.broker_chain)?,
        key_pem: fs::read_to_string(&tls_files.broker_key)?,
    };

    let any_formatted = nodes.iter().any(Node::formatted);
    let users = ensure_passwords(layout, any_formatted)?;
    private_dir(&layout.cluster_clients())?;
    for (user, password) in &users {
        write_private(
            &client_file(layout, user),
            &config::client_properties(user, password, &tls_files.ca),
        )?;
    }
    for node in &nodes {
        fs::create_dir_all(&node.dir)?;
        write_private(
            &node.properties(),
            &config::server_properties(node.id, &node.data(), &tls_files, &keys),
        )?;
    }
    let unformatted: Vec<&Node> = nodes.iter().filter(|n| !n.formatted()).collect();
    format_storage(layout, &java, &unformatted, &users)?;

    let (mut pids, mut log_starts) = (Vec::new(), Vec::new());
    for node in &nodes {
        log_starts.push(fs::metadata(node.log()).map_or(0, |m| m.len()));
        let pid = match node.pid() {
            Some(pid) => {
                println!("cluster: broker {} already runs (pid {pid})", node.id);
                pid
            }
            None => {
                let pid = start_broker(layout, &java, node)?;
                println!(
                    "cluster: started broker {} (pid {pid}) on {HOST}:{}; log {}",
                    node.id,
                    client_port(node.id),
                    layout.show(&node.log())
                );
                pid
            }
        };
        pids.push(pid);
    }

    fs::write(
        acl_file(layout),
        acls::render(&std::env::var("CALLSTREAM_TOPIC_PREFIX").unwrap_or_default()),
    )?;
    println!(
        "cluster: waiting for the cluster to have {} brokers, then applying the ACLs of \
         xtask/src/cluster/acls.rs ...",
        NODES.len()
    );
    wait_and_apply_acls(layout, &java, &nodes, &pids, &log_starts)?;
    println!("cluster: up in {:.1?}", started.elapsed());
    print_status(layout);
    Ok(())
}

pub fn down(layout: &Layout) -> Result<()> {
    let _lock = StackLock::acquire_in(&layout.cluster_dir())?;
    let nodes = Node::all(layout);
    let running: Vec<(&Node, u32)> = nodes
        .iter()
        .filter_map(|n| n.pid().map(|pid| (n, pid)))
        .collect();
    postgres::down(layout)?;
    if running.is_empty() {
        println!("cluster: no broker running");
    }
    // All at once: a broker shutting down alone waits for the controllers, which are the
    // other brokers.
    for (node, pid) in &running {
        println!("cluster: stopping broker {} (pid {pid}) ...", node.id);
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status();
    }
    let mut failed = Vec::new();
    for (node, pid) in &running {
        if !procs::wait_gone(*pid, STOP_GRACE) {
            println!(
                "cluster: broker {} (pid {pid}) ignored TERM for {STOP_GRACE:?}; killing it",
                node.id
            );
            if !procs::signal_and_wait(*pid, "KILL", Duration::from_secs(10))? {
                failed.push(*pid);
            }
        }
    }
    for node in &nodes {
        if node.pid().is_none() {
            let _ = fs::remove_file(node.pid_file());
        }
    }
    if !failed.is_empty() {
        bail!("cluster: pids {failed:?} survived KILL");
    }
    if !running.is_empty() {
        println!("cluster: stopped");
    }
    Ok(())
}

/// Stops the cluster and deletes `.stack/cluster` (data, certificates, passwords, client
/// settings); the jars in `.stack/kafka/libs` stay.
pub fn reset(layout: &Layout) -> Result<()> {
    down(layout)?;
    for dir in [layout.cluster_dir(), layout.cluster_postgres_dir()] {
        if dir.exists() {
            fs::remove_dir_all(&dir).with_context(|| format!("deleting {}", dir.display()))?;
            println!("reset: deleted {}", layout.show(&dir));
        }
    }
    Ok(())
}

/// The environment that points callstream's clients at the cluster as `user`: the
/// `KAFKA_<PROPERTY>` variables every service reads, the password from its file, and the
/// replication of the topics a processor creates.
pub fn client_env(layout: &Layout, user: &str) -> Vec<(&'static str, String)> {
    vec![
        ("KAFKA_BOOTSTRAP_SERVERS", config::bootstrap()),
        // The topics a processor creates (changelogs, dead letters) as the design's are.
        ("CALLSTREAM_REPLICATION_FACTOR", "3".into()),
        ("CALLSTREAM_MIN_INSYNC_REPLICAS", "2".into()),
        ("KAFKA_SECURITY_PROTOCOL", "SASL_SSL".into()),
        ("KAFKA_SASL_MECHANISM", "SCRAM-SHA-512".into()),
        ("KAFKA_SASL_USERNAME", user.into()),
        (
            "KAFKA_SASL_PASSWORD_FILE",
            password_file(layout, user).display().to_string(),
        ),
        (
            "KAFKA_SSL_CA_LOCATION",
            TlsFiles::in_dir(&layout.cluster_tls())
                .ca
                .display()
                .to_string(),
        ),
    ]
}

/// One line a broker, its Postgres, then where the clients' settings are (paths only).
pub fn describe(layout: &Layout) -> Vec<String> {
    if !layout.cluster_dir().exists() {
        return vec!["cluster: not set up (`cargo xtask up --cluster` starts it)".into()];
    }
    let mut lines = Vec::new();
    for node in Node::all(layout) {
        let listening = procs::port_answers(addr(client_port(node.id)));
        let state = match (node.pid(), listening) {
            (Some(pid), true) => format!("running (pid {pid})"),
            (Some(pid), false) => format!("starting (pid {pid})"),
            (None, true) => "stopped, yet its port answers (another process?)".into(),
            (None, false) => "stopped".into(),
        };
        lines.push(format!(
            "cluster: broker {} {state} at {HOST}:{} (SASL_SSL), internal {HOST}:{} and \
             controller {HOST}:{} (mutual TLS); log {}",
            node.id,
            client_port(node.id),
            internal_port(node.id),
            controller_port(node.id),
            layout.show(&node.log())
        ));
    }
    lines.push(postgres::describe(layout));
    let users = acls::users();
    lines.push(format!(
        "cluster clients (Java, --command-config): {}/<user>.properties for {}",
        layout.show(&layout.cluster_clients()),
        users.join(", ")
    ));
    lines.push(format!(
        "cluster clients (librdkafka): {}",
        config::librdkafka_settings(
            "<user>",
            &format!("{}/<user>.password", layout.show(&layout.cluster_secrets())),
            &layout.show(&TlsFiles::in_dir(&layout.cluster_tls()).ca),
        )
    ));
    lines
}

pub fn print_status(layout: &Layout) {
    for line in describe(layout) {
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_argument_files_quote_every_argument() {
        let args = ["a b".to_string(), "x\\y\"z".to_string()];
        assert_eq!(java_arg_file(&args), "\"a b\"\n\"x\\\\y\\\"z\"\n");
    }

    #[test]
    fn cluster_ids_read_as_kafka_uuids() {
        assert_eq!(base64url(&[0xfb, 0xff, 0xfe]), "-__-");
        assert_eq!(base64url(b"Ma"), "TWE");
        for _ in 0..50 {
            let id = random_cluster_id();
            assert_eq!(id.len(), 22);
            assert!(!id.starts_with('-'));
        }
    }

    #[test]
    fn private_files_are_mode_0600_even_when_they_existed() {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::temp_dir().join(format!("xtask-private-{}", std::process::id()));
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&path, "secret").unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(fs::read_to_string(&path).unwrap(), "secret");
        fs::remove_file(&path).unwrap();
    }

    #[test]
    fn the_cluster_keeps_off_the_single_brokers_ports() {
        use crate::layout::{KAFKA_CONTROLLER_PORT, KAFKA_PORT};
        let mut ports: Vec<u16> = NODES
            .iter()
            .flat_map(|&n| [client_port(n), internal_port(n), controller_port(n)])
            .collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 9);
        assert!(!ports.contains(&KAFKA_PORT) && !ports.contains(&KAFKA_CONTROLLER_PORT));
    }
}

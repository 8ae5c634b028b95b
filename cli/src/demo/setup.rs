//! One run's set-up: its id and topic prefix, a free port for every role,
//! its log folder, the environment every child gets, its topics and its
//! control settings.
//!
//! Runs are kept apart by the topic prefix `demo-<run id>-`: the topics, the
//! processors' consumer groups, changelogs and transactional ids (the app id
//! carries the prefix) are the run's own, so a run starts from empty state
//! and its summary counts exactly what it did. Its views live in a database
//! of its own (see `database`), for the same reason.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use callstream_control::ControlFile;
use callstream_platform::clock::Clock as _;
use callstream_platform::{admin, KafkaSettings, Topics};
use callstream_schemas::Actor;

use super::DemoArgs;

/// Everything the run's roles and the orchestrator share.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    pub prefix: String,
    pub log_dir: PathBuf,
    pub topics: Topics,
    pub kafka: KafkaSettings,
    /// The environment of every child (the file's settings and the run's addresses).
    pub env: BTreeMap<String, String>,
    pub gateway_url: String,
    pub voice_url: String,
    pub crm_url: String,
    /// The operator API's base URL (a free loopback port).
    pub api_url: String,
    /// The admin listeners (`/metrics`) of the gateway, the operator API and the
    /// projections, each on a free loopback port: `(role, base URL)`.
    pub admin_urls: Vec<(&'static str, String)>,
    /// `DATABASE_URL` as given (the server the run's database is created on).
    pub base_database_url: String,
    /// The run's own database: its name and URL (the roles' `DATABASE_URL`).
    pub database: String,
    pub database_url: String,
    pub control: ControlFile,
    pub control_path: PathBuf,
}

impl Run {
    /// A setting of the children's environment.
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    /// The control file's first tenant: the one the API examples are shown for, and the
    /// tenant of a simulator record that names none.
    pub fn first_tenant(&self) -> String {
        self.control
            .tenants
            .keys()
            .next()
            .cloned()
            .unwrap_or_else(|| "acme".into())
    }

    /// The physical name of a logical topic.
    pub fn topic(&self, logical: &str) -> String {
        self.topics.name(logical)
    }
}

/// The demo.env setting with `tenant`'s own launch-intake token (`DEMO_LAUNCH_TOKEN_BOLT`);
/// a tenant without one sends with `DEMO_LAUNCH_TOKEN`.
pub fn launch_token_setting(tenant: &str) -> String {
    format!(
        "DEMO_LAUNCH_TOKEN_{}",
        tenant.to_uppercase().replace('-', "_")
    )
}

/// A line of an env file that is not `KEY=VALUE`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("line {line}: expected KEY=VALUE, found {text:?}")]
pub struct EnvLineError {
    pub line: usize,
    pub text: String,
}

/// Parses `KEY=VALUE` lines; blank lines and `#` comments are skipped, and
/// a value may be wrapped in double quotes.
pub fn parse_env(text: &str) -> Result<Vec<(String, String)>, EnvLineError> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(EnvLineError {
                line: n + 1,
                text: raw.to_owned(),
            });
        };
        let key = key.trim();
        let valid = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(EnvLineError {
                line: n + 1,
                text: raw.to_owned(),
            });
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        out.push((key.to_owned(), value.to_owned()));
    }
    Ok(out)
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// `MMDD-HHMMSS-xxxx`: sortable, short, and unique enough for one machine.
pub fn run_id() -> String {
    // Real time: runs on the same scaled clock start would share their business time.
    let now = callstream_platform::clock::SystemClock.now_utc();
    format!(
        "{}-{:04x}",
        now.format("%m%d-%H%M%S"),
        rand::random::<u16>()
    )
}

/// The folder with `gateway.toml`, `control.toml` and `demo.env`: as given,
/// else `./demo`, else the one next to this crate's sources.
pub fn demo_dir(given: Option<&Path>) -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match given {
        Some(dir) => vec![dir.to_owned()],
        None => vec![
            PathBuf::from("demo"),
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo"),
        ],
    };
    for dir in &candidates {
        if dir.join("demo.env").is_file() {
            return dir
                .canonicalize()
                .with_context(|| format!("resolving {}", dir.display()));
        }
    }
    bail!(
        "no demo folder (with demo.env, gateway.toml, control.toml) at {}",
        candidates
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" or ")
    )
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Decides everything about the run that does not touch Kafka yet.
pub fn prepare(args: &DemoArgs) -> Result<Run> {
    let dir = demo_dir(args.demo_dir.as_deref())?;
    let repo = dir.parent().map_or_else(|| dir.clone(), Path::to_owned);
    let id = run_id();
    let prefix = format!("demo-{id}-");
    let log_dir = args
        .log_dir
        .clone()
        .unwrap_or_else(|| repo.join(".stack").join("demo").join(&id));
    std::fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;

    let env_path = dir.join("demo.env");
    let file =
        parse_env(&read(&env_path)?).with_context(|| format!("reading {}", env_path.display()))?;
    let mut env = overridden(file, |key| std::env::var(key).ok());
    let bootstrap = std::env::var("KAFKA_BOOTSTRAP_SERVERS")
        .unwrap_or_else(|_| callstream_platform::kafka::DEFAULT_BOOTSTRAP_SERVERS.into());
    let base_database_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| callstream_projections::config::DEFAULT_DATABASE_URL.into());
    let database = super::database::database_name(&id);
    let database_url =
        super::database::with_database(&base_database_url, &database).context("DATABASE_URL")?;
    let (gateway, voice, crm, api) = (free_port()?, free_port()?, free_port()?, free_port()?);
    let gateway_url = format!("http://127.0.0.1:{gateway}");
    let voice_url = format!("http://127.0.0.1:{voice}");
    let crm_url = format!("http://127.0.0.1:{crm}");
    let api_url = format!("http://127.0.0.1:{api}");
    // Free ports, not the defaults: runs side by side (tests, a soak) must not collide.
    let admins = [
        ("gateway", "CALLSTREAM_GATEWAY_ADMIN_LISTEN", free_port()?),
        (
            "operator-api",
            "CALLSTREAM_OPERATOR_API_ADMIN_LISTEN",
            free_port()?,
        ),
        (
            "projections",
            "CALLSTREAM_PROJECTIONS_ADMIN_LISTEN",
            free_port()?,
        ),
    ];
    let admin_urls = admins
        .iter()
        .map(|(role, _, port)| (*role, format!("http://127.0.0.1:{port}")))
        .collect();
    let control_path = args
        .control
        .clone()
        .unwrap_or_else(|| dir.join("control.toml"));
    let run_env = [
        ("KAFKA_BOOTSTRAP_SERVERS", bootstrap.clone()),
        ("CALLSTREAM_TOPIC_PREFIX", prefix.clone()),
        (
            "CALLSTREAM_GATEWAY_CONFIG",
            dir.join("gateway.toml").display().to_string(),
        ),
        ("CALLSTREAM_GATEWAY_LISTEN", format!("127.0.0.1:{gateway}")),
        ("CALLSTREAM_GATEWAY_PUBLIC_URL", gateway_url.clone()),
        ("CALLSTREAM_DISPATCH_CALLBACK_BASE_URL", gateway_url.clone()),
        ("TWILIO_API_BASE_URL", voice_url.clone()),
        ("SIM_VOICE_LISTEN", format!("127.0.0.1:{voice}")),
        (
            "SIM_VOICE_ANALYSIS_URL",
            // Each call's analysis goes to its tenant's integration.
            format!("{gateway_url}/v1/webhooks/json/{{tenant}}-analysis"),
        ),
        ("SIM_CRM_LISTEN", format!("127.0.0.1:{crm}")),
        ("CALLSTREAM_CRM_BASE_URL", crm_url.clone()),
        ("DATABASE_URL", database_url.clone()),
        ("CALLSTREAM_OPERATOR_API_LISTEN", format!("127.0.0.1:{api}")),
    ];
    for (key, value) in run_env {
        env.insert(key.to_owned(), value);
    }
    for (_, key, port) in admins {
        env.insert(key.to_owned(), format!("127.0.0.1:{port}"));
    }
    if let (Some(setting), Some(rate)) = (&args.clock_setting, args.clock_rate) {
        // Every role on the one scaled clock; calls at the voice platform last their real
        // length in business time, so they play out `rate` times faster.
        env.insert("CALLSTREAM_CLOCK".into(), setting.clone());
        env.insert("SIM_VOICE_TIME_SCALE".into(), format!("{}", 1.0 / rate));
        // The engine's own latency is real time, so it is `rate` times longer in business
        // time: a 100 ms commit interval would be ten business seconds per hop at 96x, and
        // a launch would miss its 75 s slot. Shorter commits keep business latencies near
        // production's (unless the environment sets one).
        if std::env::var_os("CALLSTREAM_COMMIT_INTERVAL_MS").is_none() {
            env.insert("CALLSTREAM_COMMIT_INTERVAL_MS".into(), "20".into());
        }
    }
    let topics = Topics {
        prefix: prefix.clone(),
        partitions: env
            .get("CALLSTREAM_TOPIC_PARTITIONS")
            .map(|p| p.parse())
            .transpose()
            .context("CALLSTREAM_TOPIC_PARTITIONS in demo.env")?
            .unwrap_or(callstream_platform::topics::DEFAULT_PARTITIONS),
        ..Topics::default()
    };
    let control = ControlFile::parse(&read(&control_path)?)
        .with_context(|| format!("{} is not a valid control file", control_path.display()))?;
    Ok(Run {
        id,
        prefix,
        log_dir,
        topics,
        kafka: KafkaSettings::new(bootstrap, "callstream-demo"),
        env,
        gateway_url,
        voice_url,
        crm_url,
        api_url,
        admin_urls,
        base_database_url,
        database,
        database_url,
        control,
        control_path,
    })
}

/// The settings of demo.env, each replaced by the demo's own environment
/// where that has it (`SIM_VOICE_COMPLETION_DROP_SHARE=0.05 callstream demo`),
/// except `RUST_LOG`: that is the orchestrator's own level (`cargo xtask
/// demo` quietens it), while the roles log to their files at the file's.
pub fn overridden(
    file: Vec<(String, String)>,
    outer: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    file.into_iter()
        .map(|(key, value)| {
            let value = match outer(&key) {
                Some(v) if key != "RUST_LOG" => v,
                _ => value,
            };
            (key, value)
        })
        .collect()
}

/// Creates the run's topics; returns how many.
pub async fn create_topics(run: &Run) -> Result<usize> {
    let report = admin::ensure_topics(&run.kafka, &run.topics.specs())
        .await
        .with_context(|| format!("creating topics on {}", run.kafka.bootstrap_servers))?;
    Ok(report.created.len() + report.existing.len())
}

/// Publishes `file` to the run's `control` topic; returns the number of
/// changes. Retried for a while: right after the topics are created the
/// broker may still be electing their leaders (`NotLeaderForPartition`).
pub async fn apply_control(run: &Run, file: &ControlFile, reason: &str) -> Result<usize> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let attempt = callstream_control::apply_file(
            &run.kafka,
            &run.topic(callstream_platform::topics::CONTROL),
            file,
            Actor::operator("callstream-demo"),
            Some(reason.to_owned()),
            false,
        )
        .await;
        match attempt {
            Ok(report) => return Ok(report.changes.len()),
            Err(e) if std::time::Instant::now() < deadline => {
                tracing::debug!(error = %e, "applying the control file; retrying");
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            Err(e) => return Err(e).context("applying the control file"),
        }
    }
}

/// Deletes the run's topics and the changelogs of its processors.
pub async fn delete_topics(run: &Run) -> Result<usize> {
    use rdkafka::admin::AdminOptions;
    let admin = admin::admin_client(&run.kafka)?;
    let existing = admin::partition_counts(&admin, &run.kafka.bootstrap_servers)?;
    let names: Vec<&str> = existing
        .keys()
        .filter(|name| name.starts_with(&run.prefix))
        .map(String::as_str)
        .collect();
    if names.is_empty() {
        return Ok(0);
    }
    admin
        .delete_topics(&names, &AdminOptions::new())
        .await
        .context("deleting the run's topics")?;
    Ok(names.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_files_read_like_shell_assignments() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("", &[]),
            ("# only a comment\n\n", &[]),
            ("A=1\nB = two \n", &[("A", "1"), ("B", "two")]),
            ("export C=\"quoted value\"", &[("C", "quoted value")]),
            ("URL=http://x/?a=b", &[("URL", "http://x/?a=b")]),
            ("EMPTY=", &[("EMPTY", "")]),
        ];
        for (text, expected) in cases {
            let parsed = parse_env(text).unwrap();
            let expected: Vec<(String, String)> = expected
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(parsed, expected, "{text:?}");
        }
    }

    #[test]
    fn env_files_refuse_lines_that_are_not_assignments() {
        for (text, line) in [("A=1\nnot an assignment", 2), ("BAD KEY=1", 1), ("=1", 1)] {
            assert_eq!(parse_env(text).unwrap_err().line, line, "{text:?}");
        }
    }

    #[test]
    fn the_shipped_demo_folder_is_valid() {
        let dir = demo_dir(None).unwrap();
        let env = parse_env(&read(&dir.join("demo.env")).unwrap()).unwrap();
        assert!(env
            .iter()
            .any(|(k, _)| k == "SIM_VOICE_COMPLETION_DROP_SHARE"));
        let control = ControlFile::parse(&read(&dir.join("control.toml")).unwrap()).unwrap();
        let acme = &control.tenants["acme"];
        assert!(acme.grid.is_some() && acme.completion.is_some());
        // The workload's campaigns all have settings of their own.
        for campaign in ["spring-intake", "fall-intake", "reengage"] {
            assert!(acme.campaigns.contains_key(campaign), "{campaign}");
        }
        // The soak's three tenants each have a launch token, a voice integration and a CRM
        // token of their own.
        let soak = ControlFile::parse(&read(&dir.join("soak-control.toml")).unwrap()).unwrap();
        assert_eq!(soak.tenants.len(), 3);
        let setting = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        let integrations = setting("CALLSTREAM_DISPATCH_INTEGRATIONS").unwrap();
        let crm_tokens = setting("CALLSTREAM_CRM_TENANT_TOKENS").unwrap();
        for tenant in soak.tenants.keys() {
            let own = launch_token_setting(tenant);
            assert!(tenant == "acme" || setting(&own).is_some(), "{own}");
            assert!(
                integrations.contains(&format!("{tenant}={tenant}-twilio")),
                "{tenant}"
            );
            assert!(crm_tokens.contains(&format!("{tenant}=")), "{tenant}");
        }
    }

    #[test]
    fn the_demos_environment_wins_over_the_file_but_not_for_rust_log() {
        let file = vec![
            ("RUST_LOG".to_string(), "info".to_string()),
            ("SIM_VOICE_COMPLETION_DROP_SHARE".into(), "0.04".into()),
            ("SIM_CRM_SEED".into(), "5".into()),
        ];
        let outer = |key: &str| match key {
            "RUST_LOG" => Some("warn".to_string()),
            "SIM_VOICE_COMPLETION_DROP_SHARE" => Some("0.05".to_string()),
            _ => None,
        };
        let env = overridden(file, outer);
        assert_eq!(env["RUST_LOG"], "info");
        assert_eq!(env["SIM_VOICE_COMPLETION_DROP_SHARE"], "0.05");
        assert_eq!(env["SIM_CRM_SEED"], "5");
    }

    #[test]
    fn run_ids_are_distinct_and_fit_topic_names() {
        let (a, b) = (run_id(), run_id());
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }
}

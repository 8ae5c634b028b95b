//! `callstream control apply <file>` and `callstream control show`: the
//! argument structs (for the `callstream` binary to mount) and what they do.
//!
//! An admin tool: it talks to the broker directly, so whoever can write to the
//! `control` topic can use it, and `--actor` (required, never defaulted from the
//! environment) is what they say they are; production restricts the topic with broker
//! ACLs. The operator API records the token's holder instead.
//!
//! `apply` validates the file before touching Kafka, reads the table to
//! its end, plans the differences and publishes them in one transaction
//! (or only prints them with `--dry-run`). Applying the same file again
//! publishes nothing. Two operators applying at the same moment may each
//! plan against the table before the other's commit; the later commit
//! wins, and both are in the log with their old values.

use std::path::PathBuf;

use callstream_platform::{topics, KafkaSettings, Topics};
use callstream_schemas::{Actor, ControlChange};
use clap::{Args, Subcommand};

use crate::diff::{change_events, plan_changes, ApplyMeta};
use crate::file::{ControlFile, FileError};
use crate::kafka::{publish, read_table, KafkaIoError};
use crate::show::{describe, render_json, render_text};
use callstream_kit::control::keys::SettingKey;
use callstream_kit::control::view::ControlSnapshot;

/// Where the control topic is.
#[derive(Debug, Clone, Args)]
pub struct ConnectionArgs {
    /// Kafka bootstrap servers.
    #[arg(long, env = "KAFKA_BOOTSTRAP_SERVERS", default_value = callstream_platform::kafka::DEFAULT_BOOTSTRAP_SERVERS)]
    pub bootstrap_servers: String,
    /// Prefix in front of every topic name (test isolation, shared clusters).
    #[arg(long, env = "CALLSTREAM_TOPIC_PREFIX", default_value = "")]
    pub prefix: String,
}

impl ConnectionArgs {
    /// The cluster named here, with the `KAFKA_<PROPERTY>` client properties of the
    /// environment (TLS, SASL).
    pub fn kafka(&self) -> KafkaSettings {
        let mut settings = KafkaSettings::from_env("callstream-control");
        settings
            .bootstrap_servers
            .clone_from(&self.bootstrap_servers);
        settings
    }

    pub fn control_topic(&self) -> String {
        Topics::with_prefix(&self.prefix).name(topics::CONTROL)
    }
}

/// `callstream control ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum ControlCommand {
    /// Validate a control file and publish the settings that differ from the table.
    ///
    /// An admin tool: it talks to the broker directly, so anyone who can write to the
    /// `control` topic can use it, as any actor they name (production restricts the topic
    /// with broker ACLs). Operators change settings through the operator API, whose actor
    /// is the token's holder.
    Apply(ApplyArgs),
    /// Print the control table.
    Show(ShowArgs),
}

/// Runs a `control` subcommand.
pub async fn run(command: &ControlCommand) -> Result<(), ControlError> {
    match command {
        ControlCommand::Apply(args) => apply(args).await.map(|_| ()),
        ControlCommand::Show(args) => show(args).await,
    }
}

#[derive(Debug, Clone, Args)]
pub struct ApplyArgs {
    /// The control file (TOML; see edges/control/example-control.toml).
    pub file: PathBuf,
    /// Who applies it, recorded on every change (required; never taken from the
    /// environment, so nobody is recorded as somebody else by default).
    #[arg(long)]
    pub actor: String,
    /// Why, recorded on every change.
    #[arg(long)]
    pub reason: Option<String>,
    /// Print the changes without publishing them.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// Only this tenant's settings.
    #[arg(long)]
    pub tenant: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Why a `control` command failed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid control file: {source}")]
    File {
        path: PathBuf,
        #[source]
        source: FileError,
    },
    #[error("no actor: pass --actor <who> (your own name; it is recorded on every change)")]
    NoActor,
    #[error(transparent)]
    Kafka(#[from] KafkaIoError),
}

/// What an apply did.
#[derive(Debug, Clone)]
pub struct ApplyReport {
    /// The changes, in key order (published unless a dry run).
    pub changes: Vec<ControlChange>,
    pub published: bool,
}

/// `control apply`: validate, compare, publish; prints what changed.
pub async fn apply(args: &ApplyArgs) -> Result<ApplyReport, ControlError> {
    let actor = Some(args.actor.trim())
        .filter(|a| !a.is_empty())
        .ok_or(ControlError::NoActor)?;
    let text = std::fs::read_to_string(&args.file).map_err(|source| ControlError::Read {
        path: args.file.clone(),
        source,
    })?;
    let file = ControlFile::parse(&text).map_err(|source| ControlError::File {
        path: args.file.clone(),
        source,
    })?;
    let report = apply_file(
        &args.connection.kafka(),
        &args.connection.control_topic(),
        &file,
        Actor::operator(actor),
        args.reason.clone(),
        args.dry_run,
    )
    .await?;
    print!("{}", render_report(&report));
    Ok(report)
}

/// Applies a validated file to the control topic (the part of `apply` after parsing).
pub async fn apply_file(
    kafka: &KafkaSettings,
    topic: &str,
    file: &ControlFile,
    actor: Actor,
    reason: Option<String>,
    dry_run: bool,
) -> Result<ApplyReport, KafkaIoError> {
    let snapshot = read_table(kafka, topic).await?;
    let current = current_values(&snapshot);
    let plan = plan_changes(&file.desired(), &file.scope(), &current);
    let meta = ApplyMeta {
        apply_id: uuid::Uuid::new_v4(),
        actor,
        at: callstream_platform::clock::now_utc(),
        reason,
    };
    let changes = change_events(&plan, &meta);
    let publishing = !dry_run && !changes.is_empty();
    if publishing {
        let transactional_id = format!("callstream-control-apply-{}", meta.apply_id);
        publish(kafka, topic, &transactional_id, &changes).await?;
    }
    Ok(ApplyReport {
        changes,
        published: publishing,
    })
}

/// The values in force, per setting; unreadable entries are left out (so
/// the file overwrites them) with a warning.
pub fn current_values(
    snapshot: &ControlSnapshot,
) -> std::collections::BTreeMap<SettingKey, callstream_schemas::ControlValue> {
    snapshot
        .changes()
        .into_iter()
        .filter_map(|(key, change)| match change {
            Ok(change) => Some((key, change.new_value)),
            Err(error) => {
                tracing::warn!(key = %key.record_key(), %error, "unreadable control value; the file replaces it");
                None
            }
        })
        .collect()
}

fn render_report(report: &ApplyReport) -> String {
    if report.changes.is_empty() {
        return "no changes: the control table already says what the file says\n".to_owned();
    }
    let mut out = String::new();
    for change in &report.changes {
        let old = change
            .old_value
            .as_ref()
            .map_or_else(|| "(default)".to_owned(), |v| describe(change.setting, v));
        out.push_str(&format!(
            "{}\n    from: {old}\n    to:   {}\n",
            change.record_key(),
            describe(change.setting, &change.new_value)
        ));
    }
    out.push_str(&if report.published {
        format!("published {} change(s)\n", report.changes.len())
    } else {
        format!(
            "dry run: {} change(s) not published\n",
            report.changes.len()
        )
    });
    out
}

/// `control show`: prints the table.
pub async fn show(args: &ShowArgs) -> Result<(), ControlError> {
    let snapshot = read_table(&args.connection.kafka(), &args.connection.control_topic()).await?;
    if args.json {
        let json = render_json(&snapshot, args.tenant.as_deref());
        println!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_else(|_| json.to_string())
        );
    } else {
        print!("{}", render_text(&snapshot, args.tenant.as_deref()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        command: ControlCommand,
    }

    #[test]
    fn apply_without_actor_is_refused_even_when_user_is_set() {
        // $USER is set in any login shell (and in CI); it must not stand in for --actor.
        let parsed = Cli::try_parse_from(["control", "apply", "file.toml"]);
        let error = parsed.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("--actor"), "{error}");
    }

    #[test]
    fn apply_records_the_actor_given() {
        let parsed =
            Cli::try_parse_from(["control", "apply", "file.toml", "--actor", "ann@ops"]).ok();
        let Some(Cli {
            command: ControlCommand::Apply(args),
        }) = parsed
        else {
            panic!("apply with --actor parses");
        };
        assert_eq!(args.actor, "ann@ops");
    }

    #[tokio::test]
    async fn a_blank_actor_is_refused_before_anything_is_read() {
        let args = ApplyArgs {
            // Neither exists: reading the file or reaching Kafka would fail differently.
            file: PathBuf::from("/nonexistent/control.toml"),
            actor: "  ".into(),
            reason: None,
            dry_run: true,
            connection: ConnectionArgs {
                bootstrap_servers: "127.0.0.1:1".into(),
                prefix: String::new(),
            },
        };
        let result = apply(&args).await;
        assert!(matches!(result, Err(ControlError::NoActor)), "{result:?}");
    }
}

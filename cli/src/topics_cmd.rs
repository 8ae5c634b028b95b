//! `callstream topics ...`: topics as code, applied to a cluster.

use anyhow::{bail, Context, Result};
use callstream_platform::{admin, KafkaSettings, Topics};
use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub enum TopicsCommand {
    /// Create every missing topic; report existing ones whose settings differ.
    Create(TopicsArgs),
    /// Report missing topics and differing settings without changing anything.
    Check(TopicsArgs),
    /// Print the declared topics and their settings.
    List(TopicsArgs),
}

#[derive(Args)]
pub struct TopicsArgs {
    /// Kafka bootstrap servers.
    #[arg(long, env = "KAFKA_BOOTSTRAP_SERVERS", default_value = callstream_platform::kafka::DEFAULT_BOOTSTRAP_SERVERS)]
    bootstrap_servers: String,
    /// Prefix in front of every topic name (test isolation, shared clusters).
    #[arg(long, env = "CALLSTREAM_TOPIC_PREFIX", default_value = "")]
    prefix: String,
    /// Partitions of every topic.
    #[arg(long, env = "CALLSTREAM_TOPIC_PARTITIONS", default_value_t = callstream_platform::topics::DEFAULT_PARTITIONS)]
    partitions: i32,
    /// Replicas of every topic.
    #[arg(long, env = "CALLSTREAM_REPLICATION_FACTOR", default_value_t = 1)]
    replication_factor: i32,
    /// `min.insync.replicas` of every topic.
    #[arg(long, env = "CALLSTREAM_MIN_INSYNC_REPLICAS", default_value_t = 1)]
    min_insync_replicas: i32,
}

impl TopicsArgs {
    fn topics(&self) -> Topics {
        Topics {
            prefix: self.prefix.clone(),
            partitions: self.partitions,
            replication_factor: self.replication_factor,
            min_insync_replicas: self.min_insync_replicas,
        }
    }
}

pub async fn run(command: TopicsCommand) -> Result<()> {
    match command {
        TopicsCommand::List(args) => {
            for spec in args.topics().specs() {
                let configs: Vec<String> = spec
                    .configs()
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                println!(
                    "{:<28} partitions={} replicas={} {}",
                    spec.name,
                    spec.partitions,
                    spec.replication_factor,
                    configs.join(" ")
                );
            }
            Ok(())
        }
        TopicsCommand::Create(args) => apply(&args, true).await,
        TopicsCommand::Check(args) => apply(&args, false).await,
    }
}

async fn apply(args: &TopicsArgs, create: bool) -> Result<()> {
    let settings = KafkaSettings::new(&args.bootstrap_servers, "callstream-topics");
    let specs = args.topics().specs();
    let report = if create {
        admin::ensure_topics(&settings, &specs).await
    } else {
        admin::check_topics(&settings, &specs).await
    }
    .with_context(|| format!("managing topics on {}", args.bootstrap_servers))?;
    for name in &report.created {
        println!("created  {name}");
    }
    for name in &report.missing {
        println!("missing  {name}");
    }
    println!(
        "{} created, {} already there, {} missing, {} settings differ",
        report.created.len(),
        report.existing.len(),
        report.missing.len(),
        report.differences.len()
    );
    for d in &report.differences {
        println!(
            "differs  {}: {} is {:?}, the spec says {:?} (not changed; an operator decides)",
            d.topic, d.setting, d.actual, d.expected
        );
    }
    if !create && !report.missing.is_empty() {
        bail!("{} topics are missing", report.missing.len());
    }
    Ok(())
}

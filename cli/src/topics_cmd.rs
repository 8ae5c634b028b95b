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
    /// Print the topic catalogue for downstream teams (Markdown, what docs/topics.md holds):
    /// each topic's values, key, retention, writers and readers, and every field's meaning.
    Catalogue,
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
    /// Replicas of every topic (a cluster: 3).
    #[arg(long, env = "CALLSTREAM_REPLICATION_FACTOR", default_value_t = 3)]
    replication_factor: i32,
    /// `min.insync.replicas` of every topic: how many replicas have a record before the
    /// producers (acks=all) are told it is written (a cluster: 2).
    #[arg(long, env = "CALLSTREAM_MIN_INSYNC_REPLICAS", default_value_t = 2)]
    min_insync_replicas: i32,
    /// Allow topics whose acknowledged records may live on one broker only
    /// (`min.insync.replicas` 1): a single-broker development stack. Never on a cluster
    /// that holds real work.
    #[arg(long, env = "CALLSTREAM_ALLOW_SINGLE_REPLICA")]
    allow_single_replica: bool,
}

/// The fewest in-sync replicas that keep an acknowledged record through a broker's loss.
pub const DURABLE_MIN_INSYNC: i32 = 2;

impl TopicsArgs {
    /// Refuses replication the producers' durability cannot rest on: `acks=all` means
    /// "every in-sync replica has it", so with `min.insync.replicas` 1 a 202 from the
    /// gateway can rest on one disk.
    fn check_durability(&self) -> Result<()> {
        let (rf, isr) = (self.replication_factor, self.min_insync_replicas);
        if rf < 1 || isr < 1 {
            bail!("--replication-factor and --min-insync-replicas must be at least 1 (got {rf} and {isr})");
        }
        if isr > rf {
            bail!(
                "--min-insync-replicas {isr} is more than --replication-factor {rf}: no write \
                 could ever be acknowledged"
            );
        }
        if isr < DURABLE_MIN_INSYNC && !self.allow_single_replica {
            bail!(
                "--min-insync-replicas {isr} lets a record the producers were told is written \
                 (acks=all) live on one broker only, and that broker's loss loses it. On a \
                 cluster use --replication-factor 3 --min-insync-replicas {DURABLE_MIN_INSYNC} \
                 (the defaults); for a single-broker development stack pass \
                 --allow-single-replica"
            );
        }
        Ok(())
    }

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
        TopicsCommand::Catalogue => {
            print!("{}", crate::catalogue::render());
            Ok(())
        }
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
        TopicsCommand::Create(args) => {
            args.check_durability()?;
            apply(&args, true).await
        }
        TopicsCommand::Check(args) => apply(&args, false).await,
    }
}

async fn apply(args: &TopicsArgs, create: bool) -> Result<()> {
    // The cluster named here, with the environment's client properties (TLS, SASL).
    let mut settings = KafkaSettings::from_env_checked("callstream-topics")
        .context("Kafka client properties from the environment")?;
    settings
        .bootstrap_servers
        .clone_from(&args.bootstrap_servers);
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

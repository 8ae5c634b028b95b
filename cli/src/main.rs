//! The `callstream` binary: every role of the system is a subcommand, so
//! one artefact is built, shipped and versioned.

mod signals;
mod topics_cmd;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

/// callstream: an event-sourced workflow engine for outbound voice calling, on Kafka.
#[derive(Parser)]
#[command(name = "callstream", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create the topics of the design and check the ones that exist.
    #[command(subcommand)]
    Topics(topics_cmd::TopicsCommand),
    /// Serve provider webhooks and launch intake; 202 only once Kafka has the event.
    Gateway {
        /// A TOML file with integrations, tenants and secrets (else `CALLSTREAM_GATEWAY_CONFIG`).
        #[arg(long)]
        config: Option<std::path::PathBuf>,
    },
}

#[tokio::main]
async fn main() -> Result<()> {
    callstream_platform::telemetry::init_tracing("info");
    let cli = Cli::parse();
    match cli.command {
        Command::Topics(command) => topics_cmd::run(command).await,
        Command::Gateway { config } => {
            let config = match config {
                Some(path) => callstream_gateway::GatewayConfig::load(Some(&path)),
                None => callstream_gateway::GatewayConfig::from_env(),
            }
            .context("loading the gateway configuration")?;
            callstream_gateway::run(config, signals::shutdown_signal())
                .await
                .context("gateway failed")
        }
    }
}

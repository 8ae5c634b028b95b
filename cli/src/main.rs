//! The `callstream` binary: every role of the system is a subcommand, so
//! one artefact is built, shipped and versioned.

mod topics_cmd;

use anyhow::Result;
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
}

#[tokio::main]
async fn main() -> Result<()> {
    callstream_platform::telemetry::init_tracing("info");
    let cli = Cli::parse();
    match cli.command {
        Command::Topics(command) => topics_cmd::run(command).await,
    }
}

//! The `callstream` binary: every role of the system is a subcommand, so
//! one artefact is built, shipped and versioned.

mod catalogue;
mod db_check;
mod db_cmd;
mod demo;
mod kafka_check;
#[cfg(test)]
mod metrics_catalog;
mod process_cmd;
mod registry;
mod signals;
mod topics_cmd;
mod views_cmd;

use anyhow::{Context, Result};
use callstream_platform::topics;
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
    /// Simulators of the outside world, for tests and the demo.
    #[command(subcommand)]
    Sim(SimCommand),
    /// Run one stream processor (exactly once, on Kafka).
    #[command(subcommand)]
    Process(process_cmd::ProcessCommand),
    /// Runtime configuration on the `control` topic. An admin tool: it talks to the broker
    /// directly (anyone with broker access can use it; production restricts that with
    /// broker ACLs), and `apply` requires `--actor`.
    #[command(subcommand)]
    Control(callstream_control::ControlCommand),
    /// The main job: the whole pipeline on a simulated workload, ending in a summary.
    Demo(Box<demo::DemoArgs>),
    /// The Postgres views, exactly once (`rebuild` rebuilds them from offset 0).
    Projections(views_cmd::ProjectionsArgs),
    /// The operator API: the views over HTTP, actions as commands on Kafka.
    OperatorApi,
    /// The database: migrations, and roles so that no service is a superuser.
    #[command(subcommand)]
    Db(db_cmd::DbCommand),
    /// Bearer tokens of the operator API.
    #[command(subcommand)]
    Tokens(views_cmd::TokensCommand),
    /// Serve provider webhooks and launch intake; 202 only once Kafka has the event.
    Gateway {
        /// A TOML file with integrations, tenants and secrets (else `CALLSTREAM_GATEWAY_CONFIG`).
        #[arg(long)]
        config: Option<std::path::PathBuf>,
    },
}

impl Command {
    /// The `service` every log line of this process names.
    fn service(&self) -> &'static str {
        match self {
            Self::Process(process) => process.name(),
            Self::Sim(SimCommand::Voice(_)) => "sim-voice",
            Self::Sim(SimCommand::Crm(_)) => "sim-crm",
            Self::Sim(SimCommand::Workload(_)) => "workload",
            Self::Demo(_) => "demo",
            Self::Projections(_) => "projections",
            Self::OperatorApi => "operator-api",
            Self::Gateway { .. } => "gateway",
            Self::Topics(_) | Self::Control(_) | Self::Tokens(_) | Self::Db(_) => "cli",
        }
    }
}

#[derive(Subcommand)]
enum SimCommand {
    /// The voice platform simulator (Twilio's Voice REST API subset, signed callbacks, faults).
    Voice(Box<callstream_sim_voice::SimVoiceConfig>),
    /// The CRM simulator (HubSpot CRM v3 subset, rate limit, faults).
    Crm(Box<callstream_sim_crm::SimCrmConfig>),
    /// Send a realistic launch workload to the gateway's intake (bursts, zones, campaigns).
    Workload(callstream_workload::WorkloadArgs),
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut cli = Cli::parse();
    callstream_platform::telemetry::init_service_tracing(cli.command.service(), "info");
    if let Command::Demo(args) = &mut cli.command {
        args.install_clock()?;
    }
    // Read once, before anything asks the time: a bad CALLSTREAM_CLOCK stops here.
    let clock = callstream_platform::clock::init_from_env()?;
    if clock.rate() != 1.0 {
        tracing::info!(rate = clock.rate(), now = %clock.now_utc(), "on a scaled clock (CALLSTREAM_CLOCK)");
    }
    // Whatever writes or reads events: their framing is settled before the first record.
    if matches!(
        cli.command,
        Command::Process(_)
            | Command::Gateway { .. }
            | Command::Control(_)
            | Command::Projections(_)
            | Command::OperatorApi
            | Command::Demo(_)
    ) {
        registry::install_from_env().await?;
    }
    match cli.command {
        Command::Topics(command) => topics_cmd::run(command).await,
        Command::Sim(SimCommand::Voice(config)) => {
            callstream_sim_voice::run(*config, signals::shutdown_signal())
                .await
                .context("voice simulator failed")
        }
        Command::Sim(SimCommand::Crm(config)) => {
            callstream_sim_crm::run(*config, signals::shutdown_signal())
                .await
                .context("CRM simulator failed")
        }
        Command::Sim(SimCommand::Workload(args)) => callstream_workload::run(&args)
            .await
            .map(|_| ())
            .context("sending the workload"),
        Command::Process(command) => process_cmd::run(command).await,
        Command::Control(command) => callstream_control::run(&command)
            .await
            .context("control command failed"),
        Command::Demo(args) => demo::run(*args).await.context("the demo failed"),
        Command::Projections(args) => views_cmd::projections(args).await,
        Command::OperatorApi => views_cmd::operator_api().await,
        Command::Tokens(command) => views_cmd::tokens(command).await,
        Command::Db(command) => db_cmd::run(command).await,
        Command::Gateway { config } => {
            let config = match config {
                Some(path) => callstream_gateway::GatewayConfig::load(Some(&path)),
                None => callstream_gateway::GatewayConfig::from_env(),
            }
            .context("loading the gateway configuration")?;
            kafka_check::refuse_misconfigured(
                "the gateway",
                &config.kafka,
                &config.topics,
                &[topics::CALL_EVENTS, topics::CONTACT_COMMANDS],
            )
            .await?;
            callstream_gateway::run(config, signals::shutdown_signal())
                .await
                .context("gateway failed")
        }
    }
}

//! The Postgres side as subcommands: `callstream projections` (the live
//! views, exactly once; `rebuild` from offset 0), `callstream operator-api`
//! (reads of the views, actions as commands on Kafka) and `callstream
//! tokens` (the API's bearer tokens). Configuration comes from the
//! environment (`DATABASE_URL`, `KAFKA_BOOTSTRAP_SERVERS`,
//! `CALLSTREAM_TOPIC_*`, `CALLSTREAM_PROJECTIONS_*`, `CALLSTREAM_OPERATOR_API_*`).

use anyhow::{Context, Result};
use callstream_operator_api::Role;
use clap::{Args, Subcommand};

/// `callstream projections [rebuild VIEW...]`.
#[derive(Args, Debug)]
pub struct ProjectionsArgs {
    #[command(subcommand)]
    command: Option<ProjectionsCommand>,
}

#[derive(Subcommand, Debug)]
enum ProjectionsCommand {
    /// Rebuild views from offset 0 into new tables and swap them in when caught up (all
    /// views when none is named); the live views stay queryable meanwhile.
    Rebuild {
        /// Views to rebuild: jobs, exceptions, slots, launches, audit, timeline, control, commands.
        views: Vec<String>,
    },
}

/// Runs the live projections until SIGTERM, or one rebuild.
pub async fn projections(args: ProjectionsArgs) -> Result<()> {
    let config = callstream_projections::ProjectionsConfig::from_env()
        .context("reading the projections' configuration")?;
    match args.command {
        None => callstream_projections::run(config, crate::signals::shutdown_signal())
            .await
            .context("projections failed"),
        Some(ProjectionsCommand::Rebuild { views }) => {
            let views = callstream_projections::parse_views(&views.join(","))?;
            let report = callstream_projections::rebuild(config, &views, true)
                .await
                .context("rebuilding the views")?;
            println!(
                "rebuilt {} from {} records ({} undecodable) in {:.1} s",
                report
                    .views
                    .iter()
                    .map(|v| format!("{v:?}").to_lowercase())
                    .collect::<Vec<_>>()
                    .join(", "),
                report.records,
                report.undecodable,
                report.elapsed.as_secs_f64()
            );
            Ok(())
        }
    }
}

/// Serves the operator API until SIGTERM.
pub async fn operator_api() -> Result<()> {
    let config = callstream_operator_api::OperatorApiConfig::from_env()
        .context("reading the operator API's configuration")?;
    callstream_operator_api::run(config, crate::signals::shutdown_signal())
        .await
        .context("operator API failed")
}

/// `callstream tokens ...`.
#[derive(Subcommand, Debug)]
pub enum TokensCommand {
    /// Create a token and print it (once: only its hash is stored).
    Create {
        /// The tenant whose views and contacts the token may see and act on.
        #[arg(long)]
        tenant: String,
        /// viewer, operator or admin.
        #[arg(long, default_value = "viewer")]
        role: String,
        /// Who holds it (recorded with every action taken with it).
        #[arg(long, default_value = "cli")]
        subject: String,
    },
    /// Revoke a token by its id.
    Revoke {
        /// The token's id (printed on stderr when it was created).
        token_id: uuid::Uuid,
    },
}

/// Creates or revokes a token in the database at `DATABASE_URL`.
pub async fn tokens(command: TokensCommand) -> Result<()> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| callstream_projections::config::DEFAULT_DATABASE_URL.to_string());
    let pool = sqlx::PgPool::connect(&url)
        .await
        .context("connecting to Postgres (DATABASE_URL)")?;
    callstream_projections::migrate(&pool)
        .await
        .context("applying the migrations")?;
    match command {
        TokensCommand::Create {
            tenant,
            role,
            subject,
        } => {
            let role: Role = role.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
            let created = callstream_operator_api::create_token(&pool, &tenant, role, &subject)
                .await
                .context("storing the token")?;
            eprintln!(
                "token {} for tenant {tenant}, role {}",
                created.token_id,
                role.as_str()
            );
            // Alone on stdout, so `TOKEN=$(callstream tokens create ...)` works.
            println!("{}", created.token);
        }
        TokensCommand::Revoke { token_id } => {
            if callstream_operator_api::revoke_token(&pool, token_id).await? {
                println!("revoked {token_id}");
            } else {
                println!("no active token {token_id}");
            }
        }
    }
    Ok(())
}

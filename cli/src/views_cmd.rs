//! The Postgres side as subcommands: `callstream projections` (the live
//! views, exactly once; `rebuild` from offset 0), `callstream operator-api`
//! (reads of the views, actions as commands on Kafka) and `callstream
//! tokens` (the API's bearer tokens: create, list, revoke). Configuration comes from the
//! environment (`DATABASE_URL`, `KAFKA_BOOTSTRAP_SERVERS`,
//! `CALLSTREAM_TOPIC_*`, `CALLSTREAM_PROJECTIONS_*`, `CALLSTREAM_OPERATOR_API_*`).

use anyhow::{Context, Result};
use callstream_operator_api::Role;
use callstream_platform::clock::{Clock as _, SystemClock};
use callstream_platform::topics;
use chrono::{DateTime, Utc};
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
        /// Views to rebuild: jobs, exceptions, slots, launches, audit, timeline, control, commands, dead_letters.
        views: Vec<String>,
    },
}

/// Runs the live projections until SIGTERM, or one rebuild.
pub async fn projections(args: ProjectionsArgs) -> Result<()> {
    let config = callstream_projections::ProjectionsConfig::from_env()
        .context("reading the projections' configuration")?;
    crate::kafka_check::refuse_misconfigured("the projections", &config.kafka, &config.topics, &[])
        .await?;
    crate::db_check::refuse_misconfigured_database("the projections", &config.database_url).await?;
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
    crate::kafka_check::refuse_misconfigured(
        "the operator API",
        &config.kafka,
        &config.topics,
        &[topics::CONTACT_COMMANDS, topics::CONTROL],
    )
    .await?;
    crate::db_check::refuse_misconfigured_database("the operator API", &config.database_url)
        .await?;
    callstream_operator_api::run(config, crate::signals::shutdown_signal())
        .await
        .context("operator API failed")
}

/// `callstream tokens ...`.
#[derive(Subcommand, Debug)]
pub enum TokensCommand {
    /// Create a token and print it (once: only its hash is stored).
    Create {
        /// The tenant whose views and contacts the token may see and act on: one tenant
        /// (`*` and other wildcards are refused; no token acts for every tenant).
        #[arg(long)]
        tenant: String,
        /// viewer, operator or admin.
        #[arg(long, default_value = "viewer")]
        role: String,
        /// Who holds it (recorded with every action taken with it).
        #[arg(long, default_value = "cli")]
        subject: String,
        /// Refuse it after this long: a number with s, m, h or d (`90m`, `30d`). Without it
        /// (or --expires-at) the token lasts until revoked.
        #[arg(long, value_parser = parse_expires_in, conflicts_with = "expires_at")]
        expires_in: Option<chrono::Duration>,
        /// Refuse it from this time on (RFC 3339, e.g. 2027-01-31T18:00:00Z).
        #[arg(long, value_parser = parse_expires_at)]
        expires_at: Option<DateTime<Utc>>,
    },
    /// List the tokens (never their secrets): id, tenant, role, subject, created, expiry,
    /// state (active, expired, revoked).
    List {
        /// Only this tenant's tokens.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Revoke a token by its id; it is refused from the next request on.
    Revoke {
        /// The token's id (printed on stderr when it was created, and by `tokens list`).
        token_id: uuid::Uuid,
    },
}

/// `90m`, `12h`, `30d` or `3600s`: how long until a new token expires.
fn parse_expires_in(text: &str) -> Result<chrono::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: i64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 90m, 12h or 30d"))?;
    let duration = match unit {
        "s" => chrono::Duration::try_seconds(n),
        "m" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        _ => None,
    }
    .ok_or_else(|| format!("{text:?} is not a duration such as 90m, 12h or 30d"))?;
    if duration <= chrono::Duration::zero() {
        return Err("the duration must be more than zero".into());
    }
    Ok(duration)
}

fn parse_expires_at(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|at| at.with_timezone(&Utc))
        .map_err(|e| format!("{text:?} is not an RFC 3339 time such as 2027-01-31T18:00:00Z: {e}"))
}

/// Creates, lists or revokes tokens in the database at `DATABASE_URL`.
pub async fn tokens(command: TokensCommand) -> Result<()> {
    // Refused before connecting: a wildcard tenant is wrong wherever the database is.
    if let TokensCommand::Create { tenant, .. } = &command {
        if let Err(why) = callstream_operator_api::check_tenant(tenant) {
            anyhow::bail!("refusing to create a token for tenant {tenant:?}: {why}");
        }
    }
    let url = callstream_platform::settings::Settings::env()
        .database_url(callstream_projections::config::DEFAULT_DATABASE_URL)?;
    let pool = sqlx::PgPool::connect(&url)
        .await
        .context("connecting to Postgres (DATABASE_URL)")?;
    callstream_projections::migrate_if_behind(&pool)
        .await
        .context("applying the migrations")?;
    match command {
        TokensCommand::Create {
            tenant,
            role,
            subject,
            expires_in,
            expires_at,
        } => {
            let role: Role = role.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
            let expires_at = match (expires_in, expires_at) {
                (Some(after), _) => Some(
                    // Token expiry is checked in real time (see the operator API's auth).
                    SystemClock
                        .now_utc()
                        .checked_add_signed(after)
                        .context("--expires-in is too far away")?,
                ),
                (None, at) => at,
            };
            let created = callstream_operator_api::create_token_expiring(
                &pool, &tenant, role, &subject, expires_at,
            )
            .await
            .context("creating the token")?;
            let expiry = expires_at.map_or_else(
                || "never".to_owned(),
                |at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            );
            eprintln!(
                "token {} for tenant {tenant}, role {}, expires {expiry}",
                created.token_id,
                role.as_str()
            );
            // Alone on stdout, so `TOKEN=$(callstream tokens create ...)` works.
            println!("{}", created.token);
        }
        TokensCommand::List { tenant } => {
            let tokens = callstream_operator_api::list_tokens(&pool, tenant.as_deref())
                .await
                .context("listing the tokens")?;
            print!("{}", render_tokens(&tokens, SystemClock.now_utc()));
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

fn render_tokens(tokens: &[callstream_operator_api::TokenInfo], now: DateTime<Utc>) -> String {
    let time = |at: Option<DateTime<Utc>>, none: &str| {
        at.map_or_else(
            || none.to_owned(),
            |at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        )
    };
    let mut out = format!(
        "{:<36}  {:<16}  {:<8}  {:<16}  {:<20}  {:<20}  state\n",
        "token_id", "tenant", "role", "subject", "created", "expires"
    );
    for t in tokens {
        out.push_str(&format!(
            "{:<36}  {:<16}  {:<8}  {:<16}  {:<20}  {:<20}  {}\n",
            t.token_id,
            t.tenant_id,
            t.role,
            t.subject,
            time(Some(t.created_at), ""),
            time(t.expires_at, "never"),
            t.state(now)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_in_reads_seconds_minutes_hours_and_days() {
        let cases = [
            ("3600s", Some(chrono::Duration::seconds(3600))),
            ("90m", Some(chrono::Duration::minutes(90))),
            ("12h", Some(chrono::Duration::hours(12))),
            ("30d", Some(chrono::Duration::days(30))),
            ("0d", None),
            ("30", None),
            ("1w", None),
            ("-1d", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_expires_in(text).ok(), expected, "{text:?}");
        }
    }

    #[test]
    fn expires_at_is_rfc_3339() {
        assert!(parse_expires_at("2027-01-31T18:00:00Z").is_ok());
        assert!(parse_expires_at("2027-01-31T18:00:00+01:00").is_ok());
        assert!(parse_expires_at("2027-01-31").is_err());
    }

    #[test]
    fn the_token_list_shows_expiry_and_state() {
        let now = Utc::now();
        let token = |expires_at, revoked_at| callstream_operator_api::TokenInfo {
            token_id: uuid::Uuid::nil(),
            tenant_id: "acme".into(),
            role: "viewer".into(),
            subject: "ann".into(),
            created_at: now - chrono::Duration::days(2),
            expires_at,
            revoked_at,
        };
        let listed = render_tokens(
            &[
                token(None, None),
                token(Some(now - chrono::Duration::days(1)), None),
                token(Some(now + chrono::Duration::days(1)), None),
                token(None, Some(now)),
            ],
            now,
        );
        let lines: Vec<&str> = listed.lines().collect();
        assert_eq!(lines.len(), 5, "{listed}");
        assert!(lines[0].contains("expires") && lines[0].ends_with("state"));
        assert!(lines[1].contains("never") && lines[1].ends_with("active"));
        assert!(lines[2].ends_with("expired"), "{listed}");
        assert!(lines[3].ends_with("active") && !lines[3].contains("never"));
        assert!(lines[4].ends_with("revoked"));
    }
}

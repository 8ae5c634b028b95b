//! `callstream db`: the database's migrations and its roles, for deployments where no
//! service is a Postgres superuser (see `callstream_projections::roles`). The database is
//! the one `DATABASE_URL` (or `DATABASE_URL_FILE`) names.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use callstream_projections::roles::{self, RoleNames};
use clap::Subcommand;
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Apply the migrations, then give each table to its role when the roles exist. Run it as
    /// the owner role (`<prefix>_owner`) after every upgrade.
    Migrate {
        /// The roles' common prefix.
        #[arg(long, default_value = roles::DEFAULT_PREFIX)]
        prefix: String,
    },
    /// Print the roles and grants (owner, projections, operator; none a superuser), or apply
    /// them with --apply as an administrator (a superuser, or a role with CREATEROLE that
    /// owns the schema). Safe to run again.
    Roles {
        /// Run the statements instead of printing them.
        #[arg(long)]
        apply: bool,
        /// The roles' common prefix: `<prefix>_owner`, `<prefix>_projections`,
        /// `<prefix>_operator`.
        #[arg(long, default_value = roles::DEFAULT_PREFIX)]
        prefix: String,
        /// A directory of `<role>.password` files: each role with a file gets that password
        /// (with --apply; printing never shows a password).
        #[arg(long)]
        password_dir: Option<PathBuf>,
    },
}

fn database_url() -> Result<String> {
    Ok(callstream_platform::settings::Settings::env()
        .database_url(callstream_projections::config::DEFAULT_DATABASE_URL)?)
}

async fn connect(url: &str) -> Result<PgPool> {
    PgPool::connect(url)
        .await
        .context("connecting to Postgres (DATABASE_URL)")
}

/// The password of `role` from `<dir>/<role>.password`, if that file exists.
fn password_file(dir: &Path, role: &str) -> Result<Option<String>> {
    let path = dir.join(format!("{role}.password"));
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => bail!("{} is empty", path.display()),
        Ok(text) => Ok(Some(text.trim().to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

pub async fn run(command: DbCommand) -> Result<()> {
    let url = database_url()?;
    match command {
        DbCommand::Migrate { prefix } => {
            let names = RoleNames::with_prefix(&prefix)?;
            let pool = connect(&url).await?;
            let migrated = roles::migrate_and_grant(&pool, &names)
                .await
                .context("migrating")?;
            match migrated.tables_granted {
                Some(n) => println!(
                    "migrations applied; {n} tables given to {}, {} and {}",
                    names.owner, names.projections, names.operator
                ),
                None => println!(
                    "migrations applied; roles {prefix}_* do not exist, so no grants \
                     (`callstream db roles` makes them)"
                ),
            }
            Ok(())
        }
        DbCommand::Roles {
            apply: false,
            prefix,
            password_dir: _,
        } => {
            let names = RoleNames::with_prefix(&prefix)?;
            let database = PgConnectOptions::from_str(&url)
                .ok()
                .and_then(|o| o.get_database().map(str::to_owned))
                .unwrap_or_else(|| "callstream".to_owned());
            println!("-- callstream's Postgres roles (callstream db roles --apply runs these)");
            println!("-- passwords are not printed: ALTER ROLE <role> PASSWORD ... for each, or");
            println!("-- --apply --password-dir DIR with a <role>.password file per role.");
            println!("-- as a role with CREATEROLE:");
            for statement in roles::role_statements(&names, |_| None)? {
                println!("{statement};");
            }
            println!("-- in database {database}, as the owner of schema public:");
            for statement in roles::database_statements(&names, &database)? {
                println!("{statement};");
            }
            println!(
                "-- per table (callstream db migrate repeats these as {}):",
                names.owner
            );
            for statement in roles::table_statements(&names, &roles::migration_tables()) {
                println!("{statement};");
            }
            Ok(())
        }
        DbCommand::Roles {
            apply: true,
            prefix,
            password_dir,
        } => {
            let names = RoleNames::with_prefix(&prefix)?;
            let mut passwords = Vec::new();
            if let Some(dir) = &password_dir {
                for role in names.all() {
                    if let Some(secret) = password_file(dir, role)? {
                        passwords.push((role.to_owned(), secret));
                    }
                }
            }
            let pool = connect(&url).await?;
            let tables = roles::apply(&pool, &names, |role| {
                passwords
                    .iter()
                    .find(|(r, _)| r == role)
                    .map(|(_, secret)| secret.clone())
            })
            .await
            .context("applying the roles")?;
            println!(
                "roles {}, {} and {} ready ({} with a new password); {tables} tables granted",
                names.owner,
                names.projections,
                names.operator,
                passwords.len()
            );
            Ok(())
        }
    }
}

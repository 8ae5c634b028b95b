//! Postgres roles for a deployment where no service is a superuser.
//!
//! Three login roles, named `<prefix>_owner`, `<prefix>_projections` and `<prefix>_operator`
//! (prefix `callstream` by default):
//! - the **owner** runs the migrations and owns what is not a view (the migrations' ledger,
//!   which the others may read, and the token table);
//! - the **projections** role owns the view tables. It must own them: a rebuild creates a
//!   copy of a table and renames it into place, which only the owner of a table may do. The
//!   owner is a member of it, so later migrations can still alter the views;
//! - the **operator** role (the operator API and `callstream tokens`) reads the views and
//!   reads and writes the token table, nothing else. It gets `SELECT` on the tables a rebuild
//!   creates through the projections role's default privileges.
//!
//! The projections role has no grant on the token table, so it cannot read a token hash; the
//! operator role has no write grant on a view, so the API cannot alter one.
//!
//! The statements come in three parts: [`role_statements`] (cluster-wide, needs `CREATEROLE`),
//! [`database_statements`] (the database and its schema, needs the schema's owner) and
//! [`table_statements`] (ownership and grants per table, which the owner can run itself after
//! each migration: see [`migrate_and_grant`]). Every statement can be run again.

use sqlx::PgPool;

use crate::error::ProjectionError;

/// The tables the operator role writes; every other table the migrations create, except the
/// migrations' own ledger, is a view table that the projections own.
pub const OPERATOR_TABLES: &[&str] = &["api_tokens"];
/// Tables only the owner touches.
pub const OWNER_TABLES: &[&str] = &["_sqlx_migrations"];
/// The role prefix when none is given.
pub const DEFAULT_PREFIX: &str = "callstream";
/// The schema the migrations create their tables in.
const SCHEMA: &str = "public";

/// Why a role plan cannot be made or applied.
#[derive(Debug, thiserror::Error)]
pub enum RolesError {
    #[error(
        "role prefix {0:?} is not a lowercase SQL identifier of at most 40 characters \
         (letters, digits and _, not starting with a digit)"
    )]
    Prefix(String),
    #[error("database name {0:?} contains a double quote or a NUL")]
    Database(String),
    #[error("the password for {0} contains a NUL character")]
    Password(String),
    #[error(
        "role {0} is a superuser or may create roles or databases; callstream's roles must \
         not be (ALTER ROLE {0} NOSUPERUSER NOCREATEROLE NOCREATEDB as a superuser)"
    )]
    Privileged(String),
    #[error("postgres: {0}")]
    Postgres(#[from] sqlx::Error),
    #[error(transparent)]
    Projection(#[from] ProjectionError),
}

/// The three roles' names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleNames {
    pub owner: String,
    pub projections: String,
    pub operator: String,
}

impl RoleNames {
    pub fn with_prefix(prefix: &str) -> Result<Self, RolesError> {
        let valid = !prefix.is_empty()
            && prefix.len() <= 40
            && prefix.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && prefix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(RolesError::Prefix(prefix.to_string()));
        }
        Ok(Self {
            owner: format!("{prefix}_owner"),
            projections: format!("{prefix}_projections"),
            operator: format!("{prefix}_operator"),
        })
    }

    pub fn all(&self) -> [&str; 3] {
        [&self.owner, &self.projections, &self.operator]
    }
}

/// What a table is to the roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    View,
    Operator,
    Owner,
}

pub fn table_kind(table: &str) -> TableKind {
    if OPERATOR_TABLES.contains(&table) {
        TableKind::Operator
    } else if OWNER_TABLES.contains(&table) {
        TableKind::Owner
    } else {
        TableKind::View
    }
}

/// Every table the migrations create (from their SQL, in order), plus the ledger.
pub fn migration_tables() -> Vec<String> {
    let mut tables: Vec<String> = OWNER_TABLES.iter().map(|t| t.to_string()).collect();
    for migration in crate::runner::MIGRATOR.iter() {
        for line in migration.sql.lines() {
            let line = line.trim_start();
            let Some(rest) = line.strip_prefix("CREATE TABLE ") else {
                continue;
            };
            let rest = rest.strip_prefix("IF NOT EXISTS ").unwrap_or(rest);
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && !tables.contains(&name) {
                tables.push(name);
            }
        }
    }
    tables
}

/// A SQL string literal (standard_conforming_strings, on since Postgres 9.1).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Creates the roles if missing (never a superuser, never able to create roles or
/// databases), sets the passwords given, and makes the owner a member of the projections
/// role. `password` returns the password of a role, if one should be set.
pub fn role_statements(
    names: &RoleNames,
    password: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, RolesError> {
    let mut sql = Vec::new();
    for role in names.all() {
        // CREATE ROLE has no IF NOT EXISTS; two runs at once may race on the catalog's
        // unique index rather than see the role, hence both conditions.
        sql.push(format!(
            "DO $$ BEGIN CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE; \
             EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
        ));
        if let Some(secret) = password(role) {
            if secret.contains('\0') {
                return Err(RolesError::Password(role.to_string()));
            }
            sql.push(format!(
                "ALTER ROLE {role} LOGIN PASSWORD {}",
                literal(&secret)
            ));
        }
    }
    sql.push(format!("GRANT {} TO {}", names.projections, names.owner));
    Ok(sql)
}

/// Lets the roles into `database` and its schema: the owner and the projections may create
/// tables (the migrations; a rebuild's copies), the operator may not. The tables a rebuild
/// creates are readable by the operator from the start.
pub fn database_statements(names: &RoleNames, database: &str) -> Result<Vec<String>, RolesError> {
    if database.contains(['"', '\0']) {
        return Err(RolesError::Database(database.to_string()));
    }
    let RoleNames {
        owner,
        projections,
        operator,
    } = names;
    Ok(vec![
        format!("GRANT CONNECT ON DATABASE \"{database}\" TO {owner}, {projections}, {operator}"),
        format!("GRANT USAGE, CREATE ON SCHEMA {SCHEMA} TO {owner}, {projections}"),
        format!("GRANT USAGE ON SCHEMA {SCHEMA} TO {operator}"),
        format!(
            "ALTER DEFAULT PRIVILEGES FOR ROLE {projections} IN SCHEMA {SCHEMA} \
             GRANT SELECT ON TABLES TO {operator}"
        ),
    ])
}

/// Ownership and grants for `tables`.
pub fn table_statements(names: &RoleNames, tables: &[String]) -> Vec<String> {
    let mut sql = Vec::new();
    for table in tables {
        match table_kind(table) {
            TableKind::View => {
                sql.push(format!(
                    "ALTER TABLE {table} OWNER TO {}",
                    names.projections
                ));
                sql.push(format!("GRANT SELECT ON {table} TO {}", names.operator));
            }
            TableKind::Operator => {
                sql.push(format!("ALTER TABLE {table} OWNER TO {}", names.owner));
                sql.push(format!(
                    "GRANT SELECT, INSERT, UPDATE ON {table} TO {}",
                    names.operator
                ));
            }
            TableKind::Owner => {
                sql.push(format!("ALTER TABLE {table} OWNER TO {}", names.owner));
                // Read by every service at start to skip migrations that are applied.
                sql.push(format!(
                    "GRANT SELECT ON {table} TO {}, {}",
                    names.projections, names.operator
                ));
            }
        }
    }
    sql
}

/// The tables of the schema now, without a rebuild's leftovers (`*__rebuild`, `*__old`,
/// which the next rebuild drops).
async fn current_tables(pool: &PgPool) -> Result<Vec<String>, sqlx::Error> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY tablename",
    )
    .bind(SCHEMA)
    .fetch_all(pool)
    .await?;
    Ok(tables.into_iter().filter(|t| !t.contains("__")).collect())
}

async fn execute_all(pool: &PgPool, statements: &[String]) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    for statement in statements {
        sqlx::query(statement).execute(&mut *tx).await?;
    }
    tx.commit().await
}

/// Refuses roles that are superusers or may create roles or databases.
async fn check_unprivileged(pool: &PgPool, names: &RoleNames) -> Result<(), RolesError> {
    let privileged: Vec<String> = sqlx::query_scalar(
        "SELECT rolname::text FROM pg_roles WHERE rolname = ANY($1) \
         AND (rolsuper OR rolcreaterole OR rolcreatedb) ORDER BY rolname",
    )
    .bind(names.all().map(str::to_string).to_vec())
    .fetch_all(pool)
    .await?;
    match privileged.into_iter().next() {
        Some(role) => Err(RolesError::Privileged(role)),
        None => Ok(()),
    }
}

/// Everything, as an administrator (a superuser, or a role with `CREATEROLE` that owns the
/// schema): the roles, the database's grants, and the grants on the tables there now.
/// Returns the number of tables granted.
pub async fn apply(
    pool: &PgPool,
    names: &RoleNames,
    password: impl Fn(&str) -> Option<String>,
) -> Result<usize, RolesError> {
    let database: String = sqlx::query_scalar("SELECT current_database()::text")
        .fetch_one(pool)
        .await?;
    let tables = current_tables(pool).await?;
    let mut statements = role_statements(names, password)?;
    statements.extend(database_statements(names, &database)?);
    statements.extend(table_statements(names, &tables));
    execute_all(pool, &statements).await?;
    check_unprivileged(pool, names).await?;
    Ok(tables.len())
}

/// Whether the roles of `names` exist in this cluster.
async fn roles_exist(pool: &PgPool, names: &RoleNames) -> Result<bool, sqlx::Error> {
    let found: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_roles WHERE rolname = ANY($1)")
        .bind(names.all().map(str::to_string).to_vec())
        .fetch_one(pool)
        .await?;
    Ok(found == 3)
}

/// What [`migrate_and_grant`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// Tables given to their roles; `None` when the roles do not exist (a dev database where
    /// everything runs as one user).
    pub tables_granted: Option<usize>,
}

/// Applies the migrations and, when the roles exist, gives every table to its role: what the
/// owner runs after each upgrade (a new view table it created becomes the projections').
pub async fn migrate_and_grant(pool: &PgPool, names: &RoleNames) -> Result<Migrated, RolesError> {
    crate::runner::migrate(pool).await?;
    if !roles_exist(pool, names).await? {
        return Ok(Migrated {
            tables_granted: None,
        });
    }
    let tables = current_tables(pool).await?;
    execute_all(pool, &table_statements(names, &tables)).await?;
    Ok(Migrated {
        tables_granted: Some(tables.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_plain_identifiers() {
        assert!(RoleNames::with_prefix("callstream").is_ok());
        assert!(RoleNames::with_prefix("cs_2").is_ok());
        for bad in ["", "2cs", "Callstream", "cs-x", "cs;drop", &"x".repeat(41)] {
            assert!(RoleNames::with_prefix(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_migrations_tables_are_classified() {
        let tables = migration_tables();
        for expected in [
            "_sqlx_migrations",
            "api_tokens",
            "jobs",
            "projection_offsets",
        ] {
            assert!(
                tables.iter().any(|t| t == expected),
                "{expected} missing: {tables:?}"
            );
        }
        assert!(tables.iter().all(|t| !t.contains("__")), "{tables:?}");
        assert_eq!(table_kind("api_tokens"), TableKind::Operator);
        assert_eq!(table_kind("jobs"), TableKind::View);
        assert_eq!(table_kind("_sqlx_migrations"), TableKind::Owner);
    }

    #[test]
    fn the_operator_never_gets_a_write_on_a_view() {
        let names = RoleNames::with_prefix("cs").unwrap();
        let sql = table_statements(&names, &migration_tables());
        for statement in &sql {
            if statement.contains("TO cs_operator") && !statement.contains("api_tokens") {
                assert!(statement.starts_with("GRANT SELECT ON "), "{statement}");
            }
            if statement.contains("api_tokens") {
                assert!(!statement.contains("cs_projections"), "{statement}");
            }
        }
    }

    #[test]
    fn passwords_are_quoted_and_nul_refused() {
        let names = RoleNames::with_prefix("cs").unwrap();
        let sql = role_statements(&names, |r| (r == "cs_owner").then(|| "it's".into())).unwrap();
        assert!(sql.contains(&"ALTER ROLE cs_owner LOGIN PASSWORD 'it''s'".to_string()));
        assert!(role_statements(&names, |_| Some("a\0b".into())).is_err());
        assert!(database_statements(&names, "x\"y").is_err());
    }
}

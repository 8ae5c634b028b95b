//! The Postgres side of the start check (beside `kafka_check`): the projections, the operator
//! API and `callstream tokens` connect once at start, and a misconfiguration (TLS, the
//! password, a connection the server's rules reject, a database that does not exist) stops
//! them with its cause. A server that does not answer yet does not: they retry as they do
//! for an outage later.

use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Result};
use sqlx::postgres::PgConnectOptions;
use sqlx::ConnectOptions;

const TIMEOUT: Duration = Duration::from_secs(10);

/// What one connection attempt says about the configuration.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Usable,
    /// Not reachable now (refused, timed out): worth waiting for.
    Unreachable(String),
    /// Wrong whatever the wait: the message names the cause.
    Misconfigured(String),
}

fn verdict(user: &str, error: &sqlx::Error) -> Verdict {
    match error {
        sqlx::Error::Tls(e) => Verdict::Misconfigured(format!("{TLS_FAILED}: {e}{TLS_HINT}")),
        sqlx::Error::Configuration(e) => {
            Verdict::Misconfigured(format!("the database URL cannot be used: {e}"))
        }
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default().to_string();
            let message = db.message();
            let cause = match code.as_str() {
                "28P01" => format!("Postgres refused the password of user {user:?}"),
                "28000" => format!(
                    "Postgres does not let user {user:?} in this way: {message} (a server \
                     that takes only TLS needs sslmode=require or verify-full)"
                ),
                "3D000" => format!("the database does not exist: {message}"),
                "42501" => format!("user {user:?} may not connect: {message}"),
                c if c.starts_with("08") || c.starts_with("57P") || c.starts_with("53") => {
                    return Verdict::Unreachable(format!("{message} (SQLSTATE {code})"))
                }
                _ => format!("Postgres refused the connection: {message} (SQLSTATE {code})"),
            };
            Verdict::Misconfigured(cause)
        }
        // rustls's handshake errors (an unknown issuer, a name the certificate is not for)
        // reach us as I/O errors of this kind; a refused or dropped connection never does.
        sqlx::Error::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            Verdict::Misconfigured(format!("{TLS_FAILED}: {e}{TLS_HINT}"))
        }
        other => Verdict::Unreachable(other.to_string()),
    }
}

const TLS_FAILED: &str = "the TLS handshake with Postgres failed";
const TLS_HINT: &str = " (is sslrootcert in the URL the CA that signed the server's \
                        certificate, and the host a name it is for?)";

/// Connects to `url` once; stops `service` when the configuration cannot work.
pub async fn refuse_misconfigured_database(service: &str, url: &str) -> Result<()> {
    let options = match PgConnectOptions::from_str(url) {
        Ok(options) => options,
        // The URL itself is not shown: it may hold the password.
        Err(e) => bail!("{service}: the database URL cannot be used: {e}"),
    };
    let user = options.get_username().to_owned();
    let attempt = tokio::time::timeout(TIMEOUT, options.connect()).await;
    let result = match attempt {
        Ok(Ok(connection)) => {
            let _ = sqlx::Connection::close(connection).await;
            Verdict::Usable
        }
        Ok(Err(e)) => verdict(&user, &e),
        Err(_) => Verdict::Unreachable(format!("no answer in {TIMEOUT:?}")),
    };
    match result {
        Verdict::Usable => Ok(()),
        Verdict::Unreachable(why) => {
            tracing::warn!(%why, "{service} starts without Postgres for now");
            Ok(())
        }
        Verdict::Misconfigured(why) => bail!("{service} cannot use Postgres: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unanswered_connection_is_worth_waiting_for() {
        let refused = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(matches!(verdict("u", &refused), Verdict::Unreachable(_)));
        assert!(matches!(
            verdict("u", &sqlx::Error::PoolTimedOut),
            Verdict::Unreachable(_)
        ));
    }

    #[test]
    fn tls_and_url_problems_are_named() {
        let tls = sqlx::Error::Tls("invalid peer certificate: UnknownIssuer".into());
        match verdict("u", &tls) {
            Verdict::Misconfigured(why) => assert!(why.contains("TLS handshake"), "{why}"),
            other => panic!("{other:?}"),
        }
        let unknown_issuer = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "invalid peer certificate: UnknownIssuer",
        ));
        match verdict("u", &unknown_issuer) {
            Verdict::Misconfigured(why) => assert!(why.contains("UnknownIssuer"), "{why}"),
            other => panic!("{other:?}"),
        }
        let url = sqlx::Error::Configuration("bad sslmode".into());
        assert!(matches!(verdict("u", &url), Verdict::Misconfigured(_)));
    }
}

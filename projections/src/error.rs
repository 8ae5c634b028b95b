//! What can go wrong in a projection, and whether waiting helps.
//!
//! Postgres being away is not an error here: the runner pauses and retries (see
//! [`is_transient`]). What reaches the caller is what waiting cannot fix.

use rdkafka::error::KafkaError;

/// Why the projections stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// The Kafka client could not be created or assigned its partitions.
    #[error("kafka: {0}")]
    Kafka(#[from] KafkaError),
    /// A Postgres error that retrying will not fix (a bug, a missing migration, ...).
    #[error("postgres: {0}")]
    Postgres(#[from] sqlx::Error),
    /// The migrations could not be applied.
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A view table is not as a rebuild expects (an index it cannot copy, ...).
    #[error("rebuild: {0}")]
    Rebuild(String),
    /// A configuration value that cannot be used.
    #[error("configuration: {0}")]
    Config(String),
}

/// Whether an error means "Postgres is (temporarily) not there or too busy": the batch is
/// kept and retried, never dropped. Connection failures, shutdowns, resource exhaustion,
/// serialization failures and deadlocks are transient; anything else is about the data or
/// the schema and is not.
pub fn is_transient(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            let code = code.as_ref();
            code.starts_with("08") // connection exception
                || code.starts_with("53") // insufficient resources
                || code.starts_with("57P") // admin shutdown, crash shutdown, cannot connect now
                || code == "40001" // serialization failure
                || code == "40P01" // deadlock detected
                || code == "55P03" // lock not available
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_loss_is_transient_and_bugs_are_not() {
        let io = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(is_transient(&io));
        assert!(is_transient(&sqlx::Error::PoolTimedOut));
        assert!(!is_transient(&sqlx::Error::RowNotFound));
        assert!(!is_transient(&sqlx::Error::ColumnNotFound("x".into())));
    }
}

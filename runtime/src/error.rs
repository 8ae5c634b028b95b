//! Runtime errors, by what the caller can do about them.

use rdkafka::error::KafkaError;

use crate::spec::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The topics are not as the processor needs them; fix the topics or the
    /// configuration and start again. Nothing was consumed.
    #[error("refusing to start {app}: {reason}")]
    Setup { app: String, reason: String },

    /// The processor's declared stores cannot run (`Processor::stores`):
    /// fix the code. Nothing was created or consumed.
    #[error("refusing to start {app}: {source}")]
    Stores {
        app: String,
        #[source]
        source: StoreError,
    },

    /// Another instance with our transactional id took over, or the broker
    /// lost our producer's state: exit and let the supervisor restart us.
    #[error("fatal Kafka error in {app}: {source}")]
    Fatal {
        app: String,
        #[source]
        source: KafkaError,
    },

    /// A Kafka client could not be created or configured.
    #[error("Kafka client error in {app}: {source}")]
    Client {
        app: String,
        #[source]
        source: KafkaError,
    },
}

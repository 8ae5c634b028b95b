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

impl RuntimeError {
    /// Whether new clients may take over from the ones that failed (see `run`): the error is
    /// the cluster's state after a broker's loss, not another instance holding our ids. The
    /// group fencing our own static member after a coordinator failover
    /// (`FENCED_INSTANCE_ID`); the transaction coordinator refusing the end of a transaction
    /// whose state it lost (`INVALID_TXN_STATE`); the idempotent producer's sequence or id
    /// lost with a partition leader (`OUT_OF_ORDER_SEQUENCE_NUMBER`, `UNKNOWN_PRODUCER_ID`,
    /// `INVALID_PRODUCER_ID_MAPPING`); and a metadata or restore request that timed out or
    /// found no coordinator, leader or partition while brokers were down. A fenced producer (`PRODUCER_FENCED`,
    /// `INVALID_PRODUCER_EPOCH`) is not: a successor with our transactional id owns our
    /// partitions now, and taking them back would fence it in turn.
    pub fn is_replaceable(&self) -> bool {
        use rdkafka::types::RDKafkaErrorCode as Code;
        let source = match self {
            Self::Fatal { source, .. } | Self::Client { source, .. } => source,
            Self::Setup { .. } | Self::Stores { .. } => return false,
        };
        matches!(
            source.rdkafka_error_code(),
            Some(
                Code::FencedInstanceId
                    | Code::InvalidTransactionalState
                    | Code::OutOfOrderSequenceNumber
                    | Code::UnknownProducerId
                    | Code::InvalidProducerIdMapping
                    // The cluster not answering yet while new clients set up or restore.
                    | Code::OperationTimedOut
                    | Code::RequestTimedOut
                    | Code::AllBrokersDown
                    | Code::BrokerTransportFailure
                    | Code::NotCoordinator
                    | Code::CoordinatorNotAvailable
                    | Code::LeaderNotAvailable
                    | Code::NotLeaderForPartition
                    // Local: the client's metadata does not have the partition yet.
                    | Code::UnknownPartition
            )
        )
    }
}

#[cfg(test)]
mod tests {
    use rdkafka::types::RDKafkaErrorCode;

    use super::*;

    #[test]
    fn the_cluster_losing_our_state_is_survived_and_a_successor_is_not() {
        let fatal = |source| RuntimeError::Fatal {
            app: "a".into(),
            source,
        };
        let consumer = |code| fatal(KafkaError::MessageConsumptionFatal(code));
        assert!(consumer(RDKafkaErrorCode::FencedInstanceId).is_replaceable());
        assert!(consumer(RDKafkaErrorCode::InvalidTransactionalState).is_replaceable());
        assert!(consumer(RDKafkaErrorCode::OutOfOrderSequenceNumber).is_replaceable());
        assert!(!consumer(RDKafkaErrorCode::ProducerFenced).is_replaceable());
        assert!(!consumer(RDKafkaErrorCode::InvalidProducerEpoch).is_replaceable());
        assert!(!consumer(RDKafkaErrorCode::UnknownMemberId).is_replaceable());
        let client = RuntimeError::Client {
            app: "a".into(),
            source: KafkaError::ClientCreation("bad config".into()),
        };
        assert!(!client.is_replaceable());
        let timed_out = RuntimeError::Client {
            app: "a".into(),
            source: KafkaError::MetadataFetch(RDKafkaErrorCode::OperationTimedOut),
        };
        assert!(timed_out.is_replaceable());
        let not_in_metadata_yet = RuntimeError::Client {
            app: "a".into(),
            source: KafkaError::MetadataFetch(RDKafkaErrorCode::UnknownPartition),
        };
        assert!(not_in_metadata_yet.is_replaceable());
        let setup = RuntimeError::Setup {
            app: "a".into(),
            reason: "no topic".into(),
        };
        assert!(!setup.is_replaceable());
    }
}

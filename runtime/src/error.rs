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
    /// `INVALID_PRODUCER_ID_MAPPING`); and a client call during setup or restore that failed
    /// on the cluster's state while brokers were down. A fenced producer (`PRODUCER_FENCED`,
    /// `INVALID_PRODUCER_EPOCH`) is not: a successor with our transactional id owns our
    /// partitions now, and taking them back would fence it in turn; nor are refused
    /// credentials, ACLs or settings, which new clients would meet again.
    pub fn is_replaceable(&self) -> bool {
        use rdkafka::types::RDKafkaErrorCode as Code;
        match self {
            Self::Fatal { source, .. } => matches!(
                source.rdkafka_error_code(),
                Some(
                    Code::FencedInstanceId
                        | Code::InvalidTransactionalState
                        | Code::OutOfOrderSequenceNumber
                        | Code::UnknownProducerId
                        | Code::InvalidProducerIdMapping
                        | Code::OperationTimedOut
                        | Code::RequestTimedOut
                        | Code::AllBrokersDown
                        | Code::BrokerTransportFailure
                        | Code::NotCoordinator
                        | Code::CoordinatorNotAvailable
                        | Code::LeaderNotAvailable
                        | Code::NotLeaderForPartition
                        | Code::UnknownPartition
                )
            ),
            // A client call that failed with the cluster's answer (or a local error while it
            // changes: a timeout, a partition not in the metadata yet, a broker handle
            // destroyed while a request was out) is the cluster's state, unless the answer is
            // a refusal that new clients would get too: credentials, ACLs, a successor's
            // fencing, a setting. A client that could not be created at all has no code.
            Self::Client { source, .. } => source.rdkafka_error_code().is_some_and(|code| {
                !matches!(
                    code,
                    Code::ProducerFenced
                        | Code::InvalidProducerEpoch
                        | Code::Authentication
                        | Code::SaslAuthenticationFailed
                        | Code::UnsupportedSASLMechanism
                        | Code::IllegalSASLState
                        | Code::TopicAuthorizationFailed
                        | Code::GroupAuthorizationFailed
                        | Code::ClusterAuthorizationFailed
                        | Code::TransactionalIdAuthorizationFailed
                        | Code::InvalidConfig
                        | Code::InvalidArgument
                )
            }),
            Self::Setup { .. } | Self::Stores { .. } => false,
        }
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
        let broker_gone = RuntimeError::Client {
            app: "a".into(),
            source: KafkaError::MetadataFetch(RDKafkaErrorCode::DestroyBroker),
        };
        assert!(broker_gone.is_replaceable());
        for refusal in [
            RDKafkaErrorCode::TopicAuthorizationFailed,
            RDKafkaErrorCode::SaslAuthenticationFailed,
            RDKafkaErrorCode::ProducerFenced,
        ] {
            let refused = RuntimeError::Client {
                app: "a".into(),
                source: KafkaError::MetadataFetch(refusal),
            };
            assert!(!refused.is_replaceable(), "{refusal:?}");
        }
        let setup = RuntimeError::Setup {
            app: "a".into(),
            reason: "no topic".into(),
        };
        assert!(!setup.is_replaceable());
    }
}

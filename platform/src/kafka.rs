//! Kafka client settings, in one place, so that every producer partitions
//! like the Java clients (`murmur2_random`), every producer is idempotent
//! with `acks=all`, and every consumer reads only committed data. Anything
//! else a cluster needs (TLS, SASL, timeouts) comes from `KAFKA_<PROPERTY>`
//! variables: see [`properties`].

use rdkafka::ClientConfig;

pub mod check;
pub mod properties;

pub use check::{check_connection, ConnectionError};
pub use properties::PropertyError;

/// Where the cluster is, how we name ourselves to it, and the librdkafka properties the
/// deployment adds (security and tuning; never what the guarantees rest on).
#[derive(Clone)]
pub struct KafkaSettings {
    /// Comma-separated `host:port` list (`KAFKA_BOOTSTRAP_SERVERS`).
    pub bootstrap_servers: String,
    /// Reported to the broker as `client.id`; shows up in broker logs and quotas.
    pub client_id: String,
    /// librdkafka properties from `KAFKA_<PROPERTY>` variables, applied to every client.
    pub properties: Vec<(String, String)>,
}

impl std::fmt::Debug for KafkaSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let properties: Vec<(&str, &str)> = self
            .properties
            .iter()
            .map(|(k, v)| {
                let shown = if properties::is_secret(k) {
                    "<redacted>"
                } else {
                    v
                };
                (k.as_str(), shown)
            })
            .collect();
        f.debug_struct("KafkaSettings")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("client_id", &self.client_id)
            .field("properties", &properties)
            .finish()
    }
}

/// The default bootstrap address of the dev stack (`cargo xtask up`).
pub const DEFAULT_BOOTSTRAP_SERVERS: &str = "127.0.0.1:9092";

impl KafkaSettings {
    pub fn new(bootstrap_servers: impl Into<String>, client_id: impl Into<String>) -> Self {
        Self {
            bootstrap_servers: bootstrap_servers.into(),
            client_id: client_id.into(),
            properties: Vec::new(),
        }
    }

    /// Reads `KAFKA_BOOTSTRAP_SERVERS` (falling back to the dev stack's address) and every
    /// `KAFKA_<PROPERTY>` variable; a variable that cannot be used is an error that names it.
    /// What services start with.
    pub fn from_env_checked(client_id: impl Into<String>) -> Result<Self, PropertyError> {
        let servers = std::env::var("KAFKA_BOOTSTRAP_SERVERS")
            .unwrap_or_else(|_| DEFAULT_BOOTSTRAP_SERVERS.to_string());
        let mut settings = Self::new(servers, client_id);
        settings.properties = properties::from_vars(std::env::vars())?;
        Ok(settings)
    }

    /// [`Self::from_env_checked`] for tools and tests: a variable that cannot be used is
    /// logged and left out.
    pub fn from_env(client_id: impl Into<String>) -> Self {
        let client_id = client_id.into();
        Self::from_env_checked(client_id.clone()).unwrap_or_else(|error| {
            tracing::error!(%error, "Kafka client properties from the environment left out");
            let servers = std::env::var("KAFKA_BOOTSTRAP_SERVERS")
                .unwrap_or_else(|_| DEFAULT_BOOTSTRAP_SERVERS.to_string());
            Self::new(servers, client_id)
        })
    }

    /// Adds the properties of a config file's `[kafka]` table beneath the environment's: a
    /// property a `KAFKA_*` variable sets keeps that value, and the file's
    /// `bootstrap.servers` applies unless `bootstrap_from_env` (`KAFKA_BOOTSTRAP_SERVERS`
    /// was set). `origin` names the file in errors.
    pub fn with_file_properties(
        mut self,
        origin: &str,
        file: Vec<(String, String)>,
        bootstrap_from_env: bool,
    ) -> Result<Self, PropertyError> {
        for (property, value) in file {
            properties::check(
                &format!("[kafka] {property} in {origin}"),
                &property,
                &value,
            )?;
            if property == "bootstrap.servers" {
                if !bootstrap_from_env {
                    self.bootstrap_servers = value;
                }
            } else if !self.properties.iter().any(|(p, _)| *p == property) {
                self.properties.push((property, value));
            }
        }
        self.properties.sort();
        Ok(self)
    }

    /// Settings every client shares.
    pub fn base_config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.bootstrap_servers)
            .set("client.id", &self.client_id)
            // Loopback clusters answer in microseconds; don't wait 100 ms to reconnect.
            .set("reconnect.backoff.ms", "50")
            .set("reconnect.backoff.max.ms", "2000");
        self.add_properties(&mut config);
        config
    }

    /// The deployment's properties, set last so they win over our tuning defaults (none
    /// of them can name a protected property: see [`properties::PROTECTED`]).
    fn add_properties(&self, config: &mut ClientConfig) {
        for (property, value) in &self.properties {
            config.set(property, value);
        }
    }

    /// A durable, idempotent producer: a record is acknowledged only once all
    /// in-sync replicas have it, and retries never duplicate or reorder.
    pub fn producer_config(&self) -> ClientConfig {
        let mut config = self.base_config();
        config
            .set("acks", "all")
            .set("enable.idempotence", "true")
            // Same partition for the same key as Java's default partitioner.
            .set("partitioner", "murmur2_random")
            .set("linger.ms", "2")
            .set("compression.type", "lz4");
        self.add_properties(&mut config);
        config
    }

    /// A transactional producer for exactly-once processing. The id must be
    /// stable per processor instance so that a restarted instance fences its
    /// predecessor.
    pub fn transactional_producer_config(&self, transactional_id: &str) -> ClientConfig {
        let mut config = self.producer_config();
        config
            .set("transactional.id", transactional_id)
            .set("transaction.timeout.ms", "60000")
            // The first send of a transaction to a partition adds it to the transaction; right
            // after a commit the coordinator may still be writing the previous markers and
            // answers CONCURRENT_TRANSACTIONS, which the client retries after this back-off.
            // librdkafka's default (100 ms) then adds a whole commit interval to every other
            // transaction; Java's producer retries that case after 20 ms for the same reason.
            .set("retry.backoff.ms", "10");
        self.add_properties(&mut config);
        config
    }

    /// A consumer that sees only committed records and commits nothing on
    /// its own: offsets are committed by transactions or explicitly.
    pub fn consumer_config(&self, group_id: &str) -> ClientConfig {
        let mut config = self.base_config();
        config
            .set("group.id", group_id)
            .set("isolation.level", "read_committed")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("enable.partition.eof", "false")
            .set("session.timeout.ms", "10000")
            .set("heartbeat.interval.ms", "1000");
        self.add_properties(&mut config);
        config
    }
}

/// The shortest wait one watermark request of [`fetch_watermarks_settled`] gets.
const MIN_ATTEMPT: std::time::Duration = std::time::Duration::from_secs(1);

/// The low and high watermarks of a partition. A topic created moments ago
/// may be led in the controller's metadata before its leader serves offset
/// requests, and a cluster that just lost a broker answers from stale
/// metadata or not at all: those answers (no leader, not the leader, a
/// partition the client's metadata does not have yet, a request timed out,
/// the leader unreachable, its handle destroyed mid-request) are retried until `timeout`, not reported as a
/// failure.
pub fn fetch_watermarks_settled<C, K>(
    consumer: &K,
    topic: &str,
    partition: i32,
    timeout: std::time::Duration,
) -> Result<(i64, i64), rdkafka::error::KafkaError>
where
    C: rdkafka::consumer::ConsumerContext,
    K: rdkafka::consumer::Consumer<C>,
{
    use rdkafka::error::KafkaError::MetadataFetch;
    use rdkafka::error::RDKafkaErrorCode::{
        AllBrokersDown, BrokerTransportFailure, DestroyBroker, LeaderNotAvailable,
        NotLeaderForPartition, OperationTimedOut, RequestTimedOut, UnknownPartition,
        UnknownTopicOrPartition,
    };
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match consumer.fetch_watermarks(topic, partition, left.max(MIN_ATTEMPT)) {
            Err(MetadataFetch(
                LeaderNotAvailable
                | NotLeaderForPartition
                | UnknownTopicOrPartition
                | UnknownPartition
                | OperationTimedOut
                | RequestTimedOut
                | AllBrokersDown
                | BrokerTransportFailure
                | DestroyBroker,
            )) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Client context of a consumer that reads partitions to their end on
/// purpose (`enable.partition.eof`): the end-of-partition events it asks
/// for are logged at trace, every other client error at error level.
///
/// Why a context: librdkafka reports each end of a partition as an error
/// event, which rust-rdkafka hands to the client context as a *global*
/// error (logged at ERROR by the default context) before `poll` returns it
/// as `PartitionEOF`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadToEndContext;

/// Whether `error` is the end of a partition, however rdkafka reports it.
pub fn is_partition_eof(error: &rdkafka::error::KafkaError) -> bool {
    use rdkafka::error::{KafkaError, RDKafkaErrorCode};
    matches!(
        error,
        KafkaError::PartitionEOF(_) | KafkaError::Global(RDKafkaErrorCode::PartitionEOF)
    )
}

impl rdkafka::ClientContext for ReadToEndContext {
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        if is_partition_eof(&error) {
            tracing::trace!(reason, "consumer reached the end of a partition");
        } else {
            tracing::error!(%error, reason, "consumer error");
        }
    }
}

impl rdkafka::consumer::ConsumerContext for ReadToEndContext {}

/// One partition to read from `from` until the consumer's position reaches `end` (a high
/// watermark taken before: exclusive).
#[derive(Debug, Clone)]
pub struct Span {
    pub topic: String,
    pub partition: i32,
    pub from: rdkafka::Offset,
    pub end: i64,
}

/// How a [`read_spans`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpansRead {
    /// Every partition's position reached its end.
    Ended,
    /// The caller's `each` asked to stop.
    Stopped,
    /// `timeout` passed first.
    TimedOut,
}

/// Assigns `spans` to `consumer` and hands `each` every record it returns until every
/// partition's position has reached its end, `each` breaks, or `timeout` passes.
///
/// Why positions, not offsets of records seen: a `read_committed` consumer skips aborted
/// records and transaction markers, so the last offset it hands over is often below the high
/// watermark; its position passes them. Client errors are logged and reading goes on
/// (librdkafka reconnects by itself); the end of a partition is not an error.
pub fn read_spans<C: rdkafka::consumer::ConsumerContext>(
    consumer: &rdkafka::consumer::BaseConsumer<C>,
    spans: &[Span],
    timeout: std::time::Duration,
    mut each: impl FnMut(&rdkafka::message::BorrowedMessage<'_>) -> std::ops::ControlFlow<()>,
) -> Result<SpansRead, rdkafka::error::KafkaError> {
    use rdkafka::consumer::Consumer;
    let spans: Vec<&Span> = spans.iter().filter(|s| s.end > 0).collect();
    if spans.is_empty() {
        return Ok(SpansRead::Ended);
    }
    let mut assignment = rdkafka::TopicPartitionList::new();
    for span in &spans {
        assignment.add_partition_offset(&span.topic, span.partition, span.from)?;
    }
    consumer.assign(&assignment)?;
    let give_up = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < give_up {
        match consumer.poll(std::time::Duration::from_millis(100)) {
            Some(Ok(message)) if each(&message).is_break() => return Ok(SpansRead::Stopped),
            Some(Err(error)) if !is_partition_eof(&error) => {
                tracing::warn!(%error, "reader error; going on");
            }
            _ => {}
        }
        let position = consumer.position()?;
        let ended = spans.iter().all(|span| {
            position
                .find_partition(&span.topic, span.partition)
                .and_then(|e| e.offset().to_raw())
                .is_some_and(|at| at >= span.end)
        });
        if ended {
            return Ok(SpansRead::Ended);
        }
    }
    Ok(SpansRead::TimedOut)
}

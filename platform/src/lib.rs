//! Plumbing shared by every callstream service: the topics as code, the
//! Kafka client settings that make our producers and consumers agree with
//! each other (and with Java clients), reading settings from the
//! environment, telemetry set-up, the clock, serving HTTP and waiting for
//! the shutdown signal.
//!
//! Nothing here knows about the domain; services and the runtime build on it.

pub mod admin;
pub mod clock;
pub mod http;
pub mod kafka;
pub mod metrics;
pub mod problem;
pub mod settings;
pub mod shutdown;
pub mod standard_webhooks;
pub mod telemetry;
pub mod topics;

pub use kafka::KafkaSettings;
pub use settings::{SettingError, Settings};
pub use topics::{TopicKind, TopicSpec, Topics};

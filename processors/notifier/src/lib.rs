//! The notifier (`callstream process notifier`): every alert raised or resolved, every
//! exception opened and every dead letter (through the `dead_letter` exception the notifier
//! opens for it) reaches a person, on the channels each tenant's
//! routes (in `control`) name: a chat webhook (Slack-compatible), a webhook signed with
//! Standard Webhooks, or email over SMTP.
//!
//! Guarantees, on the exactly-once runtime (see `processor` and `outbox`):
//! - Routing is a pure function of the record and the routes, writing each notification
//!   with a derived id to `notifications` in the transaction that consumes the record.
//! - Each channel's outbox takes a notification id once and ends every one it took in a
//!   message, sent on its own or counted in a digest, or failed for good with a
//!   `notification_failed` exception (never notified itself, so a dead channel does not
//!   loop); the ledger of sent message ids settles each message once.
//! - A send is asked for only after the transaction recording it commits; its result is
//!   recorded at once. A crash between a send and its record sends that message again
//!   with the same id (`webhook-id`, `Message-ID`), which receivers can deduplicate: no
//!   message is lost; a repeat is possible only in that window, and carries the same id.
//! - Per channel: one send at a time, at most `per_minute`, retries doubling with jitter
//!   up to a bound; quiet hours hold all but urgent routes until they end; a digest window
//!   groups one kind's notifications into one message with their count.
//! - A tenant's notification never goes to a channel that does not admit that tenant.
//! - It raises alerts of its own (see `watch`): open missing completions, dead letters,
//!   failed launches and CRM writes per 10 minutes, and a processor's consumer lag
//!   (sampled by `lag`), each resolved when it clears; they are routed like any alert.

pub mod channels;
pub mod config;
mod emit;
pub mod lag;
pub mod outbox;
mod processor;
pub mod route;
pub mod send;
pub mod telemetry;
pub mod watch;
pub mod wire;

use std::sync::Arc;

use callstream_platform::topics::{self, Topics};
use callstream_runtime::{EffectRunner, ProcessorSpec};

pub use channels::{Channel, ChannelKind, Channels, ChannelsError};
pub use config::{ConfigError, NotifierConfig};
pub use emit::{ACTOR, AUDIT_FAILED, AUDIT_SENT};
pub use processor::{Notifier, OUTBOXES, STORES, WAKE};
pub use send::{Sender, SenderError, ID_HEADER};
pub use telemetry::NotifierMetrics;

/// The app id `callstream process notifier` runs under.
pub const APP_ID: &str = "notifier";

/// The notifier, ready for `callstream_runtime::run` or the test driver.
pub fn processor(config: NotifierConfig, metrics: NotifierMetrics) -> Notifier {
    let mut config = config;
    // A lost result is judged on the runtime's clock, which a demo runs faster than real
    // time; a send takes real time.
    config.result_timeout =
        callstream_runtime::process_clock().business_span(config.result_timeout);
    Notifier::new(config, metrics)
}

/// The notifier's inputs: what it notifies, its own two repartition topics, and `control`
/// (the routes) as a global table.
pub fn spec(topics: &Topics, app_id: &str) -> ProcessorSpec {
    ProcessorSpec::new(app_id, topics.name(topics::DEAD_LETTERS))
        .input(topics.name(topics::ALERTS))
        .input(topics.name(topics::EXCEPTIONS))
        .input(topics.name(topics::DEAD_LETTERS))
        .input(topics.name(topics::NOTIFICATIONS))
        .input(topics.name(topics::NOTIFIER_SIGNALS))
        .global_table(topics.name(topics::CONTROL))
}

/// The effect runner that sends (set it as `RuntimeConfig::effects`).
pub fn effect_runner(config: &NotifierConfig) -> Result<EffectRunner, SenderError> {
    Ok(EffectRunner {
        handler: Arc::new(Sender::new(
            config.channels.clone(),
            config.request_timeout,
        )?),
        concurrency: config.concurrency,
    })
}

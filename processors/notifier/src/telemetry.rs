//! The notifier's own Prometheus metrics, served on `/metrics` after the runtime's. A step
//! repeated after an aborted transaction counts again: these are rates to watch, the
//! `notification.*` audits on `audit` are the record.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::outbox::{Message, Taken};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelLabels {
    channel: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TakenLabels {
    channel: String,
    /// `queued`, `held` (digest or quiet hours) or `repeat`.
    taken: &'static str,
}

#[derive(Default, Debug)]
struct Families {
    routed: Family<KindLabels, Counter>,
    refused: Family<ChannelLabels, Counter>,
    taken: Family<TakenLabels, Counter>,
    messages_sent: Family<ChannelLabels, Counter>,
    notifications_sent: Family<ChannelLabels, Counter>,
    retried: Family<ChannelLabels, Counter>,
    failed: Family<ChannelLabels, Counter>,
}

/// Counters of one notifier instance. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct NotifierMetrics {
    families: Arc<Families>,
    registry: Arc<Registry>,
}

impl Default for NotifierMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl NotifierMetrics {
    pub fn new() -> Self {
        let families = Families::default();
        let mut registry = Registry::with_prefix("callstream_notifier");
        registry.register(
            "notifications_routed",
            "Notifications routed to a channel, by kind",
            families.routed.clone(),
        );
        registry.register(
            "routes_refused",
            "Routes naming a channel that does not exist or does not admit the tenant",
            families.refused.clone(),
        );
        registry.register(
            "notifications_taken",
            "Notifications taken by a channel's outbox: queued, held (digest, quiet hours) or repeat",
            families.taken.clone(),
        );
        registry.register(
            "messages_sent",
            "Messages sent (a digest is one message)",
            families.messages_sent.clone(),
        );
        registry.register(
            "notifications_sent",
            "Notifications delivered, on their own or counted in a digest",
            families.notifications_sent.clone(),
        );
        registry.register(
            "send_retries",
            "Sends that failed and will be tried again",
            families.retried.clone(),
        );
        registry.register(
            "messages_failed",
            "Messages that failed for good (each opens a notification_failed exception)",
            families.failed.clone(),
        );
        Self {
            families: Arc::new(families),
            registry: Arc::new(registry),
        }
    }

    fn channel(channel: &str) -> ChannelLabels {
        ChannelLabels {
            channel: channel.to_owned(),
        }
    }

    pub fn routed(&self, kind: &str) {
        let labels = KindLabels {
            kind: kind.to_owned(),
        };
        self.families.routed.get_or_create(&labels).inc();
    }

    pub fn refused(&self, channel: &str) {
        self.families
            .refused
            .get_or_create(&Self::channel(channel))
            .inc();
    }

    pub fn taken(&self, channel: &str, taken: Taken) {
        let labels = TakenLabels {
            channel: channel.to_owned(),
            taken: match taken {
                Taken::Queued => "queued",
                Taken::Held => "held",
                Taken::Repeat => "repeat",
            },
        };
        self.families.taken.get_or_create(&labels).inc();
    }

    pub fn sent(&self, channel: &str, message: &Message) {
        let labels = Self::channel(channel);
        self.families.messages_sent.get_or_create(&labels).inc();
        self.families
            .notifications_sent
            .get_or_create(&labels)
            .inc_by(message.count.into());
    }

    pub fn retried(&self, channel: &str) {
        self.families
            .retried
            .get_or_create(&Self::channel(channel))
            .inc();
    }

    pub fn failed(&self, channel: &str) {
        self.families
            .failed
            .get_or_create(&Self::channel(channel))
            .inc();
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

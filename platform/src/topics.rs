//! Every topic of the design, declared once: name, partitions, cleanup
//! policy, retention and `min.insync.replicas`. `callstream topics create`
//! and `cargo xtask up` create missing ones from this list and report the
//! ones whose settings differ; nothing here deletes data.
//!
//! Event topics keep their data forever (`retention.ms=-1`): the log is the
//! source of truth and every view must be rebuildable from offset 0.

use crate::settings::{SettingError, Settings};

/// What a topic holds, which decides its cleanup policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicKind {
    /// An append-only event stream, kept forever.
    Events,
    /// A table: the latest value per key matters (compacted).
    Table,
    /// Records parked for a person to look at; kept for a limited time.
    DeadLetters,
}

/// One topic and the settings it must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub name: String,
    pub kind: TopicKind,
    pub partitions: i32,
    pub replication_factor: i32,
    pub min_insync_replicas: i32,
}

/// The headers the runtime gives a record it parks on the dead-letter topic (beside the
/// failed record's own, which it keeps): what its readers may rely on.
pub mod dead_letter {
    /// Every one of them starts so; the failed record's own headers do not.
    pub const DLQ_PREFIX: &str = "dlq-";
    /// Why a record was dead-lettered.
    pub const DLQ_REASON: &str = "dlq-reason";
    /// Where a dead-lettered record came from: `topic/partition/offset`.
    pub const DLQ_SOURCE: &str = "dlq-source";
    /// Which processor dead-lettered it.
    pub const DLQ_APP: &str = "dlq-app";
    /// What the processor failed on: `record`, `timer` or `effect`.
    pub const DLQ_KIND: &str = "dlq-kind";
    /// A failed timer's name.
    pub const DLQ_TIMER_NAME: &str = "dlq-timer-name";
    /// A failed timer's domain: `wall-clock`, `event-time` or `either`.
    pub const DLQ_TIMER_DOMAIN: &str = "dlq-timer-domain";
    /// When a failed timer was due, in ms since the epoch (decimal).
    pub const DLQ_TIMER_DUE_MS: &str = "dlq-timer-due-ms";
    /// A failed effect result's operation id.
    pub const DLQ_EFFECT_ID: &str = "dlq-effect-id";
}

/// Dead letters are kept for 30 days: long enough for someone to look.
pub const DEAD_LETTER_RETENTION_MS: i64 = 30 * 24 * 60 * 60 * 1000;

impl TopicSpec {
    /// The topic-level configs this spec requires, as Kafka names them.
    pub fn configs(&self) -> Vec<(&'static str, String)> {
        let (cleanup, retention) = match self.kind {
            TopicKind::Events => ("delete", -1),
            TopicKind::Table => ("compact", -1),
            TopicKind::DeadLetters => ("delete", DEAD_LETTER_RETENTION_MS),
        };
        vec![
            ("cleanup.policy", cleanup.to_string()),
            ("retention.ms", retention.to_string()),
            ("min.insync.replicas", self.min_insync_replicas.to_string()),
            // An out-of-sync replica never becomes leader: it may lack acknowledged records.
            ("unclean.leader.election.enable", "false".to_owned()),
        ]
    }
}

/// The logical topics of the design. The physical name is the logical name
/// behind an optional prefix, so tests and tenants of a shared cluster can
/// run whole pipelines side by side.
pub const CALL_EVENTS: &str = "call-events";
pub const CONTACT_COMMANDS: &str = "contact-commands";
pub const SCHEDULE_REQUESTS: &str = "schedule-requests";
pub const SCHEDULE_EVENTS: &str = "schedule-events";
pub const LAUNCH_COMMANDS: &str = "launch-commands";
pub const CALL_LAUNCHES: &str = "call-launches";
pub const CRM_COMMANDS: &str = "crm-commands";
pub const CRM_RESULTS: &str = "crm-results";
pub const EXCEPTIONS: &str = "exceptions";
pub const CONTACT_STATE: &str = "contact-state";
pub const COMPLETION_MISSING: &str = "completion-missing";
pub const COMPLETION_RESOLVED: &str = "completion-resolved";
pub const ALERTS: &str = "alerts";
pub const AUDIT: &str = "audit";
pub const CONTROL: &str = "control";
/// Every control change, kept forever: `control` is compacted, so only its latest value
/// per setting survives; the audit trail of who changed what, when and why is read here.
/// Written in the same transaction as `control` by every writer of it.
pub const CONTROL_HISTORY: &str = "control-history";
pub const DEAD_LETTERS: &str = "dead-letters";
/// Notifications decided per channel, keyed by channel: the notifier routes alerts,
/// exceptions and dead letters here and sends from here (its repartition topic, readable by
/// anyone who wants the log of what was notified where).
pub const NOTIFICATIONS: &str = "notifications";
/// What the notifier's own alerts count (missing completions opened and closed, failures,
/// dead letters, consumer lag samples), re-keyed by tenant: its internal repartition topic,
/// JSON values.
pub const NOTIFIER_SIGNALS: &str = "notifier-signals";
/// Per-partition counts of closed delivery buckets, re-keyed by tenant (the
/// completion detector's internal repartition topic).
pub const DELIVERY_PARTIALS: &str = "delivery-partials";

/// The physical name of the history topic of the physical control topic `control` (the
/// same prefix): `acme-control` → `acme-control-history`.
pub fn history_of(control: &str) -> String {
    format!("{control}{}", &CONTROL_HISTORY[CONTROL.len()..])
}

/// Every logical topic with its kind.
pub const ALL: &[(&str, TopicKind)] = &[
    (CALL_EVENTS, TopicKind::Events),
    (CONTACT_COMMANDS, TopicKind::Events),
    (SCHEDULE_REQUESTS, TopicKind::Events),
    (SCHEDULE_EVENTS, TopicKind::Events),
    (LAUNCH_COMMANDS, TopicKind::Events),
    (CALL_LAUNCHES, TopicKind::Events),
    (CRM_COMMANDS, TopicKind::Events),
    (CRM_RESULTS, TopicKind::Events),
    (EXCEPTIONS, TopicKind::Events),
    (CONTACT_STATE, TopicKind::Table),
    (COMPLETION_MISSING, TopicKind::Events),
    (COMPLETION_RESOLVED, TopicKind::Events),
    (ALERTS, TopicKind::Events),
    (AUDIT, TopicKind::Events),
    (CONTROL, TopicKind::Table),
    (CONTROL_HISTORY, TopicKind::Events),
    (DEAD_LETTERS, TopicKind::DeadLetters),
    (DELIVERY_PARTIALS, TopicKind::Events),
    (NOTIFICATIONS, TopicKind::Events),
    (NOTIFIER_SIGNALS, TopicKind::Events),
];

/// What the values of a topic are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicValue {
    /// Avro records of one event type, named by its schema's file stem (`schemas/<stem>.avsc`):
    /// the subject `<topic>-value` in a schema registry.
    Avro(&'static str),
    /// JSON documents: a processor's internal repartition topic.
    Json,
    /// The bytes of records another topic carried, parked with headers that say why.
    Copies,
}

/// The values of the logical topic `logical` (one of [`ALL`]); `None` for a name not declared.
pub fn value_of(logical: &str) -> Option<TopicValue> {
    use TopicValue::{Avro, Copies, Json};
    Some(match logical {
        CALL_EVENTS => Avro("call_event"),
        CONTACT_COMMANDS => Avro("contact_command"),
        SCHEDULE_REQUESTS => Avro("schedule_request"),
        SCHEDULE_EVENTS => Avro("schedule_event"),
        LAUNCH_COMMANDS => Avro("launch_command"),
        CALL_LAUNCHES => Avro("call_launch"),
        CRM_COMMANDS => Avro("crm_command"),
        CRM_RESULTS => Avro("crm_result"),
        EXCEPTIONS => Avro("exception"),
        CONTACT_STATE => Avro("contact_state"),
        COMPLETION_MISSING => Avro("completion_missing"),
        COMPLETION_RESOLVED => Avro("completion_resolved"),
        ALERTS => Avro("alert"),
        AUDIT => Avro("audit_event"),
        CONTROL | CONTROL_HISTORY => Avro("control_change"),
        NOTIFICATIONS => Avro("notification"),
        DEAD_LETTERS => Copies,
        DELIVERY_PARTIALS | NOTIFIER_SIGNALS => Json,
        _ => return None,
    })
}

/// Who writes the logical topic `logical`, for the topic catalogue (`docs/topics.md`); the
/// processors' and edges' own code is what holds them to it.
pub fn writers_of(logical: &str) -> &'static [&'static str] {
    match logical {
        CALL_EVENTS => &[
            "gateway (voice platform webhooks)",
            "recovery (source=recovery)",
        ],
        CONTACT_COMMANDS => &[
            "gateway (launch intake)",
            "scheduler (LaunchDue)",
            "recovery",
            "operator API (operator actions)",
        ],
        SCHEDULE_REQUESTS => &["contact processor"],
        SCHEDULE_EVENTS => &["scheduler"],
        LAUNCH_COMMANDS => &["contact processor"],
        CALL_LAUNCHES => &["launch dispatcher"],
        CRM_COMMANDS => &["contact processor"],
        CRM_RESULTS => &["CRM dispatcher"],
        EXCEPTIONS => &[
            "contact processor",
            "completion detector",
            "CRM dispatcher",
            "notifier",
        ],
        CONTACT_STATE => &["contact processor"],
        COMPLETION_MISSING => &["completion detector"],
        COMPLETION_RESOLVED => &["completion detector", "recovery"],
        ALERTS => &["completion detector", "notifier"],
        AUDIT => &["recovery", "CRM dispatcher", "notifier", "operator API"],
        CONTROL | CONTROL_HISTORY => &["operator API", "`callstream control apply`"],
        DEAD_LETTERS => &["every processor (the runtime parks what its processor refused)"],
        DELIVERY_PARTIALS => &["completion detector"],
        NOTIFICATIONS | NOTIFIER_SIGNALS => &["notifier"],
        _ => &[],
    }
}

/// Who reads the logical topic `logical`, for the topic catalogue.
pub fn readers_of(logical: &str) -> &'static [&'static str] {
    match logical {
        CALL_EVENTS => &["contact processor", "completion detector", "projections"],
        CONTACT_COMMANDS => &["contact processor", "projections"],
        SCHEDULE_REQUESTS => &["scheduler"],
        SCHEDULE_EVENTS | CRM_RESULTS | AUDIT | CONTACT_STATE => &["projections"],
        LAUNCH_COMMANDS => &["launch dispatcher", "projections"],
        CALL_LAUNCHES => &["contact processor", "completion detector", "projections"],
        CRM_COMMANDS => &["CRM dispatcher", "projections"],
        EXCEPTIONS => &["notifier", "projections"],
        COMPLETION_MISSING => &["recovery", "projections"],
        COMPLETION_RESOLVED => &["recovery", "projections"],
        ALERTS => &["notifier", "projections"],
        CONTROL => &["every processor (as a table of settings)"],
        CONTROL_HISTORY => &["projections (the audit view)"],
        DEAD_LETTERS => &["notifier", "operators"],
        DELIVERY_PARTIALS => &["completion detector"],
        NOTIFICATIONS | NOTIFIER_SIGNALS => &["notifier"],
        _ => &[],
    }
}

/// Physical topic names and the settings to create them with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topics {
    /// Put in front of every logical name (`CALLSTREAM_TOPIC_PREFIX`), empty in production.
    pub prefix: String,
    /// Partitions of every topic (`CALLSTREAM_TOPIC_PARTITIONS`, default 12).
    /// One count for all keeps co-partitioned inputs equal by construction.
    pub partitions: i32,
    /// `CALLSTREAM_REPLICATION_FACTOR`, default 1 (the dev stack has one broker).
    pub replication_factor: i32,
    /// `CALLSTREAM_MIN_INSYNC_REPLICAS`, default 1; 2 with three replicas in production.
    pub min_insync_replicas: i32,
}

/// Default partition count of every topic.
pub const DEFAULT_PARTITIONS: i32 = 12;

impl Default for Topics {
    fn default() -> Self {
        Self {
            prefix: String::new(),
            partitions: DEFAULT_PARTITIONS,
            replication_factor: 1,
            min_insync_replicas: 1,
        }
    }
}

/// A setting from the environment that is not a number.
#[derive(Debug, thiserror::Error)]
#[error("{name}={value:?} is not a positive whole number")]
pub struct BadSetting {
    pub name: &'static str,
    pub value: String,
}

impl Topics {
    /// Topics named behind `prefix`, with default settings.
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            ..Self::default()
        }
    }

    /// Reads the `CALLSTREAM_TOPIC_*` settings described on the fields.
    /// ([`Settings::topics`] reads them from any lookup.)
    pub fn from_env() -> Result<Self, BadSetting> {
        Settings::env().topics().map_err(|error| match error {
            SettingError::Invalid { name, value, .. } => BadSetting { name, value },
            // Every topic setting has a default; kept total all the same.
            SettingError::Missing(name) => BadSetting {
                name,
                value: String::new(),
            },
            // No topic setting is a secret; kept total all the same.
            SettingError::WeakSecret(_) => BadSetting {
                name: "CALLSTREAM_TOPIC_*",
                value: String::new(),
            },
        })
    }

    /// The physical name of a logical topic.
    pub fn name(&self, logical: &str) -> String {
        format!("{}{}", self.prefix, logical)
    }

    /// The specs of every topic of the design.
    pub fn specs(&self) -> Vec<TopicSpec> {
        ALL.iter()
            .map(|(logical, kind)| self.spec(logical, *kind))
            .collect()
    }

    /// The spec of one topic, including ones outside the design's list
    /// (such as a processor's changelog).
    pub fn spec(&self, logical: &str, kind: TopicKind) -> TopicSpec {
        TopicSpec {
            name: self.name(logical),
            kind,
            partitions: self.partitions,
            replication_factor: self.replication_factor,
            min_insync_replicas: self.min_insync_replicas,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_design_topic_is_declared_once() {
        let mut names: Vec<_> = ALL.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert_eq!(history_of("p-control"), "p-control-history");
        assert_eq!(history_of(CONTROL), CONTROL_HISTORY);
        for (name, _) in ALL {
            assert!(value_of(name).is_some(), "{name} has no declared value");
            assert!(
                !writers_of(name).is_empty(),
                "{name} has no declared writer"
            );
            assert!(
                !readers_of(name).is_empty(),
                "{name} has no declared reader"
            );
        }
        assert_eq!(value_of("no-such-topic"), None);
    }

    #[test]
    fn tables_are_compacted_and_events_kept_forever() {
        let topics = Topics::with_prefix("t1-");
        for spec in topics.specs() {
            assert!(spec.name.starts_with("t1-"));
            let configs = spec.configs();
            let cleanup = &configs[0].1;
            let retention = &configs[1].1;
            match spec.kind {
                TopicKind::Table => assert_eq!(cleanup, "compact", "{}", spec.name),
                TopicKind::Events => {
                    assert_eq!((cleanup.as_str(), retention.as_str()), ("delete", "-1"))
                }
                TopicKind::DeadLetters => assert_eq!(cleanup, "delete"),
            }
        }
        let control = topics.specs().into_iter().find(|s| s.name == "t1-control");
        assert_eq!(control.map(|s| s.kind), Some(TopicKind::Table));
    }
}

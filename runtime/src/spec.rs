//! What a processor application needs from the runtime: its inputs, where
//! its dead letters go, its global tables, and how its stores (declared by
//! the processor, `Processor::stores`) are checked and named in Kafka.

/// The static shape of a processor application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessorSpec {
    /// Names the consumer group and prefixes the changelog topics.
    pub app_id: String,
    /// Input topics (physical names). All are co-partitioned: partition `p`
    /// of each belongs to the same task and sees the same state.
    pub inputs: Vec<String>,
    /// Where records the processor cannot handle go, with the reason.
    pub dead_letter_topic: String,
    /// Compacted topics read whole by every instance (e.g. `control`).
    pub global_tables: Vec<String>,
}

/// Name of the internal store that holds timers and stream time.
pub const TIMER_STORE: &str = "__timers";

/// Why the stores a processor declares cannot run; each names the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("state store {0:?} is declared twice")]
    Duplicate(String),
    /// Names starting with `__` are the runtime's own (`__timers`).
    #[error("state store name {0:?} is reserved for the runtime (it starts with `__`)")]
    Reserved(String),
    /// Its changelog topic could not be created under this name.
    #[error("state store name {store:?} cannot name its changelog topic {topic:?}: {reason}")]
    IllegalName {
        store: String,
        topic: String,
        reason: &'static str,
    },
}

/// The longest topic name Kafka accepts.
const MAX_TOPIC_NAME: usize = 249;

impl ProcessorSpec {
    pub fn new(app_id: impl Into<String>, dead_letter_topic: impl Into<String>) -> Self {
        Self {
            app_id: app_id.into(),
            inputs: Vec::new(),
            dead_letter_topic: dead_letter_topic.into(),
            global_tables: Vec::new(),
        }
    }

    pub fn input(mut self, topic: impl Into<String>) -> Self {
        self.inputs.push(topic.into());
        self
    }

    pub fn global_table(mut self, topic: impl Into<String>) -> Self {
        self.global_tables.push(topic.into());
        self
    }

    /// The changelog topic of `store` (`<app>-<store>-changelog`).
    pub fn changelog_topic(&self, store: &str) -> String {
        format!("{}-{}-changelog", self.app_id, store)
    }

    /// The changelog topic of every store of a processor that declares
    /// `stores`, the internal timer store's last: in store-index order, as
    /// the runtime creates and restores them.
    pub fn changelog_topics(&self, stores: &[&str]) -> Vec<String> {
        stores
            .iter()
            .chain(std::iter::once(&TIMER_STORE))
            .map(|store| self.changelog_topic(store))
            .collect()
    }

    /// Checks the stores a processor declares, before anything runs: each
    /// declared once, none in the runtime's namespace, and each with a
    /// changelog topic name that Kafka accepts.
    pub fn check_stores(&self, stores: &[&str]) -> Result<(), StoreError> {
        for (index, &store) in stores.iter().enumerate() {
            if stores[..index].contains(&store) {
                return Err(StoreError::Duplicate(store.to_string()));
            }
            if store.starts_with("__") {
                return Err(StoreError::Reserved(store.to_string()));
            }
            let topic = self.changelog_topic(store);
            let reason = if store.is_empty() {
                Some("the name is empty")
            } else if !store
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            {
                Some("a topic name holds only ASCII letters, digits, '.', '_' and '-'")
            } else if topic.len() > MAX_TOPIC_NAME {
                Some("a topic name is at most 249 characters")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(StoreError::IllegalName {
                    store: store.to_string(),
                    topic,
                    reason,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_stores_are_checked_by_name() {
        let spec = ProcessorSpec::new("app", "dlq");
        let long = "s".repeat(240);
        let cases: &[(&[&str], Option<&str>)] = &[
            (&[], None),
            (&["counts", "ops.v2", "a_b-c"], None),
            (&["counts", "counts"], Some("\"counts\" is declared twice")),
            (&["__timers"], Some("\"__timers\" is reserved")),
            (&["__mine"], Some("\"__mine\" is reserved")),
            (&[""], Some("the name is empty")),
            (
                &["my store"],
                Some("\"my store\" cannot name its changelog topic"),
            ),
            (&["ok", "ü"], Some("\"ü\" cannot name")),
            (&[long.as_str()], Some("at most 249")),
        ];
        for (stores, expected) in cases {
            let result = spec.check_stores(stores);
            match expected {
                None => assert_eq!(result, Ok(()), "{stores:?}"),
                Some(part) => {
                    let message = result.map_err(|e| e.to_string()).err();
                    assert!(
                        message.as_deref().is_some_and(|m| m.contains(part)),
                        "{stores:?}: {message:?} should say {part:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn changelog_topics_keep_their_names_timer_store_last() {
        let spec = ProcessorSpec::new("contact", "dlq");
        assert_eq!(
            spec.changelog_topics(&["contacts"]),
            ["contact-contacts-changelog", "contact-__timers-changelog"]
        );
    }
}

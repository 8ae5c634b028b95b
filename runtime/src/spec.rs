//! What a processor needs from the runtime: its inputs, stores and where
//! its dead letters go.

/// The static shape of a processor application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessorSpec {
    /// Names the consumer group and prefixes the changelog topics.
    pub app_id: String,
    /// Input topics (physical names). All are co-partitioned: partition `p`
    /// of each belongs to the same task and sees the same state.
    pub inputs: Vec<String>,
    /// Names of the keyed state stores the processor uses.
    pub stores: Vec<String>,
    /// Where records the processor cannot handle go, with the reason.
    pub dead_letter_topic: String,
    /// Compacted topics read whole by every instance (e.g. `control`).
    pub global_tables: Vec<String>,
}

/// Name of the internal store that holds timers and stream time.
pub const TIMER_STORE: &str = "__timers";

impl ProcessorSpec {
    pub fn new(app_id: impl Into<String>, dead_letter_topic: impl Into<String>) -> Self {
        Self {
            app_id: app_id.into(),
            inputs: Vec::new(),
            stores: Vec::new(),
            dead_letter_topic: dead_letter_topic.into(),
            global_tables: Vec::new(),
        }
    }

    pub fn input(mut self, topic: impl Into<String>) -> Self {
        self.inputs.push(topic.into());
        self
    }

    pub fn store(mut self, name: impl Into<String>) -> Self {
        self.stores.push(name.into());
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

    /// Every store's name, the internal timer store last (its index is
    /// `stores.len()`), matching the task's store layout.
    pub fn all_store_names(&self) -> Vec<String> {
        let mut names = self.stores.clone();
        names.push(TIMER_STORE.to_string());
        names
    }
}

//! Global tables: compacted topics (such as `control`) that every instance
//! reads whole, as Kafka Streams' GlobalKTable. Processors read them through
//! the context; a change applies from the next record after it arrives.

use std::collections::HashMap;

/// The latest value per key of each global table.
#[derive(Debug, Default, Clone)]
pub struct Globals {
    tables: HashMap<String, HashMap<Vec<u8>, Vec<u8>>>,
}

impl Globals {
    /// Applies one record of a global topic; `None` deletes (a tombstone).
    pub fn apply(&mut self, topic: &str, key: Vec<u8>, value: Option<Vec<u8>>) {
        let table = self.tables.entry(topic.to_string()).or_default();
        match value {
            Some(value) => table.insert(key, value),
            None => table.remove(&key),
        };
    }

    pub fn get(&self, topic: &str, key: &[u8]) -> Option<&[u8]> {
        self.tables.get(topic)?.get(key).map(Vec::as_slice)
    }

    /// Every entry of a table, in no particular order.
    pub fn entries<'a>(
        &'a self,
        topic: &str,
    ) -> Box<dyn Iterator<Item = (&'a [u8], &'a [u8])> + 'a> {
        match self.tables.get(topic) {
            Some(table) => Box::new(table.iter().map(|(k, v)| (k.as_slice(), v.as_slice()))),
            None => Box::new(std::iter::empty()),
        }
    }
}

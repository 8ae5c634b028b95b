//! Global tables: compacted topics (such as `control`) that every instance
//! reads whole, as Kafka Streams' GlobalKTable. Processors read them through
//! the context; a change applies from the next record after it arrives.
//!
//! Each table counts its changes (`version`), so a processor can keep what
//! it derives from a table (a parsed setting, say) until the table changes,
//! instead of looking it up again for every record.

use std::collections::HashMap;

#[derive(Debug, Default, Clone)]
struct Table {
    entries: HashMap<Vec<u8>, Vec<u8>>,
    version: u64,
}

/// The latest value per key of each global table.
#[derive(Debug, Default, Clone)]
pub struct Globals {
    tables: HashMap<String, Table>,
}

impl Globals {
    /// Applies one record of a global topic; `None` deletes (a tombstone).
    pub fn apply(&mut self, topic: &str, key: Vec<u8>, value: Option<Vec<u8>>) {
        // Looked up by `&str` first: no copy of the topic name per record.
        let table = match self.tables.get_mut(topic) {
            Some(table) => table,
            None => self.tables.entry(topic.to_string()).or_default(),
        };
        table.version += 1;
        match value {
            Some(value) => table.entries.insert(key, value),
            None => table.entries.remove(&key),
        };
    }

    pub fn get(&self, topic: &str, key: &[u8]) -> Option<&[u8]> {
        self.tables.get(topic)?.entries.get(key).map(Vec::as_slice)
    }

    /// How many records of `topic` were applied so far: equal versions
    /// mean an unchanged table (0 for a table nothing was read from).
    pub fn version(&self, topic: &str) -> u64 {
        self.tables.get(topic).map_or(0, |t| t.version)
    }

    /// Every entry of a table, in no particular order.
    pub fn entries<'a>(
        &'a self,
        topic: &str,
    ) -> Box<dyn Iterator<Item = (&'a [u8], &'a [u8])> + 'a> {
        match self.tables.get(topic) {
            Some(table) => Box::new(
                table
                    .entries
                    .iter()
                    .map(|(k, v)| (k.as_slice(), v.as_slice())),
            ),
            None => Box::new(std::iter::empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_applied_record_moves_the_version_of_its_table() {
        let mut globals = Globals::default();
        assert_eq!(globals.version("control"), 0);
        globals.apply("control", b"k".to_vec(), Some(b"1".to_vec()));
        globals.apply("control", b"k".to_vec(), None);
        globals.apply("other", b"k".to_vec(), Some(b"1".to_vec()));
        assert_eq!(globals.version("control"), 2);
        assert_eq!(globals.get("control", b"k"), None);
        assert_eq!(globals.get("other", b"k"), Some(&b"1"[..]));
    }
}

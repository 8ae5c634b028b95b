//! Where this process's CPU goes, by thread name: the dispatcher's event
//! loop, the runtime's effect executor (the HTTP creates), the simulator
//! (creates answered, callbacks sent), the callback sink, librdkafka's threads (the dispatcher's clients and
//! this benchmark's own producer and reader) and the rest, read from
//! `/proc/self/task/<tid>/{comm,stat}`, plus the broker's. Linux only;
//! elsewhere every group reads zero.

use std::collections::{BTreeMap, HashMap};

use callstream_bench::cpu::{cpu_seconds, Usage};

use crate::stack::{DISPATCHER_THREAD, SIM_THREADS, SINK_THREADS};

/// The groups, by thread name prefix, first match wins; the rest is `other`.
const GROUPS: [(&str, &str); 6] = [
    (DISPATCHER_THREAD, "dispatcher"),
    // The runtime names its effect executor's threads so.
    ("effects", "effects"),
    (SIM_THREADS, "sim"),
    (SINK_THREADS, "sink"),
    ("rdk:", "librdkafka"),
    // rust-rdkafka's delivery-report poller ("producer polling thread", cut
    // to 15 bytes by the kernel) of the dispatcher's and our own producers.
    ("producer pollin", "librdkafka"),
];

fn group(comm: &str) -> &'static str {
    GROUPS
        .iter()
        .find(|(prefix, _)| comm.starts_with(prefix))
        .map_or("other", |(_, name)| name)
}

/// CPU seconds of each live thread, and the broker's.
pub struct Reading {
    threads: HashMap<String, (&'static str, f64)>,
    usage: Usage,
}

impl Reading {
    pub fn now() -> Self {
        let mut threads = HashMap::new();
        if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
            for entry in dir.flatten() {
                let tid = entry.file_name().to_string_lossy().into_owned();
                let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                    .unwrap_or_default();
                // `cpu_seconds` reads `/proc/<pid>/stat`; a task's stat has the same layout.
                if let Some(seconds) = cpu_seconds(&format!("self/task/{tid}")) {
                    threads.insert(tid, (group(comm.trim()), seconds));
                }
            }
        }
        Self {
            threads,
            usage: Usage::now(),
        }
    }

    /// CPU seconds by group since `earlier` (threads born since count in
    /// full; threads gone since are lost), the broker as `broker`.
    pub fn since(&self, earlier: &Reading) -> BTreeMap<&'static str, f64> {
        let mut split: BTreeMap<&'static str, f64> = BTreeMap::new();
        for (_, name) in GROUPS {
            split.insert(name, 0.0);
        }
        for (tid, (group, seconds)) in &self.threads {
            let before = earlier.threads.get(tid).map_or(0.0, |(_, s)| *s);
            *split.entry(group).or_default() += (seconds - before).max(0.0);
        }
        if let Some(broker) = self.usage.since(&earlier.usage).broker {
            split.insert("broker", broker);
        }
        split
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_grouped_by_name() {
        let cases = [
            ("ld-dispatcher", "dispatcher"),
            ("effects", "effects"),
            ("ld-sim", "sim"),
            ("ld-sink", "sink"),
            ("rdk:broker1", "librdkafka"),
            ("producer pollin", "librdkafka"),
            ("launch", "other"),
        ];
        for (comm, expected) in cases {
            assert_eq!(group(comm), expected, "{comm}");
        }
    }
}

//! Where this process's CPU goes, by thread name: the dispatcher's event
//! loop, the runtime's effect executor (the HTTP creates), the simulator
//! (creates answered, callbacks sent), the callback sink, librdkafka's threads (the dispatcher's clients and
//! this benchmark's own producer and reader) and the rest, read from
//! `/proc/self/task/<tid>/{comm,stat}`, plus the broker's. Linux only;
//! elsewhere every group reads zero.
//!
//! librdkafka names its threads the same for every client, so they are told
//! apart by birth: the threads alive at a reading taken just before the
//! dispatcher starts are this benchmark's own clients
//! (`librdkafka_bench`), those born since are the dispatcher's clients
//! (`librdkafka`). [`Components`] sums the groups into what the dispatcher
//! costs on its own (event loop, effect executor, its librdkafka clients)
//! and what the simulator, the sink, the broker and the benchmark cost.

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

/// The librdkafka threads of this benchmark's own clients (see the module header).
const BENCH_LIBRDKAFKA: &str = "librdkafka_bench";

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
    /// full; threads gone since are lost), the broker as `broker`; the
    /// librdkafka threads alive at `before_start` (taken before the
    /// dispatcher started: `earlier` itself, or an earlier reading when the
    /// span starts after a warm-up) are this benchmark's.
    pub fn since(&self, earlier: &Reading, before_start: &Reading) -> BTreeMap<&'static str, f64> {
        let mut split: BTreeMap<&'static str, f64> = BTreeMap::new();
        for (_, name) in GROUPS {
            split.insert(name, 0.0);
        }
        split.insert(BENCH_LIBRDKAFKA, 0.0);
        for (tid, (group, seconds)) in &self.threads {
            let before = earlier.threads.get(tid).map(|(_, s)| *s);
            let group = match *group {
                // Alive before the dispatcher started: this benchmark's own client.
                "librdkafka" if before_start.threads.contains_key(tid) => BENCH_LIBRDKAFKA,
                group => group,
            };
            *split.entry(group).or_default() += (seconds - before.unwrap_or(0.0)).max(0.0);
        }
        if let Some(broker) = self.usage.since(&earlier.usage).broker {
            split.insert("broker", broker);
        }
        split
    }
}

/// CPU seconds of a span by component: the groups of [`Reading::since`] summed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Components {
    /// The dispatcher alone: its event loop, its effect executor (the HTTP
    /// creates) and its librdkafka clients, as `callstream process
    /// launch-dispatcher` would use them in a process of its own.
    pub dispatcher: f64,
    /// The voice simulator (creates answered, callbacks sent).
    pub sim: f64,
    /// The callback sink (the gateway's stand-in).
    pub sink: f64,
    /// The broker, if its pid is known (it serves the dispatcher's
    /// transactions and the benchmark's reader alike).
    pub broker: Option<f64>,
    /// This benchmark: its reader of `call-launches`, its clients' threads
    /// and the rest of the process.
    pub bench: f64,
}

impl Components {
    pub fn of(split: &BTreeMap<&'static str, f64>) -> Self {
        let sum = |groups: &[&str]| -> f64 { groups.iter().filter_map(|g| split.get(g)).sum() };
        Self {
            dispatcher: sum(&["dispatcher", "effects", "librdkafka"]),
            sim: sum(&["sim"]),
            sink: sum(&["sink"]),
            broker: split.get("broker").copied(),
            bench: sum(&[BENCH_LIBRDKAFKA, "other"]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reading of these (tid, group, CPU seconds), without the broker.
    fn reading(threads: &[(&str, &'static str, f64)]) -> Reading {
        Reading {
            threads: threads
                .iter()
                .map(|(tid, group, s)| ((*tid).to_string(), (*group, *s)))
                .collect(),
            usage: Usage::default(),
        }
    }

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

    #[test]
    fn components_sum_their_groups() {
        let split: BTreeMap<&'static str, f64> = [
            ("dispatcher", 1.0),
            ("effects", 2.0),
            ("librdkafka", 4.0),
            (BENCH_LIBRDKAFKA, 8.0),
            ("other", 16.0),
            ("sim", 32.0),
            ("sink", 64.0),
        ]
        .into_iter()
        .collect();
        let c = Components::of(&split);
        assert_eq!(
            c,
            Components {
                dispatcher: 7.0,
                sim: 32.0,
                sink: 64.0,
                broker: None,
                bench: 24.0,
            }
        );
    }

    #[test]
    fn librdkafka_threads_alive_before_are_the_benchmarks() {
        let before = reading(&[("1", "librdkafka", 1.0), ("2", "other", 1.0)]);
        let after = reading(&[
            ("1", "librdkafka", 3.0),
            ("2", "other", 1.5),
            ("3", "librdkafka", 5.0),
        ]);
        let split = after.since(&before, &before);
        assert_eq!(split[BENCH_LIBRDKAFKA], 2.0);
        assert_eq!(split["librdkafka"], 5.0);
        assert_eq!(split["other"], 0.5);
    }

    #[test]
    fn after_a_warm_up_threads_are_still_told_apart_by_the_reading_before_the_start() {
        let before_start = reading(&[("1", "librdkafka", 1.0)]);
        // The dispatcher's client (3) was born before the warm-up ended.
        let warm = reading(&[("1", "librdkafka", 2.0), ("3", "librdkafka", 4.0)]);
        let end = reading(&[("1", "librdkafka", 3.0), ("3", "librdkafka", 10.0)]);
        let split = end.since(&warm, &before_start);
        assert_eq!(split[BENCH_LIBRDKAFKA], 1.0);
        assert_eq!(split["librdkafka"], 6.0);
    }
}

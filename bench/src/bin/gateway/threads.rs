//! Where this process's CPU goes, by thread: the gateway's runtime
//! (`gw-server*`), the load generator's (`gw-load*`), the Kafka client's
//! threads (librdkafka's `rdk:*` and rust-rdkafka's delivery-report poller,
//! the gateway's producer) and the rest, read from
//! `/proc/self/task/<tid>/{comm,stat}`. Together with the broker's CPU
//! (`callstream_bench::cpu`) this says which side of the loopback the
//! two cores were spent on.
//!
//! Linux only; elsewhere every group reads zero. A thread that exits
//! between two readings takes its CPU with it (the groups here are long-lived).

use std::collections::HashMap;

use callstream_bench::cpu::{cpu_seconds, Usage};

use crate::load::THREAD_NAME as LOAD;
use crate::server::THREAD_NAME as SERVER;

/// CPU seconds per group, plus the broker's.
#[derive(Debug, Clone, Copy, Default)]
pub struct Split {
    pub server: f64,
    pub librdkafka: f64,
    pub load: f64,
    pub other: f64,
    pub broker: Option<f64>,
}

/// CPU seconds of each live thread (by tid), and the broker's.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    threads: HashMap<String, (Group, f64)>,
    usage: Usage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    Server,
    Librdkafka,
    Load,
    Other,
}

/// rust-rdkafka's thread serving a producer's delivery reports (the name
/// "producer polling thread", cut to 15 bytes by the kernel).
const PRODUCER_POLLING: &str = "producer pollin";

fn group(comm: &str) -> Group {
    if comm.starts_with(SERVER) {
        Group::Server
    } else if comm.starts_with("rdk:") || comm.starts_with(PRODUCER_POLLING) {
        Group::Librdkafka
    } else if comm.starts_with(LOAD) {
        Group::Load
    } else {
        Group::Other
    }
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

    /// What each group used since `earlier` (threads born since count in full).
    pub fn since(&self, earlier: &Reading) -> Split {
        let mut split = Split {
            broker: self.usage.since(&earlier.usage).broker,
            ..Split::default()
        };
        for (tid, (group, seconds)) in &self.threads {
            let before = earlier.threads.get(tid).map_or(0.0, |(_, s)| *s);
            let used = (seconds - before).max(0.0);
            match group {
                Group::Server => split.server += used,
                Group::Librdkafka => split.librdkafka += used,
                Group::Load => split.load += used,
                Group::Other => split.other += used,
            }
        }
        split
    }
}

impl Split {
    /// Everything measured, broker included.
    pub fn total(&self) -> f64 {
        self.server + self.librdkafka + self.load + self.other + self.broker.unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_grouped_by_name() {
        let cases = [
            ("gw-server", Group::Server),
            ("gw-server-3", Group::Server),
            ("rdk:broker1", Group::Librdkafka),
            ("rdk:main", Group::Librdkafka),
            ("producer pollin", Group::Librdkafka),
            ("gw-load", Group::Load),
            ("gateway", Group::Other),
        ];
        for (comm, expected) in cases {
            assert_eq!(group(comm), expected, "{comm}");
        }
    }

    #[test]
    fn this_process_has_threads_to_read() {
        let reading = Reading::now();
        assert!(!reading.threads.is_empty());
        let split = Reading::now().since(&reading);
        assert!(split.other >= 0.0);
    }
}

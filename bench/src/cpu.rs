//! CPU time of processes, from `/proc/<pid>/stat`, so a benchmark can say
//! whether the machine's cores were the limit (bench process and broker
//! together near `cores × wall time` means CPU-bound).
//!
//! Linux only; elsewhere (or for a process that is gone) the reading is `None`
//! and the benchmark simply reports less.

use std::path::Path;

/// Clock ticks per second of `utime`/`stime`: fixed at 100 by the Linux
/// user-space ABI (`sysconf(_SC_CLK_TCK)`).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// The fields of a `/proc/<pid>/stat` line the benchmarks read, CPU in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub ppid: u32,
    /// utime + stime.
    pub ticks: u64,
    /// cutime + cstime: the children it has waited for.
    pub reaped_children_ticks: u64,
}

/// `/proc/<pid>/stat` of `pid` ("self", "self/task/<tid>", a number), parsed.
pub fn proc_stat(pid: &str) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_proc_stat(&stat)
}

/// User plus system CPU seconds used so far by process `pid` ("self" for this one).
pub fn cpu_seconds(pid: &str) -> Option<f64> {
    Some(proc_stat(pid)?.ticks as f64 / TICKS_PER_SECOND)
}

/// The broker's pid, from the pid file `cargo xtask up` writes (when the
/// benchmark runs from the repository root, as `cargo xtask bench` runs it).
pub fn broker_pid() -> Option<String> {
    let text = std::fs::read_to_string(Path::new(".stack/kafka/kafka.pid")).ok()?;
    let pid = text.trim();
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then(|| pid.to_string())
}

/// A `/proc/<pid>/stat` line's fields. The command name (field 2) may hold
/// spaces and parentheses, so fields count from the last `)`.
fn parse_proc_stat(stat: &str) -> Option<ProcStat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // After the name: state is field 3, ppid 4, utime 14, stime 15, cutime 16,
    // cstime 17; the children's are optional here (only pgcpu reads them).
    Some(ProcStat {
        ppid: u32::try_from(field(1)?).ok()?,
        ticks: field(11)? + field(12)?,
        reaped_children_ticks: field(13).unwrap_or(0) + field(14).unwrap_or(0),
    })
}

/// utime + stime of a `/proc/<pid>/stat` line, in seconds.
#[cfg(test)]
fn parse_stat(stat: &str) -> Option<f64> {
    Some(parse_proc_stat(stat)?.ticks as f64 / TICKS_PER_SECOND)
}

/// CPU used by this process and the broker between `start` and `finish`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub bench: Option<f64>,
    pub broker: Option<f64>,
}

impl Usage {
    pub fn now() -> Self {
        Self {
            bench: cpu_seconds("self"),
            broker: broker_pid().and_then(|pid| cpu_seconds(&pid)),
        }
    }

    /// What was used since `earlier`.
    pub fn since(&self, earlier: &Usage) -> Usage {
        let diff = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        Usage {
            bench: diff(self.bench, earlier.bench),
            broker: diff(self.broker, earlier.broker),
        }
    }
}

/// This process's peak resident memory so far (`VmHWM`), in MiB; `None` off Linux.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_from_the_last_parenthesis() {
        let cases = [
            (
                "1 (bash) S 0 1 1 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1",
                Some(3.0),
            ),
            ("7 (a (b) c) R 0 1 1 0 -1 0 0 0 0 0 1 2 0 0", Some(0.03)),
            ("garbage", None),
            ("1 (x) S 0 1", None),
        ];
        for (line, expected) in cases {
            assert_eq!(parse_stat(line), expected, "{line}");
        }
    }

    #[test]
    fn this_process_has_used_some_cpu() {
        assert!(cpu_seconds("self").is_some_and(|s| s >= 0.0));
    }
}

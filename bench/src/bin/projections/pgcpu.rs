//! Postgres CPU time during a phase, from `/proc`, so the projections' figures
//! say what Postgres spent per event (the limit of both the live projections
//! and a rebuild on a small machine).
//!
//! Two readings:
//! - `server`: every process of the Postgres server (the postmaster, its live
//!   children, and the children it has reaped, through its `cutime`/`cstime`),
//!   exact but shared with whatever else uses that server at the time (the
//!   schema registry's idle connections, other people's tests).
//! - `bench`: only the backends of the benchmark's own database (a backend's
//!   process title names its database: `postgres: user dbname host(port) ...`),
//!   plus the server's own background processes (WAL writer, checkpointer,
//!   background writer, autovacuum), sampled every 100 ms: a backend that exits
//!   loses at most its last 100 ms.
//!
//! The postmaster's pid is read from `$CALLSTREAM_PG_DATA/postmaster.pid`, else
//! `.stack/postgres/data/postmaster.pid` (the
//! dev stack's, relative to the repository root, where `cargo xtask bench`
//! runs) or `BENCH_POSTGRES_PID`. Linux only; elsewhere the readings are `None`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use callstream_bench::cpu::{proc_stat, ProcStat, TICKS_PER_SECOND};

const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The postmaster's pid.
fn postmaster() -> Option<u32> {
    if let Some(pid) = std::env::var("BENCH_POSTGRES_PID")
        .ok()
        .and_then(|p| p.trim().parse().ok())
    {
        return Some(pid);
    }
    // `cargo xtask bench` says where the data is (outside a private checkout).
    let data =
        std::env::var("CALLSTREAM_PG_DATA").unwrap_or_else(|_| ".stack/postgres/data".to_string());
    let text = std::fs::read_to_string(format!("{data}/postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

fn stat(pid: u32) -> Option<ProcStat> {
    proc_stat(&pid.to_string())
}

/// Whose a child of the postmaster is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// A backend (or autovacuum worker) of the benchmark's database.
    Bench,
    /// The server's own background processes.
    Server,
    /// Another database's backend.
    Other,
}

fn owner(pid: u32, database: &str) -> Owner {
    let title = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default();
    let words: Vec<&str> = title.split_whitespace().collect();
    if words.contains(&database) {
        Owner::Bench
    } else if title.contains('(') || words.get(1) == Some(&"autovacuum") && words.len() > 3 {
        // `postgres: user db host(port) state`, or an autovacuum worker of another database.
        Owner::Other
    } else {
        Owner::Server
    }
}

/// The children of `parent` (a scan of `/proc`).
fn children(parent: u32) -> Vec<(u32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = stat(pid)?;
            (stat.ppid == parent).then_some((pid, stat.ticks))
        })
        .collect()
}

/// The whole server's CPU ticks so far: the postmaster, its reaped children and its live ones.
fn server_ticks(postmaster: u32) -> Option<u64> {
    let own = stat(postmaster)?;
    Some(
        own.ticks
            + own.reaped_children_ticks
            + children(postmaster).iter().map(|(_, c)| c).sum::<u64>(),
    )
}

/// Postgres CPU used during a phase.
#[derive(Debug, Clone, Copy)]
pub struct PgCpu {
    /// Every process of the server, seconds.
    pub server: f64,
    /// The benchmark database's backends and the server's background processes, seconds.
    pub bench: f64,
}

/// Measures from [`Sampler::start`] to [`Sampler::finish`].
pub struct Sampler {
    postmaster: u32,
    server_start: u64,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<u64>,
}

impl Sampler {
    /// `None` when the postmaster cannot be found.
    pub fn start(database: &str) -> Option<Self> {
        let postmaster = postmaster()?;
        let server_start = server_ticks(postmaster)?;
        let stop = Arc::new(AtomicBool::new(false));
        let database = database.to_owned();
        let flag = stop.clone();
        // pid -> (owner, ticks at first sight, ticks last seen)
        let mut seen: HashMap<u32, (Owner, u64, u64)> = children(postmaster)
            .into_iter()
            .map(|(pid, cpu)| (pid, (owner(pid, &database), cpu, cpu)))
            .collect();
        let handle = std::thread::spawn(move || {
            loop {
                let last = flag.load(Ordering::Relaxed);
                for (pid, cpu) in children(postmaster) {
                    let entry = seen
                        .entry(pid)
                        // Born during the phase: all its time is the phase's.
                        .or_insert_with(|| (owner(pid, &database), 0, 0));
                    entry.2 = entry.2.max(cpu);
                }
                if last {
                    break;
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
            seen.values()
                .filter(|(o, _, _)| *o != Owner::Other)
                .map(|(_, first, last)| last - first)
                .sum()
        });
        Some(Self {
            postmaster,
            server_start,
            stop,
            handle,
        })
    }

    pub fn finish(self) -> Option<PgCpu> {
        self.stop.store(true, Ordering::Relaxed);
        let bench = self.handle.join().ok()?;
        let server = server_ticks(self.postmaster)?.checked_sub(self.server_start)?;
        Some(PgCpu {
            server: server as f64 / TICKS_PER_SECOND,
            bench: bench as f64 / TICKS_PER_SECOND,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_its_own_stat() {
        let own = stat(std::process::id()).expect("own stat");
        assert!(own.ppid > 0);
    }
}

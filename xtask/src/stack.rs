//! The dev stack as a whole: Kafka and Postgres together, and the lock that keeps two xtask
//! runs (say, two `cargo xtask test` at once) from starting the same service twice.

use std::fs;
use std::path::PathBuf;
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::layout::Layout;
use crate::{kafka, postgres, procs, registry};

const LOCK_WAIT: Duration = Duration::from_secs(600);

/// Held while xtask changes the stack. A directory, because creating one is atomic on every
/// filesystem; it names its holder's pid so a crashed holder's lock is taken over.
pub struct StackLock {
    dir: PathBuf,
}

impl StackLock {
    pub fn acquire(layout: &Layout) -> Result<Self> {
        Self::acquire_in(&layout.stack)
    }

    /// The lock of the state under `parent` (the cluster has its own, so it never waits for a
    /// test run holding the single-broker stack's).
    pub fn acquire_in(parent: &std::path::Path) -> Result<Self> {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        let dir = parent.join("xtask.lock");
        let pid_file = dir.join("pid");
        let deadline = Instant::now() + LOCK_WAIT;
        let mut told = false;
        loop {
            match fs::create_dir(&dir) {
                Ok(()) => {
                    fs::write(&pid_file, std::process::id().to_string())?;
                    return Ok(Self { dir });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e).context(format!("creating {}", dir.display())),
            }
            match procs::read_pid(&pid_file) {
                Some(pid) if procs::is_alive(pid) => {
                    if !told {
                        println!("stack: waiting for another xtask (pid {pid}) to finish ...");
                        told = true;
                    }
                }
                // The holder died (or is between create_dir and writing its pid: give it a
                // moment before calling the lock stale).
                _ => {
                    sleep(Duration::from_millis(300));
                    if procs::read_pid(&pid_file).is_none_or(|pid| !procs::is_alive(pid)) {
                        let _ = fs::remove_dir_all(&dir);
                        continue;
                    }
                }
            }
            if Instant::now() > deadline {
                bail!("another xtask has held {} for {LOCK_WAIT:?}", dir.display());
            }
            sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for StackLock {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

pub fn up(layout: &Layout) -> Result<()> {
    let started = Instant::now();
    {
        let _lock = StackLock::acquire(layout)?;
        // Kafka and Postgres side by side: on a fresh machine each is first fetched (Maven,
        // Debian), and each then waits for its server to answer.
        std::thread::scope(|scope| {
            let broker = scope.spawn(|| kafka::up(layout));
            let database = postgres::up(layout);
            let broker = broker
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("starting Kafka panicked")));
            database.and(broker)
        })?;
        // After Postgres: its storage.
        registry::up(layout)?;
    }
    println!("stack: up in {:.1?}", started.elapsed());
    status(layout);
    Ok(())
}

/// The stack's servers this checkout did not start (reused from another checkout or
/// installed otherwise): tests that stop and restart a server cannot run against those.
pub fn not_ours(layout: &Layout) -> Vec<&'static str> {
    let mut foreign = Vec::new();
    if !matches!(kafka::state(layout), kafka::State::Ours { .. }) {
        foreign.push("Kafka");
    }
    if !matches!(postgres::state(layout), postgres::State::Ours { .. }) {
        foreign.push("Postgres");
    }
    if !registry::is_ours(layout) {
        foreign.push("the schema registry");
    }
    foreign
}

pub fn down(layout: &Layout) -> Result<()> {
    let _lock = StackLock::acquire(layout)?;
    // Try each even if one fails, then report the first failure. The registry first: it
    // keeps connections to Postgres.
    let registry = registry::down(layout);
    let kafka = kafka::down(layout);
    let postgres = postgres::down(layout);
    registry.and(kafka).and(postgres)
}

pub fn status(layout: &Layout) {
    println!("{}", kafka::describe(layout));
    println!("{}", postgres::describe(layout));
    println!("{}", registry::describe(layout));
    println!(
        "kafka jars (for the standard tools): {}",
        layout.show(&layout.kafka_libs())
    );
}

/// Stops the stack and deletes its data; the fetched jars stay, so the next `up` is offline.
pub fn reset(layout: &Layout) -> Result<()> {
    down(layout)?;
    let _lock = StackLock::acquire(layout)?;
    for dir in [layout.kafka_data(), layout.postgres_dir()] {
        if dir.exists() {
            fs::remove_dir_all(&dir).with_context(|| format!("deleting {}", dir.display()))?;
            println!("reset: deleted {}", layout.show(&dir));
        }
    }
    for file in [layout.kafka_log(), layout.kafka_pid()] {
        let _ = fs::remove_file(file);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_layout(name: &str) -> Layout {
        let dir = std::env::temp_dir().join(format!("xtask-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        Layout::at(dir)
    }

    #[test]
    fn the_lock_is_released_on_drop_and_names_its_holder() {
        let layout = scratch_layout("lock");
        let lock = StackLock::acquire(&layout).unwrap();
        let pid = procs::read_pid(&lock.dir.join("pid"));
        assert_eq!(pid, Some(std::process::id()));
        drop(lock);
        assert!(!layout.stack.join("xtask.lock").exists());
        // Free again: a second acquire does not wait.
        let started = Instant::now();
        drop(StackLock::acquire(&layout).unwrap());
        assert!(started.elapsed() < Duration::from_secs(2));
        fs::remove_dir_all(&layout.repo).unwrap();
    }

    #[test]
    fn a_lock_left_by_a_dead_process_is_taken_over() {
        let layout = scratch_layout("stale-lock");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = child.id();
        child.wait().unwrap();
        let dir = layout.stack.join("xtask.lock");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("pid"), dead_pid.to_string()).unwrap();

        let started = Instant::now();
        let lock = StackLock::acquire(&layout).unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(procs::read_pid(&dir.join("pid")), Some(std::process::id()));
        drop(lock);
        fs::remove_dir_all(&layout.repo).unwrap();
    }
}

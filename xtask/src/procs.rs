//! Process and port helpers shared by the Kafka and Postgres parts of the stack.
//!
//! xtask stops only processes it can prove are its own: a pid from its own pid file whose
//! command line (read from /proc) still names the files it started them with. A recycled pid
//! or a foreign server on our port is never signalled.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The command line of a live process, arguments joined by spaces; None when it is gone.
pub fn cmdline(pid: u32) -> Option<String> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    if raw.is_empty() {
        return None; // a zombie: exited, not yet reaped
    }
    let parts: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    Some(parts.join(" "))
}

/// The working directory of a live process.
pub fn cwd(pid: u32) -> Option<std::path::PathBuf> {
    fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

pub fn is_alive(pid: u32) -> bool {
    cmdline(pid).is_some()
}

/// Whether `pid` exists and has not exited (is not a zombie), from /proc/<pid>/stat. Unlike
/// `is_alive` it does not read the command line, which is briefly empty while a process execs.
pub fn is_running(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state ...`; comm may hold spaces and parentheses, the state follows the last ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state != "Z" && state != "X")
}

/// Reads a pid file; None when it is absent or does not hold a number.
pub fn read_pid(path: &Path) -> Option<u32> {
    fs::read_to_string(path)
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// Sends `signal` (a `kill` name like TERM) and waits up to `grace` for the process to end.
/// Returns false when it is still alive afterwards.
pub fn signal_and_wait(pid: u32, signal: &str, grace: Duration) -> Result<bool> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .context("running kill")?;
    if !status.success() && is_alive(pid) {
        bail!("kill -{signal} {pid} failed");
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !is_alive(pid) {
            return Ok(true);
        }
        sleep(Duration::from_millis(200));
    }
    Ok(!is_alive(pid))
}

/// Waits up to `grace` for the process to end; false when it is still alive afterwards.
pub fn wait_gone(pid: u32, grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !is_alive(pid) {
            return true;
        }
        sleep(Duration::from_millis(200));
    }
    !is_alive(pid)
}

/// True when something accepts TCP connections on the address.
pub fn port_answers(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}

/// True when the port cannot be bound (someone listens, even if it refuses to talk to us).
pub fn port_taken(addr: SocketAddr) -> bool {
    port_answers(addr) || TcpListener::bind(addr).is_err()
}

/// The last `n` lines of a (log) file, for failure messages; empty when unreadable.
pub fn tail(path: &Path, n: usize) -> String {
    let Ok(mut file) = fs::File::open(path) else {
        return String::new();
    };
    // Logs can be large; the last 64 KiB hold far more than the lines we show.
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut buf = Vec::new();
    let _ = file.read_to_end(&mut buf);
    tail_text(&String::from_utf8_lossy(&buf), n)
}

/// What a failure message shows of a log, from byte `from` (where this run's output starts):
/// its first error lines and their causes, which a JVM's shutdown noise would otherwise bury,
/// then the last lines.
pub fn log_excerpt(path: &Path, from: u64) -> String {
    let Ok(mut file) = fs::File::open(path) else {
        return format!("(no log at {})", path.display());
    };
    let _ = file.seek(SeekFrom::Start(from));
    let mut buf = Vec::new();
    let _ = file.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" ERROR ") || l.contains("FATAL") || l.starts_with("Caused by"))
        .take(12)
        .collect();
    let mut out = String::new();
    if !errors.is_empty() {
        out.push_str(&format!("--- errors in {} ---\n", path.display()));
        out.push_str(&errors.join("\n"));
        out.push('\n');
    }
    out.push_str(&format!("--- last lines of {} ---\n", path.display()));
    out.push_str(&tail_text(&text, 12));
    out
}

/// The last `n` lines of a text.
pub fn tail_text(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Finds an executable on PATH.
pub fn which(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Runs a command to completion, capturing its output; fails with the command's own words.
pub fn run_captured(cmd: &mut Command, what: &str) -> Result<Output> {
    let out = cmd
        .output()
        .with_context(|| format!("could not start {what} ({cmd:?})"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out)
}

/// Polls `check` until it succeeds or `timeout` passes; returns the last error on timeout.
pub fn wait_for<T>(timeout: Duration, mut check: impl FnMut() -> Result<T>) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(value) => return Ok(value),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => sleep(Duration::from_millis(500)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_excerpt_shows_this_runs_errors_before_the_shutdown_noise() {
        let path = std::env::temp_dir().join(format!("xtask-excerpt-{}.log", std::process::id()));
        let earlier = "[t0] ERROR an old run's failure (x)\n";
        let mut log = String::from(earlier);
        log.push_str("[t1] INFO starting (x)\n");
        log.push_str(
            "[t2] ERROR Exiting Kafka due to fatal exception during startup. (kafka.Kafka$)\n",
        );
        log.push_str("Caused by: java.net.BindException: Address already in use\n");
        for i in 0..500 {
            log.push_str(&format!("[t3] INFO shutdown step {i} (x)\n"));
        }
        fs::write(&path, &log).unwrap();

        let excerpt = log_excerpt(&path, earlier.len() as u64);
        assert!(excerpt.contains("BindException: Address already in use"));
        assert!(excerpt.contains("Exiting Kafka due to fatal exception"));
        assert!(!excerpt.contains("an old run's failure"));
        assert!(excerpt.ends_with("shutdown step 499 (x)"));
        assert_eq!(excerpt.lines().count(), 2 + 2 + 12);
        fs::remove_file(&path).unwrap();
    }

    #[test]
    fn tail_text_keeps_the_last_lines() {
        let cases = [("a\nb\nc\n", 2, "b\nc"), ("a\nb", 5, "a\nb"), ("", 3, "")];
        for (text, n, expected) in cases {
            assert_eq!(tail_text(text, n), expected, "{text:?}");
        }
    }
}

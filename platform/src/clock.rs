//! The wall clock, injectable: production reads the system clock, tests move a manual one
//! by hand. The one clock trait of the workspace: the runtime re-exports it for processors
//! and the gateway checks signed timestamps against it.
//!
//! Guarantees: `SystemClock` never panics (a clock before 1970 reads 0); clones of a
//! `ManualClock` share one time, so a test moves every holder's clock at once.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// Whole seconds since the Unix epoch (what signed webhook timestamps count).
    fn now_unix(&self) -> i64 {
        self.now_ms().div_euclid(1_000)
    }
}

/// The system's real-time clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
    }
}

/// A clock that moves only when told to. Cloning shares the same time.
#[derive(Debug, Default, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        Self(Arc::new(AtomicI64::new(start_ms)))
    }

    pub fn set_ms(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }

    pub fn advance_ms(&self, by_ms: i64) {
        self.0.fetch_add(by_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_is_shared_by_its_clones_and_reads_whole_seconds() {
        let clock = ManualClock::new(1_700_000_000_999);
        let held = clock.clone();
        assert_eq!(held.now_unix(), 1_700_000_000);
        clock.advance_ms(1);
        assert_eq!(held.now_ms(), 1_700_000_001_000);
        assert_eq!(held.now_unix(), 1_700_000_001);
        clock.set_ms(-1);
        assert_eq!(held.now_unix(), -1, "seconds round down before 1970 too");
    }

    #[test]
    fn the_system_clock_agrees_in_milliseconds_and_seconds() {
        let ms = SystemClock.now_ms();
        let secs = SystemClock.now_unix();
        assert!((secs - ms / 1_000).abs() <= 1, "{ms} ms vs {secs} s");
    }
}

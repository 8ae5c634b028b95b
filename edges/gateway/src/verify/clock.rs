//! The wall clock that timestamped signatures are checked against, behind a
//! trait so tests can pin it (the Standard Webhooks vector is from 2021).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub trait Clock: Send + Sync + 'static {
    fn now_unix(&self) -> i64;
}

/// The system's real-time clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            // A clock before 1970 is broken; everything will look stale, loudly.
            Err(_) => 0,
        }
    }
}

/// A clock that shows what it is set to; clones share the setting.
#[derive(Debug, Clone, Default)]
pub struct FixedClock(Arc<AtomicI64>);

impl FixedClock {
    pub fn at(unix: i64) -> Self {
        Self(Arc::new(AtomicI64::new(unix)))
    }

    pub fn set(&self, unix: i64) {
        self.0.store(unix, Ordering::Relaxed);
    }
}

impl Clock for FixedClock {
    fn now_unix(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

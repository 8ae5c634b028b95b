//! The wall clock, injectable: production reads the system clock, tests move a manual one
//! by hand, and a soak runs a scaled one. The one clock trait of the workspace: the runtime
//! re-exports it for processors, and every business decision reads time through it.
//!
//! `CALLSTREAM_CLOCK` picks the process clock, read once ([`init_from_env`]):
//! - unset, empty or `system`: the system clock;
//! - `scaled:start=<RFC 3339>,rate=<N>[,anchor=<RFC 3339>]`: simulated time that reads
//!   `start` at the real instant `anchor` (default: `start` itself) and runs `N` times faster
//!   than real time. Every process given the same value agrees on the time, whenever it
//!   started or restarted, because the reading is computed from the real clock each time.
//!
//! What stays in real time: Kafka's own timeouts, HTTP transport timeouts, retry backoff,
//! rate limiters, and the freshness window of signed webhooks (a transport check, not a
//! business one). [`Clock::real_wait`] turns a business wait into a real one.
//!
//! Guarantees: `SystemClock` never panics (a clock before 1970 reads 0); clones of a
//! `ManualClock` share one time, so a test moves every holder's clock at once; a
//! `ScaledClock` never goes backwards while the system clock does not.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};

use crate::Settings;

pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// Whole seconds since the Unix epoch (what signed webhook timestamps count).
    fn now_unix(&self) -> i64 {
        self.now_ms().div_euclid(1_000)
    }

    /// The time as a UTC date-time (the epoch if out of chrono's range).
    fn now_utc(&self) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(self.now_ms())
            .single()
            .unwrap_or_default()
    }

    /// How long to wait in real time for `business` of this clock's time to pass.
    fn real_wait(&self, business: Duration) -> Duration {
        business
    }

    /// How many times faster than real time this clock runs.
    fn rate(&self) -> f64 {
        1.0
    }

    /// How much of this clock's time passes during `real` of real time: what a timeout
    /// that protects a real request (an HTTP call, a search index's lag) must be set to when
    /// it is kept as a business-time timer.
    fn business_span(&self, real: Duration) -> Duration {
        real
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

/// Simulated time: `start_ms` at the real instant `anchor_ms`, running `rate` times faster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScaledClock {
    start_ms: i64,
    anchor_ms: i64,
    rate: f64,
}

/// The fastest rate accepted: beyond it a millisecond of real time skips business
/// decisions the processes could not have made in time.
pub const MAX_RATE: f64 = 10_000.0;

impl ScaledClock {
    pub fn new(start_ms: i64, anchor_ms: i64, rate: f64) -> Result<Self, ClockError> {
        if !(rate.is_finite() && rate > 0.0 && rate <= MAX_RATE) {
            return Err(ClockError::Rate(rate.to_string()));
        }
        Ok(Self {
            start_ms,
            anchor_ms,
            rate,
        })
    }

    /// The simulated time at real time `real_ms`.
    pub fn at_real(&self, real_ms: i64) -> i64 {
        let elapsed = real_ms.saturating_sub(self.anchor_ms) as f64 * self.rate;
        self.start_ms.saturating_add(elapsed as i64)
    }
}

impl Clock for ScaledClock {
    fn now_ms(&self) -> i64 {
        self.at_real(SystemClock.now_ms())
    }

    fn real_wait(&self, business: Duration) -> Duration {
        scale(business, 1.0 / self.rate)
    }

    fn rate(&self) -> f64 {
        self.rate
    }

    fn business_span(&self, real: Duration) -> Duration {
        scale(real, self.rate)
    }
}

/// `d` times `factor`, saturating: a configured timeout may be as long as a `u64` of
/// milliseconds, and `Duration::mul_f64` would panic past `Duration::MAX`.
fn scale(d: Duration, factor: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

/// A `CALLSTREAM_CLOCK` value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    #[error(
        "CALLSTREAM_CLOCK={0:?}: expected `system` or `scaled:start=<RFC 3339>,rate=<N>[,anchor=<RFC 3339>]`"
    )]
    Form(String),
    #[error("CALLSTREAM_CLOCK: {key}={value:?} is not an RFC 3339 date-time")]
    Time { key: &'static str, value: String },
    #[error("CALLSTREAM_CLOCK: rate={0:?} must be a number above 0 and at most 10000")]
    Rate(String),
}

/// The clock a `CALLSTREAM_CLOCK` value names.
pub fn parse(value: &str) -> Result<Arc<dyn Clock>, ClockError> {
    let value = value.trim();
    if value.is_empty() || value == "system" {
        return Ok(Arc::new(SystemClock));
    }
    let Some(params) = value.strip_prefix("scaled:") else {
        return Err(ClockError::Form(value.to_owned()));
    };
    let (mut start, mut anchor, mut rate) = (None, None, None);
    for item in params.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (key, given) = item
            .split_once('=')
            .ok_or_else(|| ClockError::Form(value.to_owned()))?;
        let time = |key: &'static str| {
            DateTime::parse_from_rfc3339(given.trim())
                .map(|t| t.timestamp_millis())
                .map_err(|_| ClockError::Time {
                    key,
                    value: given.to_owned(),
                })
        };
        match key.trim() {
            "start" => start = Some(time("start")?),
            "anchor" => anchor = Some(time("anchor")?),
            "rate" => {
                let parsed: f64 = given
                    .trim()
                    .parse()
                    .map_err(|_| ClockError::Rate(given.to_owned()))?;
                rate = Some(parsed);
            }
            _ => return Err(ClockError::Form(value.to_owned())),
        }
    }
    let (Some(start), Some(rate)) = (start, rate) else {
        return Err(ClockError::Form(value.to_owned()));
    };
    Ok(Arc::new(ScaledClock::new(
        start,
        anchor.unwrap_or(start),
        rate,
    )?))
}

static PROCESS_CLOCK: OnceLock<Arc<dyn Clock>> = OnceLock::new();

/// Reads `CALLSTREAM_CLOCK` once and makes it the process clock. Every binary calls it
/// first, so a bad value stops the process at start with a clear message.
pub fn init_from_env() -> Result<Arc<dyn Clock>, ClockError> {
    if let Some(clock) = PROCESS_CLOCK.get() {
        return Ok(clock.clone());
    }
    let clock = parse(&Settings::env().get("CALLSTREAM_CLOCK").unwrap_or_default())?;
    Ok(PROCESS_CLOCK.get_or_init(|| clock).clone())
}

/// Makes `clock` the process clock, before anything read it (a command that computes its
/// own clock, as the demo does for `--clock-rate`). `false` if one was already set.
pub fn install(clock: Arc<dyn Clock>) -> bool {
    PROCESS_CLOCK.set(clock).is_ok()
}

/// The process clock: what [`init_from_env`] read, or (when no binary called it, as in
/// unit tests) the same setting read now; a bad value there falls back to the system
/// clock with an error logged.
pub fn process_clock() -> Arc<dyn Clock> {
    match init_from_env() {
        Ok(clock) => clock,
        Err(error) => {
            tracing::error!(%error, "using the system clock");
            PROCESS_CLOCK.get_or_init(|| Arc::new(SystemClock)).clone()
        }
    }
}

/// The process clock's time in milliseconds since the epoch: the business "now".
pub fn now_ms() -> i64 {
    match PROCESS_CLOCK.get() {
        Some(clock) => clock.now_ms(),
        None => process_clock().now_ms(),
    }
}

/// The process clock's time as a UTC date-time: the business "now".
pub fn now_utc() -> DateTime<Utc> {
    match PROCESS_CLOCK.get() {
        Some(clock) => clock.now_utc(),
        None => process_clock().now_utc(),
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

    const T0: &str = "2026-03-02T06:00:00Z";

    fn ms(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn a_scaled_clock_reads_start_at_its_anchor_and_runs_rate_times_faster() {
        let anchor = ms("2026-12-04T10:00:00Z");
        let clock = ScaledClock::new(ms(T0), anchor, 96.0).unwrap();
        assert_eq!(clock.at_real(anchor), ms(T0));
        // Fifteen real minutes are a day.
        assert_eq!(
            clock.at_real(anchor + 15 * 60_000),
            ms("2026-03-03T06:00:00Z")
        );
        assert_eq!(
            clock.real_wait(Duration::from_secs(96)),
            Duration::from_secs(1)
        );
        assert_eq!(
            clock.business_span(Duration::from_secs(1)),
            Duration::from_secs(96)
        );
        // The longest configurable timeout saturates instead of panicking.
        assert_eq!(clock.business_span(Duration::MAX), Duration::MAX);
        let slow = ScaledClock::new(0, 0, 0.5).unwrap();
        assert_eq!(slow.real_wait(Duration::MAX), Duration::MAX);
    }

    #[test]
    fn every_value_of_the_setting_parses_or_says_what_is_wrong() {
        for system in ["", " ", "system"] {
            let clock = parse(system).unwrap();
            assert!((clock.now_ms() - SystemClock.now_ms()).abs() < 60_000);
        }
        let clock = parse(&format!(
            "scaled:start={T0},rate=96,anchor=2026-12-04T10:00:00Z"
        ))
        .unwrap();
        assert_eq!(
            clock.real_wait(Duration::from_secs(960)),
            Duration::from_secs(10)
        );
        // Without an anchor, simulated time starts at `start` in real time too.
        let clock = parse("scaled:start=2020-01-01T00:00:00Z,rate=1").unwrap();
        assert!((clock.now_ms() - SystemClock.now_ms()).abs() < 60_000);
        let refused = [
            ("fast", "expected `system`"),
            ("scaled:rate=96", "expected `system`"),
            ("scaled:start=yesterday,rate=2", "start=\"yesterday\""),
            (&format!("scaled:start={T0},rate=0"), "rate=\"0\""),
            (&format!("scaled:start={T0},rate=fast"), "rate=\"fast\""),
            (&format!("scaled:start={T0},rate=20000"), "at most 10000"),
            (
                &format!("scaled:start={T0},rate=2,speed=3"),
                "expected `system`",
            ),
        ];
        for (value, says) in refused {
            let error = parse(value).expect_err(value).to_string();
            assert!(error.contains(says), "{value}: {error}");
        }
    }

    #[test]
    fn processes_started_apart_agree_on_the_scaled_time() {
        let value = format!("scaled:start={T0},rate=96,anchor=2026-12-04T10:00:00Z");
        let (a, b) = (parse(&value).unwrap(), parse(&value).unwrap());
        // Read one after the other: at most a few real ms apart, times 96.
        assert!((b.now_ms() - a.now_ms()).abs() < 96 * 50);
    }
}

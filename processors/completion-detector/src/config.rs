//! The detector's settings, each with its default and its environment
//! variable. Windows per tenant or campaign come from `control` at run time;
//! these are the fallbacks and the knobs of the join and the monitor.

use callstream_platform::topics::BadSetting;
use callstream_platform::Topics;
use thiserror::Error;

/// A setting that cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{name}={value:?} is not a number")]
    NotANumber { name: &'static str, value: String },
    #[error("{name}: {problem}")]
    Invalid {
        name: &'static str,
        problem: &'static str,
    },
    #[error(transparent)]
    Topics(#[from] BadSetting),
}

/// How the completion detector joins, times out and monitors.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorConfig {
    /// Physical topic names (`CALLSTREAM_TOPIC_*`).
    pub topics: Topics,
    /// Window W: how long after acceptance a completion is expected, when
    /// `control` has no completion window for the campaign or tenant
    /// (`CALLSTREAM_DETECTOR_WINDOW_MS`, default 20 minutes).
    pub default_window_ms: i64,
    /// Grace for late events after W, when `control` sets none
    /// (`CALLSTREAM_DETECTOR_GRACE_MS`, default 2 minutes).
    pub default_grace_ms: i64,
    /// How long a completion whose launch is not recorded yet waits for it
    /// (a callback can beat the dispatcher's response) before it is matched
    /// by time alone (`CALLSTREAM_DETECTOR_EARLY_GRACE_MS`, default 60 s).
    pub early_grace_ms: i64,
    /// How long a launch reported missing waits for a late completion
    /// before the detector forgets it (`CALLSTREAM_DETECTOR_LATE_RETENTION_MS`,
    /// default 24 hours).
    pub late_retention_ms: i64,
    /// How long a closed launch is remembered so that a duplicate completion
    /// matches nothing (`CALLSTREAM_DETECTOR_CLOSED_RETENTION_MS`, default 1 hour).
    pub closed_retention_ms: i64,
    /// A partition that is consuming records whose stream time is further
    /// behind the wall clock than this is catching up on a backlog: its
    /// deadlines then follow stream time only, so a restart does not report
    /// completions that are merely still in the backlog
    /// (`CALLSTREAM_DETECTOR_LAG_TOLERANCE_MS`, default 10 s).
    pub lag_tolerance_ms: i64,
    /// Width of a delivery bucket (`CALLSTREAM_DETECTOR_BUCKET_MS`, default 10 minutes).
    pub bucket_ms: i64,
    /// A closed bucket below this share of completions delivered by the
    /// platform raises an alert (`CALLSTREAM_DETECTOR_DELIVERY_THRESHOLD`, default 0.8).
    pub delivery_threshold: f64,
    /// Buckets with fewer launches say little and raise nothing
    /// (`CALLSTREAM_DETECTOR_MIN_BUCKET_LAUNCHES`, default 10).
    pub min_bucket_launches: u32,
    /// After an alert resolves, the same tenant raises none for this long
    /// (`CALLSTREAM_DETECTOR_ALERT_QUIET_MS`, default 2 hours).
    pub alert_quiet_ms: i64,
    /// A bucket closes this long after it ends, when every launch in it
    /// had its window; at least the tenant's W plus grace
    /// (`CALLSTREAM_DETECTOR_BUCKET_CLOSE_DELAY_MS`, default W plus grace).
    pub bucket_close_delay_ms: i64,
    /// How long the tenant's aggregate waits after the close for the other
    /// partitions' counts (`CALLSTREAM_DETECTOR_SETTLE_MS`, default 5 s).
    pub settle_ms: i64,
}

/// Default W.
pub const DEFAULT_WINDOW_MS: i64 = 20 * 60_000;
/// Default grace after W.
pub const DEFAULT_GRACE_MS: i64 = 2 * 60_000;

impl Default for DetectorConfig {
    fn default() -> Self {
        Self {
            topics: Topics::default(),
            default_window_ms: DEFAULT_WINDOW_MS,
            default_grace_ms: DEFAULT_GRACE_MS,
            early_grace_ms: 60_000,
            late_retention_ms: 24 * 3_600_000,
            closed_retention_ms: 3_600_000,
            lag_tolerance_ms: 10_000,
            bucket_ms: 10 * 60_000,
            delivery_threshold: 0.8,
            min_bucket_launches: 10,
            alert_quiet_ms: 2 * 3_600_000,
            bucket_close_delay_ms: DEFAULT_WINDOW_MS + DEFAULT_GRACE_MS,
            settle_ms: 5_000,
        }
    }
}

fn env_num<T: std::str::FromStr>(name: &'static str, default: T) -> Result<T, ConfigError> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(value) => value
            .trim()
            .parse()
            .map_err(|_| ConfigError::NotANumber { name, value }),
    }
}

impl DetectorConfig {
    /// Reads every setting from the environment (see the field docs); unset
    /// ones keep their defaults. The close delay defaults to W plus grace.
    pub fn from_env() -> Result<Self, ConfigError> {
        let d = Self::default();
        let default_window_ms = env_num("CALLSTREAM_DETECTOR_WINDOW_MS", d.default_window_ms)?;
        let default_grace_ms = env_num("CALLSTREAM_DETECTOR_GRACE_MS", d.default_grace_ms)?;
        let config = Self {
            topics: Topics::from_env()?,
            default_window_ms,
            default_grace_ms,
            early_grace_ms: env_num("CALLSTREAM_DETECTOR_EARLY_GRACE_MS", d.early_grace_ms)?,
            late_retention_ms: env_num(
                "CALLSTREAM_DETECTOR_LATE_RETENTION_MS",
                d.late_retention_ms,
            )?,
            closed_retention_ms: env_num(
                "CALLSTREAM_DETECTOR_CLOSED_RETENTION_MS",
                d.closed_retention_ms,
            )?,
            lag_tolerance_ms: env_num("CALLSTREAM_DETECTOR_LAG_TOLERANCE_MS", d.lag_tolerance_ms)?,
            bucket_ms: env_num("CALLSTREAM_DETECTOR_BUCKET_MS", d.bucket_ms)?,
            delivery_threshold: env_num(
                "CALLSTREAM_DETECTOR_DELIVERY_THRESHOLD",
                d.delivery_threshold,
            )?,
            min_bucket_launches: env_num(
                "CALLSTREAM_DETECTOR_MIN_BUCKET_LAUNCHES",
                d.min_bucket_launches,
            )?,
            alert_quiet_ms: env_num("CALLSTREAM_DETECTOR_ALERT_QUIET_MS", d.alert_quiet_ms)?,
            bucket_close_delay_ms: env_num(
                "CALLSTREAM_DETECTOR_BUCKET_CLOSE_DELAY_MS",
                default_window_ms + default_grace_ms,
            )?,
            settle_ms: env_num("CALLSTREAM_DETECTOR_SETTLE_MS", d.settle_ms)?,
        };
        config.validate()?;
        Ok(config)
    }

    /// Refuses settings that would make the join meaningless.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("CALLSTREAM_DETECTOR_WINDOW_MS", self.default_window_ms),
            ("CALLSTREAM_DETECTOR_BUCKET_MS", self.bucket_ms),
        ];
        for (name, value) in positive {
            if value <= 0 {
                return Err(ConfigError::Invalid {
                    name,
                    problem: "must be positive",
                });
            }
        }
        let non_negative = [
            ("CALLSTREAM_DETECTOR_GRACE_MS", self.default_grace_ms),
            ("CALLSTREAM_DETECTOR_EARLY_GRACE_MS", self.early_grace_ms),
            (
                "CALLSTREAM_DETECTOR_LATE_RETENTION_MS",
                self.late_retention_ms,
            ),
            (
                "CALLSTREAM_DETECTOR_CLOSED_RETENTION_MS",
                self.closed_retention_ms,
            ),
            (
                "CALLSTREAM_DETECTOR_LAG_TOLERANCE_MS",
                self.lag_tolerance_ms,
            ),
            ("CALLSTREAM_DETECTOR_ALERT_QUIET_MS", self.alert_quiet_ms),
            (
                "CALLSTREAM_DETECTOR_BUCKET_CLOSE_DELAY_MS",
                self.bucket_close_delay_ms,
            ),
            ("CALLSTREAM_DETECTOR_SETTLE_MS", self.settle_ms),
        ];
        for (name, value) in non_negative {
            if value < 0 {
                return Err(ConfigError::Invalid {
                    name,
                    problem: "must not be negative",
                });
            }
        }
        if !(0.0..=1.0).contains(&self.delivery_threshold) {
            return Err(ConfigError::Invalid {
                name: "CALLSTREAM_DETECTOR_DELIVERY_THRESHOLD",
                problem: "must be between 0 and 1",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_design_and_validate() {
        let config = DetectorConfig::default();
        assert_eq!(config.default_window_ms, 20 * 60_000);
        assert_eq!(config.bucket_ms, 10 * 60_000);
        assert!((config.delivery_threshold - 0.8).abs() < f64::EPSILON);
        assert_eq!(config.alert_quiet_ms, 2 * 3_600_000);
        assert!(config.validate().is_ok());
    }

    #[test]
    fn nonsense_is_refused() {
        let cases = [
            DetectorConfig {
                default_window_ms: 0,
                ..DetectorConfig::default()
            },
            DetectorConfig {
                early_grace_ms: -1,
                ..DetectorConfig::default()
            },
            DetectorConfig {
                delivery_threshold: 1.5,
                ..DetectorConfig::default()
            },
        ];
        for config in cases {
            assert!(config.validate().is_err(), "{config:?}");
        }
    }
}

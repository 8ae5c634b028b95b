//! The delivery monitor, in two stages as a Kafka Streams aggregation with
//! a repartition would do it:
//!
//! 1. Each contact partition counts, per tenant and 10-minute bucket (by
//!    acceptance time), the launches accepted and those whose completion the
//!    platform itself delivered within the window (recovered ones do not
//!    count). When the bucket closes (every launch in it had its window), the
//!    partition sends its counts as a [`Partial`] to the `delivery-partials`
//!    topic, keyed by tenant.
//! 2. The partition owning the tenant key sums the partials and, a settle
//!    time after the close, evaluates the bucket: below the threshold raises
//!    an alert, at or above it resolves an open one; after a resolution the
//!    tenant raises nothing for the quiet period (measured in bucket time, so
//!    a replay decides the same).
//!
//! Everything here is pure; the processor does the I/O.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::codec::{CodecError, Reader, Writer};
use callstream_domain::ids::completion_case as ids;

/// The counts of one tenant's bucket on one partition (stage 1 state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BucketCounts {
    pub launches: u64,
    pub delivered: u64,
    pub close_at_ms: i64,
}

impl BucketCounts {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(16);
        w.varint(self.launches);
        w.varint(self.delivered);
        w.signed(self.close_at_ms);
        w.buf
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut r = Reader::new(bytes);
        let counts = Self {
            launches: r.varint()?,
            delivered: r.varint()?,
            close_at_ms: r.signed()?,
        };
        r.finish()?;
        Ok(counts)
    }
}

/// The store key of a tenant's bucket: tenant, a zero byte, the bucket start.
pub fn bucket_key(tenant: &str, bucket_start_ms: i64) -> Vec<u8> {
    let mut key = Vec::with_capacity(tenant.len() + 9);
    key.extend_from_slice(tenant.as_bytes());
    key.push(0);
    key.extend_from_slice(&bucket_start_ms.to_be_bytes());
    key
}

/// The tenant and bucket start of a bucket key.
pub fn parse_bucket_key(key: &[u8]) -> Option<(String, i64)> {
    let split = key.len().checked_sub(9)?;
    if key[split] != 0 {
        return None;
    }
    let tenant = std::str::from_utf8(&key[..split]).ok()?.to_string();
    let start = i64::from_be_bytes(key[split + 1..].try_into().ok()?);
    Some((tenant, start))
}

/// The bucket an instant falls in.
pub fn bucket_start(at_ms: i64, bucket_ms: i64) -> i64 {
    at_ms.div_euclid(bucket_ms) * bucket_ms
}

/// One partition's counts for a closed bucket (value of `delivery-partials`,
/// JSON so standard tools read it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partial {
    pub tenant_id: String,
    pub bucket_start_ms: i64,
    pub bucket_ms: i64,
    pub partition: i32,
    pub launches: u64,
    pub delivered: u64,
    pub close_at_ms: i64,
}

/// A tenant's bucket being summed (stage 2 state).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Aggregate {
    pub launches: u64,
    pub delivered: u64,
    /// Partitions already counted: a partial seen twice counts once.
    pub partitions: Vec<i32>,
    pub evaluate_at_ms: i64,
}

impl Aggregate {
    /// Adds a partition's counts; false when that partition was counted already.
    pub fn add(&mut self, partial: &Partial) -> bool {
        if self.partitions.contains(&partial.partition) {
            return false;
        }
        self.partitions.push(partial.partition);
        self.launches += partial.launches;
        self.delivered += partial.delivered;
        true
    }
}

/// A tenant's alert state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertState {
    /// The open alert and the bucket that raised it.
    pub open: Option<(Uuid, i64)>,
    /// No new alert for a bucket starting before this (bucket time).
    pub quiet_until_ms: i64,
    /// The latest bucket evaluated: counts for it or an earlier one are late.
    pub last_evaluated_ms: i64,
}

impl Default for AlertState {
    fn default() -> Self {
        Self {
            open: None,
            quiet_until_ms: i64::MIN,
            last_evaluated_ms: i64::MIN,
        }
    }
}

/// The monitor's thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MonitorSettings {
    pub bucket_ms: i64,
    pub threshold: f64,
    pub min_launches: u32,
    pub quiet_ms: i64,
}

/// What evaluating a closed bucket decided.
#[derive(Debug, Clone, PartialEq)]
pub enum AlertChange {
    Raised { alert_id: Uuid, rate: f64 },
    Resolved { alert_id: Uuid, rate: f64 },
}

/// Evaluates a tenant's closed bucket against its alert state.
pub fn evaluate(
    tenant: &str,
    bucket_start_ms: i64,
    aggregate: &Aggregate,
    alert: &mut AlertState,
    s: &MonitorSettings,
) -> Option<AlertChange> {
    if aggregate.launches == 0 || aggregate.launches < u64::from(s.min_launches) {
        return None;
    }
    // Counts far below 2^53: the conversion is exact.
    let rate = aggregate.delivered as f64 / aggregate.launches as f64;
    match alert.open {
        None if rate < s.threshold && bucket_start_ms >= alert.quiet_until_ms => {
            let alert_id = ids::alert(tenant, bucket_start_ms);
            alert.open = Some((alert_id, bucket_start_ms));
            Some(AlertChange::Raised { alert_id, rate })
        }
        Some((alert_id, _)) if rate >= s.threshold => {
            alert.open = None;
            alert.quiet_until_ms = bucket_start_ms + s.bucket_ms + s.quiet_ms;
            Some(AlertChange::Resolved { alert_id, rate })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: MonitorSettings = MonitorSettings {
        bucket_ms: 600_000,
        threshold: 0.8,
        min_launches: 10,
        quiet_ms: 7_200_000,
    };

    fn agg(launches: u64, delivered: u64) -> Aggregate {
        Aggregate {
            launches,
            delivered,
            ..Aggregate::default()
        }
    }

    fn kind(change: &Option<AlertChange>) -> &'static str {
        match change {
            None => "-",
            Some(AlertChange::Raised { .. }) => "raised",
            Some(AlertChange::Resolved { .. }) => "resolved",
        }
    }

    #[test]
    fn a_low_bucket_raises_once_and_a_good_one_resolves_then_two_hours_of_quiet() {
        let b = S.bucket_ms;
        // (bucket index, launches, delivered, expected)
        let story = [
            (0, 100, 95, "-"),
            (1, 100, 70, "raised"),
            (2, 100, 60, "-"),
            (3, 100, 90, "resolved"),
            (4, 100, 10, "-"),
            (15, 100, 10, "-"),
            (16, 100, 10, "raised"),
            (17, 5, 0, "-"),
        ];
        let mut alert = AlertState::default();
        for (i, launches, delivered, expected) in story {
            let change = evaluate("t1", i * b, &agg(launches, delivered), &mut alert, &S);
            assert_eq!(kind(&change), expected, "bucket {i}");
        }
        // Quiet until the end of bucket 3 plus two hours: bucket 16 starts then.
        assert_eq!(alert.open.map(|(_, start)| start), Some(16 * b));
    }

    #[test]
    fn partials_count_once_per_partition() {
        let mut a = Aggregate::default();
        let p = Partial {
            tenant_id: "t1".into(),
            bucket_start_ms: 0,
            bucket_ms: 600_000,
            partition: 3,
            launches: 4,
            delivered: 3,
            close_at_ms: 1,
        };
        assert!(a.add(&p));
        assert!(!a.add(&p));
        assert!(a.add(&Partial { partition: 4, ..p }));
        assert_eq!((a.launches, a.delivered), (8, 6));
    }

    #[test]
    fn keys_and_buckets() {
        let key = bucket_key("tenant\0x", -600_000);
        assert_eq!(parse_bucket_key(&key), Some(("tenant\0x".into(), -600_000)));
        assert_eq!(bucket_start(1_199_999, 600_000), 600_000);
        assert_eq!(bucket_start(-1, 600_000), -600_000);
        let counts = BucketCounts {
            launches: 3,
            delivered: 2,
            close_at_ms: 99,
        };
        assert_eq!(BucketCounts::decode(&counts.encode()), Ok(counts));
    }
}

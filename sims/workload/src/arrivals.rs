//! When each launch request is sent over a simulated day, the way CRMs send them: a burst
//! when a school's admissions office opens (09:00 in the tenant's home zone), and the rest
//! trickling in as leads enter campaigns, in batches every quarter of an hour.
//!
//! Pure: the same plan and arrivals give the same send times.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration as Span, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::plan::Plan;

/// How a business span's launch requests arrive.
#[derive(Debug, Clone)]
pub struct Arrivals {
    /// The span's start and end, business time in ms since the epoch.
    pub start_ms: i64,
    pub end_ms: i64,
    /// Each tenant's home zone, where its office opens (a tenant not named: US Central).
    pub home_zones: BTreeMap<String, Tz>,
    /// The share of a tenant's requests sent in the opening burst.
    pub burst_share: f64,
    /// The local time of the opening burst.
    pub opens_at: NaiveTime,
    /// The rest arrive evenly over this share of the span from its start.
    pub trickle_share: f64,
}

impl Arrivals {
    /// A business day's: half of each tenant's requests at 09:00 local, the rest over the
    /// first three quarters of the span.
    pub fn day(start_ms: i64, end_ms: i64, home_zones: BTreeMap<String, Tz>) -> Self {
        Self {
            start_ms,
            end_ms,
            home_zones,
            burst_share: 0.5,
            opens_at: NaiveTime::from_hms_opt(9, 0, 0).unwrap_or_default(),
            trickle_share: 0.75,
        }
    }
}

/// Quarter-hour batches of the trickle.
const BATCH_MS: i64 = 15 * 60 * 1_000;

/// The first `opens_at` in `zone` at or after `start_ms`, if it falls before `end_ms`.
fn opening(arrivals: &Arrivals, zone: Tz) -> Option<i64> {
    let start = DateTime::<Utc>::from_timestamp_millis(arrivals.start_ms)?;
    let local_day = start.with_timezone(&zone).date_naive();
    (0..=2)
        .filter_map(|d| {
            let day = local_day.checked_add_signed(Span::days(d))?;
            zone.from_local_datetime(&day.and_time(arrivals.opens_at))
                .earliest()
        })
        .map(|t| t.timestamp_millis())
        .find(|&t| t >= arrivals.start_ms)
        .filter(|&t| t < arrivals.end_ms)
}

/// Sets every launch's `send_at_ms`: per tenant, the first `burst_share` of its requests at
/// its office's opening (at the span's start when the opening falls outside the span), the
/// rest in quarter-hour batches spread over the trickle.
pub fn schedule(plan: &mut Plan, arrivals: &Arrivals) {
    let span = (arrivals.end_ms - arrivals.start_ms).max(0);
    let trickle = (span as f64 * arrivals.trickle_share.clamp(0.0, 1.0)) as i64;
    let mut per_tenant: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, l) in plan.launches.iter().enumerate() {
        per_tenant.entry(l.tenant.clone()).or_default().push(i);
    }
    for (tenant, indices) in per_tenant {
        let zone = arrivals
            .home_zones
            .get(&tenant)
            .copied()
            .unwrap_or(chrono_tz::America::Chicago);
        let burst_at = opening(arrivals, zone).unwrap_or(arrivals.start_ms);
        let in_burst = (indices.len() as f64 * arrivals.burst_share.clamp(0.0, 1.0)).round();
        let in_burst = in_burst as usize;
        let rest = indices.len() - in_burst;
        for (k, &i) in indices.iter().enumerate() {
            plan.launches[i].send_at_ms = if k < in_burst {
                burst_at
            } else {
                let j = (k - in_burst) as i64;
                let at = arrivals.start_ms + trickle * j / rest.max(1) as i64;
                // Batched: a CRM syncs on a schedule, not one lead at a time.
                arrivals.start_ms + (at - arrivals.start_ms) / BATCH_MS * BATCH_MS
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{plan, PlanSettings};

    fn ms(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .timestamp_millis()
    }

    fn three_tenants(contacts: usize) -> Plan {
        plan(&PlanSettings {
            contacts,
            campaigns: vec!["a".into()],
            tenants: vec!["acme".into(), "bolt".into(), "crest".into()],
            id_prefix: "t".into(),
            seed: 1,
        })
    }

    fn zones() -> BTreeMap<String, Tz> {
        BTreeMap::from([
            ("acme".to_string(), chrono_tz::America::Chicago),
            ("bolt".to_string(), chrono_tz::America::New_York),
            ("crest".to_string(), chrono_tz::America::Los_Angeles),
        ])
    }

    #[test]
    fn half_of_each_tenant_arrives_when_its_office_opens_and_the_rest_through_the_day() {
        let (start, end) = (
            ms("2026-12-03T00:00:00-06:00"),
            ms("2026-12-04T00:00:00-06:00"),
        );
        let mut plan = three_tenants(300);
        schedule(&mut plan, &Arrivals::day(start, end, zones()));
        let opens = [
            ("acme", ms("2026-12-03T09:00:00-06:00")),
            ("bolt", ms("2026-12-03T09:00:00-05:00")),
            ("crest", ms("2026-12-03T09:00:00-08:00")),
        ];
        for (tenant, open) in opens {
            let times: Vec<i64> = plan
                .launches
                .iter()
                .filter(|l| l.tenant == tenant)
                .map(|l| l.send_at_ms)
                .collect();
            // The burst, and a trickle batch that falls on the same quarter-hour.
            let at_open = times.iter().filter(|&&t| t == open).count();
            assert!((50..=52).contains(&at_open), "{tenant}: {at_open}");
            assert!(times.iter().all(|&t| (start..end).contains(&t)), "{tenant}");
            assert!(
                times.iter().all(|&t| (t - start) % BATCH_MS == 0),
                "{tenant}"
            );
            let distinct: std::collections::BTreeSet<_> = times.iter().collect();
            assert!(distinct.len() > 20, "{tenant} arrives through the day");
        }
        let last = plan.launches.iter().map(|l| l.send_at_ms).max().unwrap();
        assert!(last <= start + (end - start) * 3 / 4);
    }

    #[test]
    fn an_opening_outside_the_span_is_sent_at_its_start() {
        // 10:00 to 14:00 Central: Chicago's and New York's offices opened before the span,
        // Los Angeles's opens inside it (11:00 Central).
        let (start, end) = (
            ms("2026-12-03T10:00:00-06:00"),
            ms("2026-12-03T14:00:00-06:00"),
        );
        let mut plan = three_tenants(30);
        schedule(&mut plan, &Arrivals::day(start, end, zones()));
        let count = |tenant: &str, at: i64| {
            plan.launches
                .iter()
                .filter(|l| l.tenant == tenant && l.send_at_ms == at)
                .count()
        };
        // The burst (5 of 10) and the first trickle batch.
        assert_eq!(count("acme", start), 6);
        assert_eq!(count("bolt", start), 6);
        assert!(count("crest", ms("2026-12-03T11:00:00-06:00")) >= 5);
        assert!(plan
            .launches
            .iter()
            .all(|l| (start..end).contains(&l.send_at_ms)));
    }

    #[test]
    fn the_same_inputs_give_the_same_times() {
        let (start, end) = (
            ms("2026-12-03T08:00:00-06:00"),
            ms("2026-12-03T12:00:00-06:00"),
        );
        let times = || {
            let mut plan = three_tenants(60);
            schedule(&mut plan, &Arrivals::day(start, end, zones()));
            plan.launches
                .iter()
                .map(|l| l.send_at_ms)
                .collect::<Vec<_>>()
        };
        assert_eq!(times(), times());
    }
}

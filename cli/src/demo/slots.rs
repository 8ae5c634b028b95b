//! Slot occupancy per tenant, and the busiest 5-minute window, measured on
//! what the scheduler allocated (the grid) and on what the contact
//! processor actually sent to the dispatcher (the launches).
//!
//! The cap of a tenant is its launches per slot times the number of slot
//! starts a half-open 5-minute window can hold (`ceil(300 s / slot)`), so a
//! grid that never overbooks a slot can never exceed it.

use std::collections::BTreeMap;

use callstream_control::ControlFile;
use serde::Serialize;

use super::tally::Tally;

const FIVE_MINUTES_MS: i64 = 5 * 60 * 1000;

/// One tenant's grid over the run.
#[derive(Debug, Serialize)]
pub struct Slots {
    pub tenant: String,
    pub slot_seconds: u32,
    pub launches_per_slot: u32,
    pub cap_per_5_min: u64,
    /// Distinct slots holding at least one job.
    pub slots_used: usize,
    pub jobs_on_grid: usize,
    pub max_in_a_slot: usize,
    /// The most allocated jobs (kept, not freed) in any 5-minute window.
    pub max_in_5_min: usize,
    /// Where that window starts (RFC 3339).
    pub busiest_window_start: Option<String>,
    /// The most launches sent in any 5-minute window (by slot time).
    pub max_launched_in_5_min: usize,
}

impl Slots {
    /// No slot over its capacity and no 5-minute window over the cap.
    pub fn cap_held(&self) -> bool {
        self.max_in_a_slot <= self.launches_per_slot as usize
            && (self.max_in_5_min as u64) <= self.cap_per_5_min
            && (self.max_launched_in_5_min as u64) <= self.cap_per_5_min
    }
}

/// The most points of sorted `times` in any half-open window of
/// `window_ms`, and where such a window starts.
pub fn max_in_window(times: &[i64], window_ms: i64) -> (usize, Option<i64>) {
    let (mut best, mut at, mut lo) = (0, None, 0);
    for (hi, &t) in times.iter().enumerate() {
        while times[lo] <= t - window_ms {
            lo += 1;
        }
        if hi + 1 - lo > best {
            best = hi + 1 - lo;
            at = Some(times[lo]);
        }
    }
    (best, at)
}

/// The cap of a grid with `slot_seconds` slots and `per_slot` launches each.
pub fn cap(slot_seconds: u32, per_slot: u32) -> u64 {
    let slots = 300_u64.div_ceil(u64::from(slot_seconds.max(1)));
    slots * u64::from(per_slot)
}

pub fn occupancy(t: &Tally, control: &ControlFile) -> Vec<Slots> {
    let mut grid: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for (id, a) in &t.allocations {
        if !t.slot_freed.contains(id) {
            grid.entry(a.tenant.as_str())
                .or_default()
                .push(a.slot_at_ms);
        }
    }
    let mut launched: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for (tenant, at) in t.launch_commands.values() {
        launched.entry(tenant.as_str()).or_default().push(*at);
    }
    grid.into_iter()
        .map(|(tenant, mut times)| {
            let settings = control.tenants.get(tenant).and_then(|f| f.grid.as_ref());
            let slot_seconds = settings.map_or(75, |g| u32::try_from(g.slot_seconds).unwrap_or(75));
            let per_slot = settings.map_or(1, |g| u32::try_from(g.launches_per_slot).unwrap_or(1));
            times.sort_unstable();
            let mut per: BTreeMap<i64, usize> = BTreeMap::new();
            for &at in &times {
                *per.entry(at).or_default() += 1;
            }
            let (max, at) = max_in_window(&times, FIVE_MINUTES_MS);
            let mut sent = launched.remove(tenant).unwrap_or_default();
            sent.sort_unstable();
            Slots {
                tenant: tenant.to_owned(),
                slot_seconds,
                launches_per_slot: per_slot,
                cap_per_5_min: cap(slot_seconds, per_slot),
                slots_used: per.len(),
                jobs_on_grid: times.len(),
                max_in_a_slot: per.values().copied().max().unwrap_or(0),
                max_in_5_min: max,
                busiest_window_start: at
                    .and_then(chrono::DateTime::from_timestamp_millis)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                max_launched_in_5_min: max_in_window(&sent, FIVE_MINUTES_MS).0,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn caps_count_the_slot_starts_a_window_can_hold() {
        let cases = [
            (75, 1, 4),
            (1, 6, 1800),
            (60, 2, 10),
            (7, 1, 43),
            (300, 3, 3),
            (600, 1, 1),
        ];
        for (slot, per, expected) in cases {
            assert_eq!(cap(slot, per), expected, "slot {slot} s, {per} a slot");
        }
    }

    #[test]
    fn windows_are_half_open() {
        let cases: &[(&[i64], i64, usize)] = &[
            (&[], 10, 0),
            (&[0, 10, 20], 10, 1),
            (&[0, 9, 10, 19], 10, 2),
            (&[0, 0, 0, 5], 10, 4),
            (&[0, 3, 6, 100, 101], 5, 2),
        ];
        for (times, window, expected) in cases {
            assert_eq!(
                max_in_window(times, *window).0,
                *expected,
                "{times:?} in {window}"
            );
        }
    }

    proptest! {
        /// The sliding count equals the brute-force count over every window
        /// that starts at a point (the busiest window can always start at one).
        #[test]
        fn sliding_count_matches_brute_force(mut times in prop::collection::vec(0i64..2_000, 0..60), window in 1i64..500) {
            times.sort_unstable();
            let brute = times
                .iter()
                .map(|&s| times.iter().filter(|&&t| t >= s && t < s + window).count())
                .max()
                .unwrap_or(0);
            let (max, at) = max_in_window(&times, window);
            prop_assert_eq!(max, brute);
            if let Some(start) = at {
                prop_assert_eq!(times.iter().filter(|&&t| t >= start && t < start + window).count(), max);
            }
        }
    }
}

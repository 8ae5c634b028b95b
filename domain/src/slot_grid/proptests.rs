//! Property tests of the allocator against a brute-force oracle: for any
//! sequence of requests and cancels, the grid keeps every invariant.

use std::collections::HashMap;

use chrono::{DateTime, Duration, TimeZone, Utc};
use proptest::prelude::*;
use uuid::Uuid;

use super::test_support::HoursUtc;
use super::*;

#[derive(Debug, Clone)]
enum Op {
    /// Earliest as seconds after the base instant; horizon as seconds after earliest.
    Allocate { earliest_s: i64, horizon_s: i64 },
    /// Cancel the n-th job requested so far (modulo), booked or not.
    Cancel(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0i64..3 * 86_400, 0i64..2 * 86_400)
            .prop_map(|(earliest_s, horizon_s)| Op::Allocate { earliest_s, horizon_s }),
        1 => any::<usize>().prop_map(Op::Cancel),
    ]
}

fn base() -> DateTime<Utc> {
    // Not slot-aligned on purpose (07:00:10).
    Utc.with_ymd_and_hms(2025, 3, 9, 7, 0, 10).unwrap()
}

/// What the grid must answer: the first slot at or after `earliest`, before
/// `horizon`, allowed and below capacity — found by walking every slot.
fn oracle(
    g: &SlotGrid,
    earliest: DateTime<Utc>,
    hours: &HoursUtc,
    horizon: DateTime<Utc>,
) -> Option<u64> {
    let capacity = g.config().capacity_per_slot as usize;
    let mut i = g.slot_index_at_or_after(earliest);
    loop {
        let start = g.slot_start(i)?;
        if start >= horizon {
            return None;
        }
        if start >= earliest && hours.is_allowed(start) && g.slot_jobs(i).len() < capacity {
            return Some(i);
        }
        i += 1;
    }
}

/// The largest count in any rolling window of `w` seconds, by brute force
/// over every job's start.
fn rolling_max(g: &SlotGrid, w: i64) -> usize {
    let starts: Vec<i64> = g
        .slots()
        .flat_map(|(i, jobs)| jobs.iter().map(move |_| i))
        .map(|i| g.slot_start(i).unwrap().timestamp())
        .collect();
    starts
        .iter()
        .map(|&t| starts.iter().filter(|&&u| u >= t && u < t + w).count())
        .max()
        .unwrap_or(0)
}

type Booked = HashMap<JobId, (DateTime<Utc>, DateTime<Utc>, Slot)>;

fn run(config: GridConfig, hours: &HoursUtc, ops: &[Op]) -> (SlotGrid, Vec<Result<Slot, Refusal>>) {
    let mut g = SlotGrid::new(config).unwrap();
    let mut requested: Vec<JobId> = Vec::new();
    let mut booked: Booked = HashMap::new();
    let mut results = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        let before = g.clone();
        match *op {
            Op::Allocate {
                earliest_s,
                horizon_s,
            } => {
                let id = Uuid::from_u128(n as u128 + 1);
                let earliest = base() + Duration::seconds(earliest_s);
                let horizon = earliest + Duration::seconds(horizon_s);
                let expected = oracle(&g, earliest, hours, horizon);
                let got = g.allocate(id, earliest, hours, horizon);
                match (expected, got) {
                    (Some(i), Ok(slot)) => {
                        assert_eq!(slot.index, i, "not the first free allowed slot");
                        assert_eq!(Some(slot.start), g.slot_start(i));
                        booked.insert(id, (earliest, horizon, slot));
                    }
                    (None, Err(Refusal::NoFreeSlot { .. })) => assert_eq!(g, before),
                    (e, r) => panic!("oracle {e:?} but grid {r:?}"),
                }
                requested.push(id);
                results.push(got);
            }
            Op::Cancel(k) if !requested.is_empty() => {
                let id = requested[k % requested.len()];
                let freed = g.cancel(id);
                assert_eq!(freed, booked.remove(&id).map(|b| b.2));
            }
            Op::Cancel(_) => {}
        }
        check_invariants(&g, hours, &booked);
    }
    (g, results)
}

fn check_invariants(g: &SlotGrid, hours: &HoursUtc, booked: &Booked) {
    let config = g.config();
    // No slot over capacity.
    for (i, jobs) in g.slots() {
        assert!(
            !jobs.is_empty() && jobs.len() <= config.capacity_per_slot as usize,
            "slot {i}"
        );
    }
    // No fixed or rolling 5-minute window over the cap.
    let cap = config.max_in_window(300) as usize;
    let rolling = rolling_max(g, 300);
    assert!(rolling <= cap, "rolling {rolling} > {cap}");
    assert_eq!(g.max_in_rolling_window(Duration::minutes(5)), rolling);
    assert!(g.max_in_fixed_window(Duration::minutes(5)) <= cap);
    // Every job where it was put: allowed, not early, inside its horizon.
    assert_eq!(g.len(), booked.len());
    for (&id, &(earliest, horizon, slot)) in booked {
        assert_eq!(g.slot_of(id), Some(slot), "a booked job moved");
        assert!(slot.start >= earliest && slot.start < horizon);
        assert!(hours.is_allowed(slot.start));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_requests_and_cancels_keep_the_grid_sound_and_deterministic(
        slot_seconds in prop_oneof![Just(75u32), Just(60), Just(90), Just(300)],
        capacity_per_slot in 1u32..=3,
        start_hour in 0u32..24,
        end_hour in 0u32..=24,
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        let config = GridConfig { slot_seconds, capacity_per_slot };
        let hours = HoursUtc::new(start_hour, end_hour);
        let (grid, results) = run(config, &hours, &ops);
        // The same input gives the same grid and the same answers.
        let (again, results_again) = run(config, &hours, &ops);
        prop_assert_eq!(&grid, &again);
        prop_assert_eq!(results, results_again);
        // The stored form restores to the same grid.
        let json = serde_json::to_string(&grid).unwrap();
        let restored: SlotGrid = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(restored, grid);
    }
}

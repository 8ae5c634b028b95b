//! Unit tests of the slot grid: arithmetic, allocation rules, cancels,
//! config changes, the stored form and the window counters.

use chrono::{DateTime, Duration, TimeZone, Utc};
use uuid::Uuid;

use super::test_support::HoursUtc;
use super::*;

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

fn job(n: u128) -> JobId {
    Uuid::from_u128(n)
}

fn grid() -> SlotGrid {
    SlotGrid::new(GridConfig::default()).unwrap()
}

#[test]
fn slots_count_from_the_documented_epoch() {
    let g = grid();
    assert_eq!(g.slot_start(0), Some(at(2024, 1, 1, 0, 0, 0)));
    assert_eq!(g.slot_start(1), Some(at(2024, 1, 1, 0, 1, 15)));
    assert_eq!(g.slot_start(48), Some(at(2024, 1, 1, 1, 0, 0)));
    let cases = [
        (at(2024, 1, 1, 0, 0, 0), 0),
        (at(2024, 1, 1, 0, 1, 15), 1),
        (at(2024, 1, 1, 0, 1, 15) + Duration::nanoseconds(1), 2),
        (at(2024, 1, 1, 0, 1, 16), 2),
        (at(2023, 6, 1, 0, 0, 0), 0),
        (at(2024, 1, 1, 8, 0, 0), 384),
    ];
    for (instant, index) in cases {
        assert_eq!(g.slot_index_at_or_after(instant), index, "{instant}");
        // The slot found never starts before the instant asked for.
        assert!(g.slot_start(index).unwrap() >= instant.max(at(2024, 1, 1, 0, 0, 0)));
    }
}

#[test]
fn a_burst_fills_consecutive_slots_never_before_earliest_and_four_per_five_minutes() {
    let mut g = grid();
    let earliest = at(2025, 3, 10, 14, 0, 30);
    let horizon = earliest + Duration::days(1);
    let open = HoursUtc::always();
    let slots: Vec<Slot> = (0..300)
        .map(|n| g.allocate(job(n), earliest, &open, horizon).unwrap())
        .collect();
    // 14:00:30 is not a slot start; the first slot after it is 14:01:15.
    assert_eq!(slots[0].start, at(2025, 3, 10, 14, 1, 15));
    for pair in slots.windows(2) {
        assert_eq!(pair[1].index, pair[0].index + 1);
    }
    assert!(slots.iter().all(|s| s.start >= earliest));
    assert_eq!(g.max_in_rolling_window(Duration::minutes(5)), 4);
    assert_eq!(g.max_in_fixed_window(Duration::minutes(5)), 4);
    assert_eq!(g.len(), 300);
}

#[test]
fn closed_hours_are_skipped_to_the_next_opening() {
    let mut g = grid();
    let hours = HoursUtc::new(8, 21);
    let horizon = at(2025, 3, 20, 0, 0, 0);
    let cases = [
        (job(1), at(2025, 3, 10, 22, 0, 0), at(2025, 3, 11, 8, 0, 0)),
        (job(2), at(2025, 3, 10, 22, 0, 0), at(2025, 3, 11, 8, 1, 15)),
        (
            job(3),
            at(2025, 3, 11, 20, 58, 0),
            at(2025, 3, 11, 20, 58, 45),
        ),
        // The last slot of the day is taken by job 3: tomorrow's opening.
        (job(4), at(2025, 3, 11, 20, 58, 0), at(2025, 3, 12, 8, 0, 0)),
    ];
    for (id, earliest, expected) in cases {
        assert_eq!(
            g.allocate(id, earliest, &hours, horizon).unwrap().start,
            expected
        );
    }
}

#[test]
fn long_closed_and_booked_stretches_are_jumped_not_walked() {
    let mut g = grid();
    let start = at(2025, 1, 1, 0, 0, 0);
    let open = HoursUtc::always();
    for n in 0..20_000 {
        g.allocate(job(n), start, &open, start + Duration::days(30))
            .unwrap();
    }
    // 20,000 booked slots ahead: one more allocation asks once.
    open.calls.set(0);
    let slot = g
        .allocate(job(99_999), start, &open, start + Duration::days(30))
        .unwrap();
    assert_eq!(slot.index, g.slot_index_at_or_after(start) + 20_000);
    assert_eq!(open.calls.get(), 1);
    // Booked until Jan 18 08:41:15, then closed until 23:00: one jump over
    // the booked stretch and one question for the next opening.
    let narrow = HoursUtc::new(23, 0);
    let later = g
        .allocate(job(100_000), start, &narrow, start + Duration::days(60))
        .unwrap();
    assert_eq!(later.start, at(2025, 1, 18, 23, 0, 0));
    assert!(
        narrow.calls.get() <= 4,
        "asked {} times",
        narrow.calls.get()
    );
    // Closed for weeks: asked a handful of times, not once per slot.
    let mut empty = grid();
    let late = HoursUtc::new(20, 21);
    let first = empty
        .allocate(
            job(1),
            at(2025, 2, 1, 21, 0, 0),
            &late,
            start + Duration::days(60),
        )
        .unwrap();
    assert_eq!(first.start, at(2025, 2, 2, 20, 0, 0));
    assert!(late.calls.get() <= 4, "asked {} times", late.calls.get());
}

#[test]
fn nothing_free_within_the_horizon_is_a_refusal_that_books_nothing() {
    let mut g = grid();
    let earliest = at(2025, 3, 10, 9, 0, 0);
    let horizon = earliest + Duration::minutes(5);
    let open = HoursUtc::always();
    for n in 0..4 {
        g.allocate(job(n), earliest, &open, horizon).unwrap();
    }
    let before = g.clone();
    let refusal = Refusal::NoFreeSlot { earliest, horizon };
    assert_eq!(g.allocate(job(9), earliest, &open, horizon), Err(refusal));
    // Closed all day, or a horizon before the earliest instant.
    let closed = HoursUtc::new(5, 5);
    let far = earliest + Duration::days(3);
    assert_eq!(
        g.allocate(job(9), earliest, &closed, far),
        Err(Refusal::NoFreeSlot {
            earliest,
            horizon: far
        })
    );
    let past = earliest - Duration::hours(1);
    assert_eq!(
        g.allocate(job(9), earliest, &open, past),
        Err(Refusal::NoFreeSlot {
            earliest,
            horizon: past
        })
    );
    assert_eq!(g, before);
}

#[test]
fn a_booked_job_is_never_moved_by_a_repeated_request() {
    let mut g = grid();
    let open = HoursUtc::always();
    let t = at(2025, 3, 10, 9, 0, 0);
    let first = g.allocate(job(1), t, &open, t + Duration::days(1)).unwrap();
    let again = g.allocate(job(1), t + Duration::hours(3), &open, t + Duration::days(1));
    assert_eq!(again, Err(Refusal::AlreadyBooked { slot: first }));
    assert_eq!(g.slot_of(job(1)), Some(first));
    assert_eq!(g.len(), 1);
}

#[test]
fn cancel_frees_the_slot_for_the_next_request() {
    let mut g = grid();
    let open = HoursUtc::always();
    let t = at(2025, 3, 10, 9, 0, 0);
    let h = t + Duration::days(1);
    let slots: Vec<Slot> = (0..3)
        .map(|n| g.allocate(job(n), t, &open, h).unwrap())
        .collect();
    assert_eq!(g.cancel(job(1)), Some(slots[1]));
    assert_eq!(g.cancel(job(1)), None);
    assert_eq!(g.slot_jobs(slots[1].index), &[] as &[JobId]);
    assert_eq!(g.allocate(job(7), t, &open, h).unwrap(), slots[1]);
    assert_eq!(
        g.allocate(job(8), t, &open, h).unwrap().index,
        slots[2].index + 1
    );
    // The others did not move.
    assert_eq!(g.slot_of(job(0)), Some(slots[0]));
    assert_eq!(g.slot_of(job(2)), Some(slots[2]));
}

#[test]
fn capacity_per_slot_and_config_changes() {
    let mut g = SlotGrid::new(GridConfig {
        slot_seconds: 75,
        capacity_per_slot: 2,
    })
    .unwrap();
    let open = HoursUtc::always();
    let t = at(2025, 3, 10, 9, 0, 0);
    let h = t + Duration::days(1);
    let idx: Vec<u64> = (0..5)
        .map(|n| g.allocate(job(n), t, &open, h).unwrap().index)
        .collect();
    assert_eq!(idx[0], idx[1]);
    assert_eq!(idx[2], idx[3]);
    assert_eq!(idx[4], idx[0] + 2);
    assert_eq!(g.max_in_rolling_window(Duration::minutes(5)), 5);
    // Lowering the capacity keeps every booking; new ones respect it.
    g.set_config(GridConfig::default()).unwrap();
    assert_eq!(g.slot_jobs(idx[0]).len(), 2);
    assert_eq!(g.allocate(job(9), t, &open, h).unwrap().index, idx[4] + 1);
    // Cancelling one of an over-full slot leaves it full.
    g.cancel(job(0));
    assert_eq!(g.allocate(job(10), t, &open, h).unwrap().index, idx[4] + 2);
    // The slot length is part of what an index means.
    let longer = GridConfig {
        slot_seconds: 60,
        capacity_per_slot: 1,
    };
    assert_eq!(
        g.set_config(longer),
        Err(GridConfigError::SlotLengthChangeWhileBooked { booked: g.len() })
    );
    let bad = [
        (
            GridConfig {
                slot_seconds: 0,
                capacity_per_slot: 1,
            },
            GridConfigError::ZeroSlotSeconds,
        ),
        (
            GridConfig {
                slot_seconds: 75,
                capacity_per_slot: 0,
            },
            GridConfigError::ZeroCapacity,
        ),
    ];
    for (config, err) in bad {
        assert_eq!(SlotGrid::new(config).unwrap_err(), err);
    }
    let mut empty = grid();
    empty.set_config(longer).unwrap();
    assert_eq!(empty.config(), longer);
}

#[test]
fn config_deserialises_with_defaults() {
    let cases = [
        ("{}", GridConfig::default()),
        (
            r#"{"capacity_per_slot":3}"#,
            GridConfig {
                slot_seconds: 75,
                capacity_per_slot: 3,
            },
        ),
    ];
    for (json, expected) in cases {
        assert_eq!(serde_json::from_str::<GridConfig>(json).unwrap(), expected);
    }
    assert!(serde_json::from_str::<GridConfig>(r#"{"slots":3}"#).is_err());
    assert_eq!(GridConfig::default().max_in_window(300), 4);
}

#[test]
fn the_stored_form_is_the_slot_map_and_restores_exactly() {
    let mut g = grid();
    let open = HoursUtc::always();
    let t = at(2025, 3, 10, 9, 0, 0);
    for n in 0..6 {
        g.allocate(job(n), t, &open, t + Duration::days(1)).unwrap();
    }
    g.cancel(job(2));
    let json = serde_json::to_value(&g).unwrap();
    assert_eq!(json["config"]["slot_seconds"], 75);
    assert_eq!(json["slots"].as_object().unwrap().len(), 5);
    let back: SlotGrid = serde_json::from_value(json).unwrap();
    assert_eq!(back, g);
    // The restored grid allocates exactly as the original would.
    let (mut a, mut b) = (g.clone(), back);
    for n in 10..14 {
        assert_eq!(
            a.allocate(job(n), t, &open, t + Duration::days(1)),
            b.allocate(job(n), t, &open, t + Duration::days(1))
        );
    }
    // Per-slot restore, and what it refuses.
    let per_slot: Vec<(u64, Vec<JobId>)> = a.slots().map(|(i, j)| (i, j.to_vec())).collect();
    assert_eq!(SlotGrid::from_slots(a.config(), per_slot).unwrap(), a);
    assert_eq!(
        SlotGrid::from_slots(
            GridConfig::default(),
            [(5, vec![job(1)]), (9, vec![job(1)])]
        ),
        Err(RestoreError::JobInTwoSlots {
            job: job(1),
            first: 5,
            second: 9
        })
    );
    assert_eq!(
        SlotGrid::from_slots(GridConfig::default(), [(u64::MAX, vec![job(1)])]),
        Err(RestoreError::SlotOutOfRange { index: u64::MAX })
    );
}

#[test]
fn prune_forgets_past_slots_and_reports_them() {
    let mut g = grid();
    let open = HoursUtc::always();
    let t = at(2025, 3, 10, 9, 0, 0);
    for n in 0..10 {
        g.allocate(job(n), t, &open, t + Duration::days(1)).unwrap();
    }
    let cut = g.slot_of(job(4)).unwrap().start;
    let removed = g.prune_before(cut);
    assert_eq!(removed.len(), 4);
    assert_eq!(removed[0].1, vec![job(0)]);
    assert_eq!(g.len(), 6);
    assert_eq!(g.slot_of(job(3)), None);
    assert_eq!(g.cancel(job(3)), None);
    assert_eq!(g.slot_of(job(4)).unwrap().start, cut);
}

#[test]
fn window_counters_match_a_hand_count() {
    let mut g = grid();
    let open = HoursUtc::always();
    let t = at(2025, 3, 10, 9, 0, 0);
    let h = t + Duration::days(1);
    // Book at 09:00, 09:01:15, 09:02:30, then 09:10 and 09:11:15.
    for n in 0..3 {
        g.allocate(job(n), t, &open, h).unwrap();
    }
    for n in 3..5 {
        g.allocate(job(n), t + Duration::minutes(10), &open, h)
            .unwrap();
    }
    let cases = [
        (t, t + Duration::minutes(5), 3),
        (t + Duration::seconds(1), t + Duration::minutes(15), 4),
        (t + Duration::minutes(10), t + Duration::minutes(11), 1),
        (t + Duration::minutes(11), t + Duration::minutes(10), 0),
    ];
    for (from, to, n) in cases {
        assert_eq!(g.count_between(from, to), n, "{from}..{to}");
    }
    assert_eq!(g.max_in_rolling_window(Duration::minutes(5)), 3);
    assert_eq!(g.max_in_rolling_window(Duration::minutes(11)), 4);
    assert_eq!(g.max_in_rolling_window(Duration::zero()), 0);
    assert_eq!(g.max_in_fixed_window(Duration::minutes(5)), 3);
    assert_eq!(g.max_in_fixed_window(Duration::hours(1)), 5);
    assert_eq!(g.occupied_slots(), 5);
}

/// Throughput of the pure allocator with 100,000 jobs booked. Run with
/// `cargo test -p callstream-domain --release -- --ignored --nocapture allocator_throughput`.
#[test]
#[ignore = "benchmark"]
fn allocator_throughput() {
    use std::time::Instant;
    let mut g = grid();
    let hours = HoursUtc::new(13, 2); // 08:00–21:00 US Central, in UTC
    let start = at(2025, 3, 10, 0, 0, 0);
    let horizon = start + Duration::days(400);
    // A deterministic spread of earliest times over a year.
    let spread = |n: u64| start + Duration::seconds(((n * 2_654_435_761) % (365 * 86_400)) as i64);
    for n in 0..100_000u64 {
        g.allocate(job(u128::from(n)), spread(n), &hours, horizon)
            .unwrap();
    }
    let rounds = 200_000u64;
    let began = Instant::now();
    for n in 0..rounds {
        let id = job(u128::from(1_000_000 + n));
        g.allocate(id, spread(n * 7 + 3), &hours, horizon).unwrap();
        g.cancel(id);
    }
    let per_s = rounds as f64 / began.elapsed().as_secs_f64();
    println!("{{\"metric\":\"pure_allocations_per_s\",\"value\":{per_s:.0},\"booked\":100000,\"case\":\"spread\"}}");
    assert_eq!(g.len(), 100_000);
    // Worst case: 100,000 jobs booked back to back from the same instant
    // (about 160 days of calling hours), then a burst at that instant: each
    // allocation alternates booked days and closed nights to the frontier.
    let mut g = grid();
    for n in 0..100_000u64 {
        g.allocate(job(u128::from(n)), start, &hours, horizon)
            .unwrap();
    }
    let rounds = 20_000u64;
    let began = Instant::now();
    for n in 0..rounds {
        g.allocate(job(u128::from(1_000_000 + n)), start, &hours, horizon)
            .unwrap();
    }
    let per_s = rounds as f64 / began.elapsed().as_secs_f64();
    println!("{{\"metric\":\"pure_allocations_per_s\",\"value\":{per_s:.0},\"booked\":100000,\"case\":\"frontier\"}}");
    assert_eq!(g.len(), 120_000);
}

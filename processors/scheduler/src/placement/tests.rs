use super::*;
use callstream_domain::calling_window::{CampaignWindow, Days};
use callstream_domain::slot_grid::GridConfig;
use callstream_domain::Availability;
use callstream_e2e::fixtures;
use callstream_schemas::CallingWindow as WireWindow;
use chrono::{NaiveTime, TimeZone};
use chrono_tz::America::Chicago;
use proptest::prelude::*;
use uuid::Uuid;

fn chicago(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Chicago
        .with_ymd_and_hms(y, mo, d, h, mi, 0)
        .unwrap()
        .with_timezone(&Utc)
}

fn weekday_window() -> CallingWindow {
    CampaignWindow::daily(
        Days::WEEKDAYS,
        NaiveTime::from_hms_opt(9, 0, 0).unwrap(),
        NaiveTime::from_hms_opt(17, 0, 0).unwrap(),
    )
    .unwrap()
    .in_zones(vec![Chicago])
    .unwrap()
}

fn grid(capacity: u32) -> SlotGrid {
    SlotGrid::new(GridConfig {
        slot_seconds: 75,
        capacity_per_slot: capacity,
    })
    .unwrap()
}

fn timing(earliest: DateTime<Utc>, now: DateTime<Utc>) -> Timing {
    Timing {
        earliest,
        now,
        horizon: Duration::from_secs(7 * 24 * 3600),
        move_buffer: Duration::from_secs(15 * 60),
    }
}

fn job(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// Name, earliest, clock, expected reason, expected first slot time.
type Case = (
    &'static str,
    DateTime<Utc>,
    DateTime<Utc>,
    &'static str,
    Option<DateTime<Utc>>,
);

#[test]
fn placements_for_every_branch() {
    // Friday 2024-06-07 and the Saturday after; the window is weekdays 09-17 Chicago.
    let fri_10 = chicago(2024, 6, 7, 10, 0);
    let sat_11 = chicago(2024, 6, 8, 11, 0);
    let mon_open_plus_buffer = chicago(2024, 6, 10, 9, 15);
    let cases: Vec<Case> = vec![
        ("in window", fri_10, fri_10, reason::ALLOCATED, Some(fri_10)),
        (
            "Saturday retry moves to Monday's opening plus the buffer",
            sat_11,
            fri_10,
            reason::MOVED_OUT_OF_WINDOW,
            Some(mon_open_plus_buffer),
        ),
        (
            "an earliest time in the past starts from the clock",
            chicago(2024, 6, 6, 10, 0),
            fri_10,
            reason::ALLOCATED,
            Some(fri_10),
        ),
        (
            "federal hours bound the window: 06:00 moves to the opening",
            chicago(2024, 6, 7, 6, 0),
            chicago(2024, 6, 7, 5, 0),
            reason::MOVED_OUT_OF_WINDOW,
            Some(chicago(2024, 6, 7, 9, 15)),
        ),
    ];
    for (name, earliest, now, expected_reason, expected_at) in cases {
        let mut g = grid(1);
        match place_job(
            &mut g,
            job(1),
            &weekday_window(),
            None,
            timing(earliest, now),
        ) {
            Outcome::Allocated {
                slot,
                reason,
                detail,
            } => {
                assert_eq!(reason, expected_reason, "{name}: {detail}");
                // The slot is the first one starting at or after the expected time.
                let first = g
                    .slot_start(g.slot_index_at_or_after(expected_at.unwrap()))
                    .unwrap();
                assert_eq!(slot.start, first, "{name}");
                assert!(slot.start >= earliest.max(now), "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn a_full_slot_sends_the_next_job_to_the_next_free_one_and_the_horizon_refuses() {
    let mut g = grid(1);
    // The second-to-last slot that starts before Friday's 17:00 close.
    let close = chicago(2024, 6, 7, 17, 0);
    let start = g.slot_start(g.slot_index_at_or_after(close) - 2).unwrap();
    let t = Timing {
        horizon: Duration::from_secs(3600),
        ..timing(start, start)
    };
    let first = place_job(&mut g, job(1), &weekday_window(), None, t);
    let second = place_job(&mut g, job(2), &weekday_window(), None, t);
    let (Outcome::Allocated { slot: a, .. }, Outcome::Allocated { slot: b, .. }) = (first, second)
    else {
        panic!("both fit before 17:00");
    };
    assert_eq!(b.index, a.index + 1);
    // The next slot starts at or after 17:00; the next opening is beyond the 1 h horizon.
    let third = place_job(&mut g, job(3), &weekday_window(), None, t);
    assert!(
        matches!(
            third,
            Outcome::Refused { ref reason, .. } if reason == reason::NO_FREE_SLOT
        ),
        "{third:?}"
    );
    assert_eq!(g.len(), 2);
    assert_eq!(
        place_job(&mut g, job(1), &weekday_window(), None, t),
        Outcome::AlreadyBooked(a)
    );
}

#[test]
fn a_window_that_federal_hours_close_entirely_is_refused() {
    let night = CampaignWindow::daily(
        Days::EVERY_DAY,
        NaiveTime::from_hms_opt(21, 30, 0).unwrap(),
        NaiveTime::from_hms_opt(23, 0, 0).unwrap(),
    )
    .unwrap()
    .in_zones(vec![Chicago])
    .unwrap();
    let at = chicago(2024, 6, 7, 10, 0);
    let outcome = place_job(&mut grid(1), job(1), &night, None, timing(at, at));
    assert!(
        matches!(
            outcome,
            Outcome::Refused { ref reason, .. } if reason == reason::OUTSIDE_ALL_WINDOWS
        ),
        "{outcome:?}"
    );
}

fn request(zone: Option<&str>, windows: Vec<WireWindow>) -> ScheduleRequest {
    ScheduleRequest {
        event_id: Uuid::from_u128(9),
        time_zone: zone.map(Into::into),
        time_zone_source: zone.map(|_| ZoneSource::AreaCode),
        windows,
        ..fixtures::schedule_plan("t", "c", "k", job(1), chicago(2024, 6, 7, 8, 0))
    }
}

#[test]
fn the_lead_window_comes_from_the_request_or_the_campaign_and_the_zone_is_recorded() {
    let campaign = CampaignConfig::builtin();
    let tenant_zone = chrono_tz::America::New_York;
    let statutory = TenantRules::none();
    let own = lead_window(
        &request(Some("America/Chicago"), vec![]),
        &campaign,
        tenant_zone,
        &statutory,
    )
    .unwrap();
    assert_eq!(
        (own.zone_name.as_str(), own.source),
        ("America/Chicago", ZoneSource::AreaCode)
    );
    assert_eq!(own.window.campaign(), &campaign.window);

    let spanning = lead_window(
        &request(Some("America/Chicago,America/Denver"), vec![]),
        &campaign,
        tenant_zone,
        &statutory,
    )
    .unwrap();
    assert_eq!(spanning.window.zones().len(), 2);

    let unknown = lead_window(
        &request(Some("Mars/Base"), vec![]),
        &campaign,
        tenant_zone,
        &statutory,
    )
    .unwrap();
    assert_eq!(
        (unknown.zone_name.as_str(), unknown.source),
        ("America/New_York", ZoneSource::TenantDefault)
    );
    assert!(unknown.note.unwrap().contains("Mars/Base"));

    let none = lead_window(&request(None, vec![]), &campaign, tenant_zone, &statutory).unwrap();
    assert_eq!(none.source, ZoneSource::TenantDefault);

    let sunday = WireWindow {
        days_of_week: vec![7],
        start_minute: 600,
        end_minute: 720,
    };
    let from_request = lead_window(
        &request(Some("America/Chicago"), vec![sunday]),
        &campaign,
        tenant_zone,
        &statutory,
    )
    .unwrap();
    assert!(from_request.window.is_allowed(chicago(2024, 6, 9, 11, 0)));
    assert!(!from_request.window.is_allowed(chicago(2024, 6, 10, 11, 0)));

    let broken = WireWindow {
        days_of_week: vec![9],
        start_minute: 600,
        end_minute: 720,
    };
    let refused = lead_window(
        &request(None, vec![broken]),
        &campaign,
        tenant_zone,
        &statutory,
    )
    .unwrap_err();
    assert_eq!(refused.reason, reason::INVALID_REQUEST);
}

proptest! {
    /// Whatever the requests, every booked slot starts at or after its
    /// earliest time and the clock, inside the window, and no slot holds
    /// more than its capacity.
    #[test]
    fn bookings_respect_time_window_and_capacity(
        requests in proptest::collection::vec((0i64..14 * 24 * 60, 0i64..60), 1..60),
        capacity in 1u32..3,
    ) {
        let base = chicago(2024, 3, 4, 0, 0); // a week with the spring DST change
        let window = weekday_window();
        let mut g = grid(capacity);
        let mut now = base;
        for (i, (earliest_min, advance_min)) in requests.into_iter().enumerate() {
            now += TimeDelta::minutes(advance_min);
            let earliest = base + TimeDelta::minutes(earliest_min);
            if let Outcome::Allocated { slot, .. } = place_job(&mut g, job(i as u128), &window, None, timing(earliest, now)) {
                prop_assert!(slot.start >= earliest && slot.start >= now);
                prop_assert!(window.is_allowed(slot.start));
            }
        }
        for (_, jobs) in g.slots() {
            prop_assert!(jobs.len() <= capacity as usize);
        }
    }
}

proptest! {
    /// The hand-written stamp reads exactly as chrono's format would.
    #[test]
    fn stamp_matches_chrono(seconds in -70_000_000_000i64..300_000_000_000, millis in 0u32..1000) {
        let at = DateTime::from_timestamp(seconds, millis * 1_000_000).unwrap();
        prop_assert_eq!(stamp(at), at.format("%Y-%m-%dT%H:%M:%SZ").to_string());
    }
}

/// Every day 08:00-21:00 (federal hours bound it anyway), in New York.
fn every_day_new_york() -> CallingWindow {
    CampaignWindow::daily(
        Days::EVERY_DAY,
        NaiveTime::from_hms_opt(8, 0, 0).unwrap(),
        NaiveTime::from_hms_opt(21, 0, 0).unwrap(),
    )
    .unwrap()
    .in_zones(vec![chrono_tz::America::New_York])
    .unwrap()
}

fn florida(placed: &[DateTime<Utc>]) -> LeadRules {
    LeadRules::from_wire(
        &["FL".into()],
        &[chrono_tz::America::New_York],
        placed,
        &TenantRules::none(),
    )
    .unwrap()
}

#[test]
fn a_state_rule_moves_a_call_and_is_its_reason() {
    let window = every_day_new_york();
    let ny = |d, h, m| {
        chrono_tz::America::New_York
            .with_ymd_and_hms(2024, 6, d, h, m, 0)
            .unwrap()
            .with_timezone(&Utc)
    };
    // 20:30 on a Friday: the window and federal hours allow it, Florida's 20:00 does not.
    let late = ny(7, 20, 30);
    let Outcome::Allocated {
        slot,
        reason,
        detail,
    } = place_job(
        &mut grid(1),
        job(1),
        &window,
        Some(&florida(&[])),
        timing(late, late),
    )
    else {
        panic!("allocated");
    };
    assert_eq!(reason, "state_hours:FL");
    assert_eq!(slot.start, ny(8, 8, 0), "Saturday 08:00");
    assert!(detail.contains("state_hours:FL"), "{detail}");
    // Without the state's rules it stays where it was planned.
    let Outcome::Allocated { slot, reason, .. } =
        place_job(&mut grid(1), job(1), &window, None, timing(late, late))
    else {
        panic!("allocated");
    };
    assert_eq!((slot.start, reason.as_ref()), (late, reason::ALLOCATED));
}

#[test]
fn a_fourth_call_in_24_hours_waits_for_the_cap() {
    let window = every_day_new_york();
    let ny = |h, m| {
        chrono_tz::America::New_York
            .with_ymd_and_hms(2024, 6, 4, h, m, 0)
            .unwrap()
            .with_timezone(&Utc)
    };
    let placed = [ny(9, 0), ny(11, 0), ny(13, 0)];
    let fourth = ny(15, 0);
    let Outcome::Allocated { slot, reason, .. } = place_job(
        &mut grid(1),
        job(1),
        &window,
        Some(&florida(&placed)),
        timing(fourth, fourth),
    ) else {
        panic!("allocated");
    };
    assert_eq!(reason, "frequency_cap:FL:3_per_24h");
    assert_eq!(slot.start, placed[0] + chrono::TimeDelta::days(1));
}

proptest! {
    /// For random Florida leads (calls already placed, planned times, a busy grid), no
    /// booked slot breaks a Florida rule, none is earlier than planned, and no fourth call
    /// falls within 24 hours of three others.
    #[test]
    fn no_booked_slot_breaks_a_florida_rule(
        placed_offsets in proptest::collection::vec(0i64..72 * 60, 0..6),
        planned_offset in 0i64..14 * 24 * 60,
        jobs_before in 0u128..4,
    ) {
        let base = chrono_tz::America::New_York
            .with_ymd_and_hms(2024, 11, 1, 0, 0, 0)
            .unwrap()
            .with_timezone(&Utc);
        let mut placed: Vec<DateTime<Utc>> = placed_offsets
            .iter()
            .map(|m| base + chrono::TimeDelta::minutes(*m))
            .collect();
        placed.sort();
        let planned = base + chrono::TimeDelta::minutes(planned_offset);
        let rules = florida(&placed);
        let window = every_day_new_york();
        let mut g = grid(1);
        for n in 0..jobs_before {
            let _ = place_job(&mut g, job(100 + n), &window, Some(&rules), timing(planned, planned));
        }
        if let Outcome::Allocated { slot, .. } =
            place_job(&mut g, job(1), &window, Some(&rules), timing(planned, planned))
        {
            prop_assert!(slot.start >= planned);
            prop_assert!(rules.is_allowed(slot.start), "{} breaks a rule", slot.start);
            prop_assert!(window.is_allowed(slot.start));
            let in_day = placed
                .iter()
                .filter(|p| **p > slot.start - chrono::TimeDelta::days(1) && **p <= slot.start)
                .count();
            prop_assert!(in_day < 3, "a fourth call within 24 hours at {}", slot.start);
        }
    }
}
